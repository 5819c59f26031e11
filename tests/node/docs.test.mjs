// npm run docs (scripts/docs.sh): TypeDoc over web/lib/attention-lab.d.ts fails on a public declaration
// without a doc comment (a copy of the .d.ts with doc comments taken out does not build, one warning
// naming each; the .d.ts as it is does), every entry point documents each parameter and what it returns,
// and the ErrorCode page carries each code's meaning from core/include/attention_lab/error_codes.hpp.
// TypeDoc runs from tools/docs (scripts/docs.sh installs it there), with the flags scripts/docs.sh uses.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { readTable } from "../../scripts/error-codes.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const typedoc = path.join(root, "tools/docs/node_modules/.bin/typedoc");
const DTS = readFileSync(path.join(root, "web/lib/attention-lab.d.ts"), "utf8");
const docsSh = readFileSync(path.join(root, "scripts/docs.sh"), "utf8");

// the kinds scripts/docs.sh requires to be documented (its `for kind in ...; do` loop)
const kinds = docsSh.match(/^for kind in ([A-Za-z ]+); do$/m)?.[1].split(" ") ?? [];
const flags = ["--logLevel", "Warn", "--treatWarningsAsErrors", "--disableSources", "--readme", "none", "--name", "attention-lab", "--validation.notDocumented", ...kinds.flatMap((k) => ["--requiredToBeDocumented", k])];
const installed = existsSync(typedoc);
const skip = installed ? false : "TypeDoc is not installed in tools/docs (bash scripts/docs.sh installs it)";

