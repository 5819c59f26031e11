// Writes the `StageId` and `StageDisplay` unions of web/lib/attention-lab.d.ts from the one stage
// table, the kStages rows of core/src/stage_table.cpp: each stage id, in trace order, with when a
// forward emits it (the comment of its `When` value) and its display kind as a TSDoc comment, and each
// display kind of kDisplays with its meaning. Only the text between the markers
//   // BEGIN generated from core/src/stage_table.cpp by scripts/stage-ids.mjs
//   // END of the stage ids (scripts/stage-ids.mjs)
// is rewritten. The table is read strictly: one row a line, as the compiler checks it (a row per
// StageId, in its order).
// Usage: node scripts/stage-ids.mjs            rewrites the .d.ts (run by scripts/build.sh)
//        node scripts/stage-ids.mjs --check    exits 1 when the .d.ts is out of date (npm run lint)
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { generate, replaceBlock, runScript } from "./error-codes.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const TABLE = "core/src/stage_table.cpp";
export const DTS = "web/lib/attention-lab.d.ts";
export const BEGIN = `// BEGIN generated from ${TABLE} by scripts/stage-ids.mjs`;
export const END = "// END of the stage ids (scripts/stage-ids.mjs)";

/** The lines between the line `open` and the next line `close`, with their line numbers. */
function block(text, open, close) {
  const lines = text.split("\n");
  const start = lines.indexOf(open);
  if (start < 0 || lines.indexOf(open, start + 1) >= 0) throw new Error(`${TABLE}: expected one line '${open}'`);
  const end = lines.indexOf(close, start);
  if (end < 0) throw new Error(`${TABLE}: '${open}' has no closing '${close}'`);
  return lines.slice(start + 1, end).map((line, i) => ({ line, number: start + 2 + i }));
}

/** Text that goes into a TSDoc comment as it is. */
function docText(text, where) {
  if (text.trim() === "" || /\*\/|@/.test(text)) throw new Error(`${TABLE}:${where}: empty, or has */ or @ (TSDoc would misread it)`);
  return text;
}

/**
 * The table of the source: {stages: [{id, when, display}], displays: [{name, meaning}]}, in order
 * (`when`: the comment of the row's When value). Throws on any line that is not an entry, an id
 * twice, a When value without a comment or a display kind kDisplays does not have.
 */
export function parseTable(text) {
  const when = new Map();
  for (const { line, number } of block(text, "enum class When {", "};")) {
    const m = line.match(/^ {2}([A-Z][A-Za-z]*), +\/\/ (.+)$/);
    if (!m) throw new Error(`${TABLE}:${number}: not a 'Value,  // when' line of enum When: ${line}`);
    when.set(m[1], docText(m[2], number));
  }
  const displays = [];
  for (const { line, number } of block(text, "constexpr DisplayKind kDisplays[] = {", "};")) {
    const m = line.match(/^ {4}\{"([a-z]+)", "((?:[^"\\]|\\["\\])*)"\},$/);
    if (!m) throw new Error(`${TABLE}:${number}: not a {"name", "meaning"} entry: ${line}`);
    displays.push({ name: m[1], meaning: docText(m[2].replace(/\\(["\\])/g, "$1"), number) });
  }
  const stages = [];
  for (const { line, number } of block(text, "constexpr StageRow kStages[] = {", "};")) {
    const m = line.match(/^ {4}\{StageId::[A-Za-z]+, "([a-z][a-z0-9_]*)", When::([A-Za-z]+), .*, "([a-z]+)", texts\(k[A-Za-z]+Texts\)\},$/);
    if (!m) throw new Error(`${TABLE}:${number}: not a kStages row on one line: ${line}`);
    const [, id, rule, display] = m;
    if (stages.some((s) => s.id === id)) throw new Error(`${TABLE}:${number}: stage '${id}' twice`);
    if (!when.has(rule)) throw new Error(`${TABLE}:${number}: '${id}' is emitted When::${rule}, which enum When does not have`);
    if (!displays.some((d) => d.name === display)) throw new Error(`${TABLE}:${number}: '${id}' has display '${display}', which kDisplays does not have`);
    stages.push({ id, when: when.get(rule), display });
  }
  if (stages.length === 0) throw new Error(`${TABLE}: kStages is empty`);
  return { stages, displays };
}

/** The generated block of the .d.ts, markers included. */
export function renderUnions({ stages, displays }) {
  const out = [
    BEGIN,
    "/**",
    " * The id of every stage a trace can hold, in trace order: a forward emits those its class and run have",
    ` * (each member says when). The list lives in ${TABLE} (kStages): add a stage there, then run`,
    " * `node scripts/stage-ids.mjs`, which writes this union.",
    " */",
    "export type StageId =",
  ];
  stages.forEach((s, i) => out.push(`  /** Emitted by ${s.when}; shown as "${s.display}". */`, `  | "${s.id}"${i === stages.length - 1 ? ";" : ""}`));
  out.push("", "/** How the page shows a stage ({@link Stage.display}), from the same table. */", "export type StageDisplay =");
  displays.forEach((d, i) => out.push(`  /** ${d.meaning} */`, `  | "${d.name}"${i === displays.length - 1 ? ";" : ""}`));
  out.push(END);
  return out.join("\n");
}

/** The .d.ts text with its generated StageId block replaced; throws unless both markers are there once. */
export function rewrite(dts, block) {
  return replaceBlock(dts, BEGIN, END, block, DTS);
}

/** The table as the source has it now. */
export function readTable() {
  return parseTable(readFileSync(path.join(ROOT, TABLE), "utf8"));
}

runScript("stage-ids", import.meta.url, (args) => {
  const table = readTable();
  return generate("stage-ids", args, { dts: DTS, source: TABLE, regenerate: (text) => rewrite(text, renderUnions(table)), count: table.stages.length, noun: "stages" });
});
