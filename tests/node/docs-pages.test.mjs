// The getting-started pages (docs/getting-started/*.md) say only what is true of the code:
//  - every ```js block of the JS developer's page runs in Node against the built library, imported by
//    its package name as a user imports it, and prints exactly its `// prints:` comments, in order (a
//    block that cannot run here says why in a `<!-- not run: ... -->` line just above it);
//  - the C++ developer's page shows the consumer project that tests/node/cmake-package.test.mjs
//    builds and runs, verbatim;
//  - the pages' relative links point at files that exist;
//  - scripts/widget-docs.mjs's checks catch an attribute, event or CSS property the element has and
//    its JSDoc does not document, and one documented that the element does not have; the committed
//    custom-elements.json (the npm package's "customElements") is the element's manifest as it is.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fencedBlocks } from "./markdown.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const PAGES = path.join(ROOT, "docs", "getting-started");
const BUILT = existsSync(path.join(ROOT, "web", "lib", "attention_core.wasm"));
const ANALYZER = existsSync(path.join(ROOT, "tools/docs/node_modules/@custom-elements-manifest/analyzer"));

const read = (name) => readFileSync(path.join(PAGES, name), "utf8");

test("the getting-started pages: one for each kind of user, each with a title", () => {
  const pages = readdirSync(PAGES).filter((n) => n.endsWith(".md")).sort();
  assert.deepEqual(pages, ["course-author.md", "cpp-developer.md", "js-developer.md", "reader.md"]);
  for (const page of pages) assert.match(read(page), /^---\ntitle: .+\ngroup: Getting started\n---\n/, page);
});