/** TypeDoc over a copy of the .d.ts with `text` as its content: {ok, out}; `json` also writes TypeDoc's JSON there. */
function typedocOn(text, { json } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), "attention-lab-docs-"));
  try {
    writeFileSync(path.join(dir, "attention-lab.d.ts"), text);
    const options = JSON.parse(readFileSync(path.join(root, "tools/docs/tsconfig.json"), "utf8")).compilerOptions;
    writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: options, files: ["attention-lab.d.ts"] }));
    const out = json ? ["--json", path.join(dir, "docs.json")] : ["--out", path.join(dir, "html")];
    try {
      const stdout = execFileSync(typedoc, [...flags, "--tsconfig", path.join(dir, "tsconfig.json"), "--entryPoints", path.join(dir, "attention-lab.d.ts"), ...out], { encoding: "utf8", cwd: dir });
      return { ok: true, out: stdout, json: json ? JSON.parse(readFileSync(path.join(dir, "docs.json"), "utf8")) : null };
    } catch (e) {
      return { ok: false, out: `${e.stdout}${e.stderr}`.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g"), "") };
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("scripts/docs.sh turns undocumented public API into errors: notDocumented, warnings as errors, every kind of declaration", () => {
  assert.match(docsSh, /--treatWarningsAsErrors/);
  assert.match(docsSh, /--validation\.notDocumented "\$\{documented\[@\]\}"/);
  for (const k of ["Function", "Method", "Class", "Interface", "Property", "TypeAlias", "Accessor", "Variable", "Enum", "EnumMember"]) assert.ok(kinds.includes(k), k);
});

// scripts/docs.sh (a step of npm test, before this suite) writes TypeDoc's JSON of the .d.ts beside the
// HTML; it is read when it is newer than the .d.ts, rather than built a second time.
const DOCS_JSON = path.join(root, "build/docs/js.json");
let built = null;
/** TypeDoc's JSON of the .d.ts as it is: npm run docs's, or built here with the flags above. */
function docsJson() {
  if (!built && existsSync(DOCS_JSON) && statSync(DOCS_JSON).mtimeMs >= statSync(path.join(root, "web/lib/attention-lab.d.ts")).mtimeMs) {
    // with the getting-started pages as project documents, TypeDoc puts the declarations in a module
    const json = JSON.parse(readFileSync(DOCS_JSON, "utf8"));
    built = { ok: true, out: DOCS_JSON, json: json.children?.length === 1 && json.children[0].kind === 2 ? json.children[0] : json };
  }
  built ??= typedocOn(DTS, { json: true });
  assert.ok(built.ok, built.out);
  return built.json;
}

test("the .d.ts as it is builds with those flags", { skip }, () => {
  assert.ok(docsJson().children.length > 50);
});

// Each removal takes out exactly one doc comment: of a function, a method, a property, an interface, a type alias.
// [what, the comment, the warning TypeDoc gives without it]
const removals = [
  ["loadAttentionLab", /\/\*\*\n \* Loads the WebAssembly core[\s\S]*?\*\/\n(?=export function loadAttentionLab)/, /loadAttentionLab \(CallSignature\)[^\n]*does not have any documentation/],
  ["lab.manualSeed", / {2}\/\*\*\n {3}\* A random stream equal to PyTorch's[\s\S]*?\*\/\n(?= {2}manualSeed\()/, /AttentionLab\.manualSeed \(CallSignature\)[^\n]*does not have any documentation/],
  ["SlotSpec.name", / {2}\/\*\* The slot's name, as the Python signature spells it[^\n]*\*\/\n(?= {2}name: SlotName;)/, /SlotSpec\.name \(Property\)[^\n]*does not have any documentation/],
  ["Diagnostic", /\/\*\*\n \* One problem with a configuration[\s\S]*?\*\/\n(?=export interface Diagnostic )/, /Diagnostic \(Interface\)[^\n]*does not have any documentation/],
  ["ConfigFor", /\/\*\*\n \* The config the API takes with the class name[\s\S]*?\*\/\n(?=export type ConfigFor)/, /ConfigFor \(TypeAlias\)[^\n]*does not have any documentation/],
];
test("a copy without the doc comments of a function, a method, a property, an interface and a type alias fails, naming each", { skip }, () => {
  let text = DTS;
  for (const [what, comment] of removals) {
    assert.equal(DTS.match(new RegExp(comment.source, "g"))?.length, 1, `one doc comment of ${what} in the .d.ts`);
    text = text.replace(comment, "");
  }
  const r = typedocOn(text);
  assert.equal(r.ok, false, "TypeDoc built docs without the comments");
  // each removal alone is one warning, so one missing comment (lab.manualSeed's, say) fails the build by
  // itself under --treatWarningsAsErrors: a TypeDoc run of its own for that would only repeat this one
  for (const [what, , warning] of removals) assert.equal(r.out.match(new RegExp(warning.source, "g"))?.length, 1, `one warning naming ${what}:\n${r.out}`);
  assert.match(r.out, new RegExp(`Found 0 errors and ${removals.length} warnings`));
});

/** Every call signature of the library's entry points: the function, and the methods of the objects it hands out. */
function entryPoints() {
  const docs = docsJson();
  const byName = new Map(docs.children.map((c) => [c.name, c]));
  const signatures = byName.get("loadAttentionLab").signatures.map((s) => ({ where: "loadAttentionLab", s }));
  for (const owner of ["AttentionLab", "AttentionModule", "Generator", "KvCache", "CheckpointFile", "GPT2Model"]) {
    for (const member of byName.get(owner).children) for (const s of member.signatures ?? []) signatures.push({ where: `${owner}.${member.name}`, s });
  }
  return signatures;
}
const text = (parts) => (parts ?? []).map((p) => p.text).join("").trim();

test("every entry point documents each parameter (@param) and what it returns (@returns), and names what it throws", { skip }, () => {
  const signatures = entryPoints();
  assert.ok(signatures.length >= 45, `${signatures.length} signatures`);
  const problems = [];
  for (const { where, s } of signatures) {
    if (text(s.comment?.summary) === "") problems.push(`${where}: no summary`);
    for (const p of s.parameters ?? []) if (text(p.comment?.summary) === "") problems.push(`${where}: no @param ${p.name}`);
    const returnsVoid = s.type?.type === "intrinsic" && s.type.name === "void";
    if (!returnsVoid && !s.comment?.blockTags?.some((b) => b.tag === "@returns")) problems.push(`${where}: no @returns`);
  }
  assert.deepEqual(problems, []);
  // the calls the issue named have examples; the throwing ones say what they throw
  const has = (name, tag) => signatures.some(({ where, s }) => where === name && s.comment?.blockTags?.some((b) => b.tag === tag));
  for (const name of ["loadAttentionLab", "AttentionLab.slots", "AttentionLab.parseCall", "AttentionLab.describe", "AttentionLab.manualSeed", "AttentionLab.create", "AttentionLab.run"]) assert.ok(has(name, "@example"), `${name} @example`);
  for (const name of ["AttentionLab.slots", "AttentionLab.manualSeed", "AttentionLab.create", "AttentionLab.run", "AttentionModule.forward", "GPT2Model.generate"]) assert.ok(has(name, "@throws"), `${name} @throws`);
});

test("the ErrorCode page gives every code its meaning from error_codes.hpp", { skip }, () => {
  const alias = docsJson().children.find((c) => c.name === "ErrorCode");
  const codes = alias.type.types.map((t) => t.value);
  const table = readTable().codes;
  assert.deepEqual(codes, table.map((c) => c.code));
  assert.equal(alias.type.elementSummaries?.length, codes.length, "one summary per member");
  alias.type.elementSummaries.forEach((summary, i) => assert.equal(text(summary), table[i].meaning, codes[i]));
});
