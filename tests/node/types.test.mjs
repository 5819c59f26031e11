// The hand-written .d.ts is checked by compiling a TypeScript program that uses the whole API, and
// programs that misuse it (tests/node/types/misuse/*.ts) each fail with exactly the errors they expect:
// every `// expect: <pattern>` line names the error of the line below it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { fencedBlocks } from "./markdown.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const tsc = path.join(root, "node_modules", ".bin", "tsc");
const misuseDir = path.join(root, "tests/node/types/misuse");

/** tsc over one project: {ok, out} (out: its error lines). */
function compile(project) {
  try {
    return { ok: true, out: execFileSync(tsc, ["-p", project], { encoding: "utf8" }) };
  } catch (e) {
    return { ok: false, out: `${e.stdout}${e.stderr}` };
  }
}

/** tsc over one file with the types' compiler options (a temporary tsconfig naming just that file). */
function compileFile(file) {
  const dir = mkdtempSync(path.join(tmpdir(), "attention-lab-types-"));
  try {
    const project = path.join(dir, "tsconfig.json");
    writeFileSync(project, JSON.stringify({ extends: path.join(root, "tests/node/types/tsconfig.json"), files: [file] }));
    return compile(project);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("web/lib/attention-lab.d.ts type-checks a program that uses every API call", () => {
  const { ok, out } = compile(path.join(root, "tests/node/types"));
  assert.ok(ok, `tsc reported errors:\n${out}`);
  assert.equal(out.trim(), "");
});

test("the docs' whole js examples (README.md, docs/api.md, docs/getting-started/js-developer.md) type-check under tsc --strict as users copy them", () => {
  // Inside the package's tree `import "attention-lab"` resolves to it by name, so each example is a file there.
  mkdirSync(path.join(root, "build"), { recursive: true });
  const dir = mkdtempSync(path.join(root, "build", "types-docs-"));
  try {
    const files = [];
    for (const page of ["README.md", "docs/api.md", "docs/getting-started/js-developer.md"]) {
      // a whole program: it imports the package; fragments (no import) and blocks marked "not run" are left out
      for (const b of fencedBlocks(readFileSync(path.join(root, page), "utf8")).filter((x) => x.lang === "js" && !x.skip && /^import .* from "attention-lab";$/m.test(x.code))) {
        const file = path.join(dir, `${page.replace(/\W+/g, "-")}-${b.line}.ts`);
        writeFileSync(file, `${b.code}\nexport {};\n`);
        files.push(file);
      }
    }
    assert.ok(files.length >= 4, `${files.length} examples`);
    assert.ok(files.some((f) => /README-md/.test(f)), "the README's example is among them");
    const project = path.join(dir, "tsconfig.json");
    writeFileSync(project, JSON.stringify({ extends: path.join(root, "tests/node/types/tsconfig.json"), files }));
    const { ok, out } = compile(project);
    assert.ok(ok, `tsc --strict reported errors in the docs' examples:\n${out}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const misuse = readdirSync(misuseDir).filter((f) => f.endsWith(".ts")).sort();

test("there are misuse programs for the config types: an unknown slot, a missing slot, a wrong value type", () => {
  for (const f of ["config-unknown-slot.ts", "config-missing-slot.ts", "config-value-type.ts", "misuse.ts"]) assert.ok(misuse.includes(f), f);
});

for (const name of misuse) {
  test(`tests/node/types/misuse/${name} fails to type-check with the errors it expects, on the lines it marks`, () => {
    const file = path.join(misuseDir, name);
    const lines = readFileSync(file, "utf8").split("\n");
    // [{line (1-based, of the statement under the comment), pattern}]
    const expected = lines.flatMap((text, i) => {
      const m = text.match(/^\s*\/\/ expect: (.+)$/);
      return m ? [{ line: i + 2, pattern: new RegExp(m[1]) }] : [];
    });
    assert.ok(expected.length > 0, `${name} has no // expect: line`);
    const { ok, out } = compileFile(file);
    assert.equal(ok, false, `${name} compiled without errors`);
    // tsc: "<file>(<line>,<col>): error TS<n>: <message>" then indented elaboration lines
    const errors = [];
    for (const text of out.split("\n")) {
      const m = text.match(/\((\d+),\d+\): error TS\d+: (.*)$/);
      if (m) errors.push({ line: Number(m[1]), text: m[2] });
      else if (errors.length > 0 && /^\s+\S/.test(text)) errors[errors.length - 1].text += `\n${text.trim()}`;
    }
    assert.deepEqual(errors.map((e) => e.line), expected.map((e) => e.line), `errors on the marked lines only:\n${out}`);
    errors.forEach((e, i) => assert.match(e.text, expected[i].pattern, `line ${e.line}`));
  });
}
