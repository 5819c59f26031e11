// Writes the `ErrorCode` union of web/lib/attention-lab.d.ts from the one list of codes, the
// kErrorCodes table of core/include/attention_lab/error_codes.hpp: each code with its meaning as a
// TSDoc comment (TypeDoc shows it), under its group's title. Only the text between the markers
//   // BEGIN generated from core/include/attention_lab/error_codes.hpp by scripts/error-codes.mjs
//   // END generated
// is rewritten. The table is read strictly: one entry per line, {"code", "group", "meaning"}.
// Usage: node scripts/error-codes.mjs            rewrites the .d.ts (run by scripts/build.sh)
//        node scripts/error-codes.mjs --check    exits 1 when the .d.ts is out of date (npm run lint)
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const HEADER = "core/include/attention_lab/error_codes.hpp";
export const DTS = "web/lib/attention-lab.d.ts";
export const BEGIN = `// BEGIN generated from ${HEADER} by scripts/error-codes.mjs`;
export const END = "// END generated";

/** The lines between `inline constexpr <type> <name>[] = {` and the next `};`, with their line numbers. */
function arrayLines(text, type, name) {
  const lines = text.split("\n");
  const open = `inline constexpr ${type} ${name}[] = {`;
  const start = lines.indexOf(open);
  if (start < 0 || lines.indexOf(open, start + 1) >= 0) throw new Error(`${HEADER}: expected one line '${open}'`);
  const end = lines.indexOf("};", start);
  if (end < 0) throw new Error(`${HEADER}: ${name} has no closing '};'`);
  return lines.slice(start + 1, end).map((line, i) => ({ line, number: start + 2 + i }));
}