test("every js block of the JS developer's page runs against the built library and prints its `// prints:` lines", { skip: !BUILT && "no WASM build (npm test builds it)" }, () => {
  const blocks = fencedBlocks(read("js-developer.md")).filter((b) => b.lang === "js");
  const run = blocks.filter((b) => !b.skip);
  assert.ok(run.length >= 4, `${run.length} runnable js blocks`);
  // Inside the package's own tree, `import "attention-lab"` resolves to it by name (package self-reference):
  // the examples run exactly as written.
  mkdirSync(path.join(ROOT, "build"), { recursive: true });
  const dir = mkdtempSync(path.join(ROOT, "build", "docs-examples-"));
  try {
    for (const block of run) {
      const file = path.join(dir, `line-${block.line}.mjs`);
      writeFileSync(file, block.code);
      const res = spawnSync(process.execPath, [file], { encoding: "utf8", timeout: 120_000 });
      assert.equal(res.status, 0, `js-developer.md line ${block.line} failed:\n${res.stderr}`);
      const expected = [...block.code.matchAll(/^\s*\/\/ prints: (.*)$/gm)].map((m) => m[1]);
      assert.ok(expected.length > 0, `js-developer.md line ${block.line}: a block with no // prints: line checks nothing`);
      assert.deepEqual(res.stdout.trimEnd().split("\n"), expected, `js-developer.md line ${block.line}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  for (const b of blocks.filter((x) => x.skip)) assert.ok(b.skip.length > 10, `line ${b.line}: say why it is not run`);
});

test("the C++ developer's page shows the consumer project the CMake package test builds, verbatim", () => {
  const blocks = fencedBlocks(read("cpp-developer.md"));
  const consumer = path.join(ROOT, "tests", "cmake-consumer");
  const cpp = blocks.filter((b) => b.lang === "cpp");
  const cmake = blocks.filter((b) => b.lang === "cmake");
  assert.ok(cpp.some((b) => b.code === readFileSync(path.join(consumer, "main.cpp"), "utf8").trimEnd()), "tests/cmake-consumer/main.cpp is shown as it is");
  assert.ok(cmake.some((b) => b.code === readFileSync(path.join(consumer, "CMakeLists.txt"), "utf8").trimEnd()), "tests/cmake-consumer/CMakeLists.txt is shown as it is");
  // the typed path: examples/cpp (which the consumer test builds and runs) as it is
  const example = path.join(ROOT, "examples", "cpp");
  assert.ok(cpp.some((b) => b.code === readFileSync(path.join(example, "mha.cpp"), "utf8").trimEnd()), "examples/cpp/mha.cpp is shown as it is");
  assert.ok(cmake.some((b) => b.code === readFileSync(path.join(example, "CMakeLists.txt"), "utf8").trimEnd()), "examples/cpp/CMakeLists.txt is shown as it is");
  // The Doxygen main page includes the same files (\include), so it cannot drift.
  const mainpage = readFileSync(path.join(ROOT, "docs", "cpp-mainpage.md"), "utf8");
  assert.match(mainpage, /\\include main\.cpp/);
  assert.match(readFileSync(path.join(ROOT, "tools", "docs", "Doxyfile"), "utf8"), /^EXAMPLE_PATH\s*=\s*tests\/cmake-consumer$/m);
});

test("the output the C++ developer's page shows is the library's for the same module and tokens, within 1e-5", { skip: !BUILT && "no WASM build (npm test builds it)" }, async () => {
  const shown = fencedBlocks(read("cpp-developer.md")).find((b) => b.lang === "text" && b.code.startsWith('{"shape"'));
  const out = JSON.parse(shown.code);
  assert.deepEqual(out.shape, [1, 6, 768]);
  const { loadAttentionLab } = await import("attention-lab");
  const lab = await loadAttentionLab();
  const mha = lab.create("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }, { generator: lab.manualSeed(123) });
  const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output.data;
  out.first.forEach((v, i) => assert.ok(Math.abs(v - y[i]) <= 1e-5, `output[${i}]: the page says ${v}, the library gives ${y[i]}`));
});

test("the docs pages' relative links point at files that exist", () => {
  const pages = [...readdirSync(PAGES).map((n) => path.join(PAGES, n)), path.join(ROOT, "docs", "index.md"), path.join(ROOT, "docs", "cpp-mainpage.md")];
  for (const page of pages) {
    for (const m of readFileSync(page, "utf8").matchAll(/\]\(((?!https?:|#)[^)\s]+)\)/g)) {
      const target = path.resolve(path.dirname(page), m[1].split("#")[0]);
      assert.ok(existsSync(target), `${path.relative(ROOT, page)}: link ${m[1]} -> ${path.relative(ROOT, target)} does not exist`);
    }
  }
});

test("the widget's docs: the manifest documents exactly what the element reads, sends and uses", { skip: !ANALYZER && "tools/docs not installed (npm run docs installs it)" }, async () => {
  const { ELEMENT, MANIFEST, PENDING, elementFacts, elementOf, manifestOf, mismatches, render } = await import("../../scripts/widget-docs.mjs");
  const source = readFileSync(path.join(ROOT, ELEMENT), "utf8");
  const manifest = await manifestOf(source);
  const decl = elementOf(manifest);
  // custom-elements.json is that manifest, and the package names it for editors and tools
  assert.deepEqual(JSON.parse(readFileSync(path.join(ROOT, MANIFEST), "utf8")), manifest);
  assert.equal(JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).customElements, MANIFEST);
  assert.deepEqual(manifest.modules.map((m) => m.path), [ELEMENT]);
  const facts = await elementFacts();
  assert.deepEqual(mismatches(decl, facts), []);
  // every slot name of every class is an attribute (the core's list), and so are the element's own
  const names = decl.attributes.map((a) => a.name);
  for (const a of ["class-name", "call", "d_in", "num_heads", "num_kv_groups", "sliding_window_size", "latent_dim", "locked", "hidden", "url-state", "autorun"]) assert.ok(names.includes(a), a);
  assert.deepEqual(decl.members.map((m) => `${m.kind} ${m.name}`), ["method run", "field setup"]);
  assert.deepEqual(decl.events.map((e) => e.name), ["run-complete", "run-error", "load-error", "setup-change"]);
  // docs/widget.md is the render of the manifest (npm run docs fails when it is stale)
  assert.equal(readFileSync(path.join(ROOT, "docs", "widget.md"), "utf8"), render(decl));

  // An attribute the element reads but the JSDoc does not document fails, naming it and the fix.
  const undocumented = elementOf(await manifestOf(source.replace(/ \* @attr \{string\} seed - .*\n/, "")));
  assert.deepEqual(mismatches(undocumented, facts), [`attribute "seed" is used by the element but not documented: add an @attr line to the JSDoc of ${ELEMENT}`]);
  // ... and so does a documented one the element does not have, an undocumented event or CSS property.
  const extra = elementOf(await manifestOf(source.replace(" * @attr {string} seed -", " * @attr {string} sead - typo.\n * @attr {string} seed -")));
  assert.match(mismatches(extra, facts).join("\n"), /attribute "sead" is documented \(@attr\) but the element has none/);
  const more = { ...facts, events: new Set([...facts.events, "run-start"]), cssProperties: new Set([...facts.cssProperties, "--al-radius"]) };
  assert.deepEqual(mismatches(decl, more).sort(), [
    `CSS custom property "--al-radius" is used by the element but not documented: add an @cssprop line to the JSDoc of ${ELEMENT}`,
    `event "run-start" is used by the element but not documented: add an @fires line to the JSDoc of ${ELEMENT}`,
  ]);
  // A part the element names but the JSDoc does not document, and a documented part nothing names.
  const parts = { ...facts, parts: new Set([...facts.parts, "stage-title"]) };
  assert.deepEqual(mismatches(decl, parts), [`CSS part "stage-title" is used by the element but not documented: add a @csspart line to the JSDoc of ${ELEMENT}`]);
  const typo = elementOf(await manifestOf(source.replace(" * @csspart heatmap -", " * @csspart heatmapp - typo.\n * @csspart heatmap -")));
  assert.deepEqual(mismatches(typo, facts), [`CSS part "heatmapp" is documented (@csspart) but web/app never names it: remove it from the JSDoc of ${ELEMENT}`]);
  assert.ok(["lab", "panel", "trace", "run-button", "stage-card", "output-card", "diagnostic", "error"].every((p) => facts.parts.has(p)), "the parts are read from web/app");
  // A slot the core adds (core/src/recipes.cpp) is an attribute of the element: the check asks for its doc.
  const withSlot = { ...facts, attributes: new Set([...facts.attributes, "rope_base"]) };
  assert.match(mismatches(decl, withSlot).join("\n"), /attribute "rope_base" is used by the element but not documented/);
  // Documented ahead of its branch: a pending name that the element now reads must leave PENDING
  // (layout and setup-change were pending until the widget's branch landed: the element reads them now).
  assert.deepEqual(PENDING, { attributes: [], events: [] });
  assert.ok(facts.attributes.has("layout") && facts.events.has("setup-change"));
  assert.deepEqual(mismatches(decl, facts, { attributes: ["layout"], events: ["setup-change"] }).sort(), [
    'attribute "layout" now exists: take it off PENDING in scripts/widget-docs.mjs',
    'event "setup-change" now exists: take it off PENDING in scripts/widget-docs.mjs',
  ]);
});

test("the core's slot names as the widget-docs check reads them are the library's", { skip: !BUILT && "no WASM build (npm test builds it)" }, async () => {
  const { coreSlotNames } = await import("../../scripts/widget-docs.mjs");
  const { loadAttentionLab } = await import("attention-lab");
  const lab = await loadAttentionLab();
  const fromLib = new Set(lab.classes.flatMap((c) => lab.slots(c).map((s) => s.name)));
  assert.deepEqual(new Set(coreSlotNames()), fromLib);
});

test("node scripts/widget-docs.mjs --check passes on the tree as committed", { skip: !ANALYZER && "tools/docs not installed (npm run docs installs it)" }, () => {
  const out = execFileSync(process.execPath, [path.join(ROOT, "scripts", "widget-docs.mjs"), "--check"], { cwd: ROOT, encoding: "utf8" });
  assert.match(out, /widget docs: \d+ attributes, 4 events, 7 CSS properties, \d+ parts/);
});