/** A C++ string literal's text: only \" and \\ are allowed as escapes. */
const LITERAL = String.raw`"((?:[^"\\]|\\["\\])*)"`;
const unescape = (s) => s.replace(/\\(["\\])/g, "$1");

/**
 * The table of the header: {groups: [{id, title}], codes: [{code, group, meaning}]}, in order.
 * Throws on any line that is not an entry, a duplicate code, an unknown group, a group whose codes
 * are not together or not in the order of kErrorCodeGroups, or a meaning TSDoc would misread.
 */
export function parseTable(text) {
  const groups = [];
  for (const { line, number } of arrayLines(text, "ErrorCodeGroup", "kErrorCodeGroups")) {
    const m = line.match(new RegExp(String.raw`^    \{"([a-z]+)", ${LITERAL}\},$`));
    if (!m) throw new Error(`${HEADER}:${number}: not a {"id", "title"} entry: ${line}`);
    if (groups.some((g) => g.id === m[1])) throw new Error(`${HEADER}:${number}: group '${m[1]}' twice`);
    groups.push({ id: m[1], title: unescape(m[2]) });
  }
  const codes = [];
  let groupIndex = -1;
  for (const { line, number } of arrayLines(text, "ErrorCodeInfo", "kErrorCodes")) {
    const m = line.match(new RegExp(String.raw`^    \{"([a-z][a-z0-9_]*)", "([a-z]+)", ${LITERAL}\},$`));
    if (!m) throw new Error(`${HEADER}:${number}: not a {"code", "group", "meaning"} entry: ${line}`);
    const [, code, group, raw] = m;
    const meaning = unescape(raw);
    if (codes.some((c) => c.code === code)) throw new Error(`${HEADER}:${number}: code '${code}' twice`);
    const g = groups.findIndex((x) => x.id === group);
    if (g < 0) throw new Error(`${HEADER}:${number}: '${code}' is in group '${group}', which kErrorCodeGroups does not have`);
    if (g < groupIndex) throw new Error(`${HEADER}:${number}: '${code}' of group '${group}' comes after group '${groups[groupIndex].id}' (keep kErrorCodeGroups' order)`);
    if (meaning.trim() === "" || /\*\/|@/.test(meaning)) throw new Error(`${HEADER}:${number}: the meaning of '${code}' is empty or has */ or @ (TSDoc would misread them)`);
    groupIndex = g;
    codes.push({ code, group, meaning });
  }
  if (codes.length === 0) throw new Error(`${HEADER}: kErrorCodes is empty`);
  return { groups, codes };
}

/** The generated block of the .d.ts, markers included. */
export function renderUnion({ groups, codes }) {
  const out = [
    BEGIN,
    "/**",
    " * Every code an AttentionError or a Diagnostic carries, with what it means. Codes are stable; tests",
    " * assert them (tests/node/facade-fuzz.test.mjs checks that every error thrown carries one of these).",
    ` * The list lives in ${HEADER} (kErrorCodes): add a code there, then run`,
    " * `node scripts/error-codes.mjs`, which writes this union.",
    " */",
    "export type ErrorCode =",
  ];
  let group = null;
  codes.forEach((c, i) => {
    if (c.group !== group) out.push(`  // ${groups.find((g) => g.id === c.group).title}`);
    group = c.group;
    out.push(`  /** ${c.meaning} */`, `  | "${c.code}"${i === codes.length - 1 ? ";" : ""}`);
  });
  out.push(END);
  return out.join("\n");
}

/**
 * `text` with the block between the marker lines `begin` and `end` (both included) replaced by
 * `block`; throws, naming `file`, unless both markers are there once, in that order. The one rule for
 * every generated block of the .d.ts (this script's ErrorCode union, config-types.mjs's types).
 */
export function replaceBlock(text, begin, end, block, file) {
  const b = text.indexOf(begin);
  const e = text.indexOf(end);
  if (b < 0 || e < b || text.indexOf(begin, b + 1) >= 0 || text.indexOf(end, e + 1) >= 0) {
    throw new Error(`${file}: expected the lines '${begin}' and '${end}' once each, in that order`);
  }
  return text.slice(0, b) + block + text.slice(e + end.length);
}

/** The .d.ts text with its generated ErrorCode block replaced; throws unless both markers are there once. */
export function rewrite(dts, block) {
  return replaceBlock(dts, BEGIN, END, block, DTS);
}

/** The table as the header has it now. */
export function readTable() {
  return parseTable(readFileSync(path.join(ROOT, HEADER), "utf8"));
}

/**
 * A generator's command line over ROOT-relative `dts`: `regenerate(text)` gives the file as `source`
 * writes it; with --check a stale file is an error (1), else it is rewritten. `count` `noun` is what the
 * block lists (110 codes). Shared by error-codes, stage-ids and config-types style generators.
 */
export function generate(name, args, { dts, source, regenerate, count, noun }) {
  const check = args.includes("--check");
  if (args.some((a) => a !== "--check")) throw new Error(`usage: node scripts/${name}.mjs [--check]`);
  const file = path.join(ROOT, dts);
  const before = readFileSync(file, "utf8");
  const after = regenerate(before);
  if (check) {
    if (after !== before) {
      console.error(`${name}: ${dts} is out of date with ${source}; run: node scripts/${name}.mjs`);
      return 1;
    }
    console.log(`${name}: ${dts} lists the ${count} ${noun} of ${source}`);
    return 0;
  }
  if (after !== before) writeFileSync(file, after);
  console.log(`${name}: ${dts} ${after !== before ? "rewritten" : "already up to date"} (${count} ${noun})`);
  return 0;
}

/** Runs `main(argv)` when `metaUrl`'s file is the script node was started with; an error exits 2. */
export function runScript(name, metaUrl, main) {
  if (!process.argv[1] || metaUrl !== pathToFileURL(path.resolve(process.argv[1])).href) return;
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    console.error(`${name}: ${err.message}`);
    process.exitCode = 2;
  }
}

runScript("error-codes", import.meta.url, (args) => {
  const table = readTable();
  return generate("error-codes", args, { dts: DTS, source: HEADER, regenerate: (text) => rewrite(text, renderUnion(table)), count: table.codes.length, noun: "codes" });
});
