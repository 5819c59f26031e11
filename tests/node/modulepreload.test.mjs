// scripts/modulepreload.mjs: the widget's static import graph as <link rel="modulepreload"> lines of
// web/index.html and web/embed.html (so a browser fetches the graph at once, not level by level):
// the import forms it reads, the graph it walks, the block it writes, and that both pages list it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { importGraph, staticImports, withPreloads } from "../../scripts/modulepreload.mjs";

const read = (file) => readFileSync(new URL(`../../${file}`, import.meta.url), "utf8");

test("staticImports reads import ... from, bare imports and re-exports; not dynamic imports, packages or comments' code", () => {
  const source = [
    'import { h, replace } from "./dom.js";',
    'import * as all from "../lib/attention-lab.js";',
    'import "./side-effect.js";',
    "import {\n  a,\n  b,\n} from './multi-line.js';",
    'export { x } from "./re-export.js";',
    'export * from "./star.js";',
    'const later = import("./compare-panel.js");',
    'import sirv from "sirv";',
    '  const s = "import { no } from \\"./in-a-string.js\\"";',
  ].join("\n");
  assert.deepEqual(staticImports(source), ["./dom.js", "../lib/attention-lab.js", "./side-effect.js", "./multi-line.js", "./re-export.js", "./star.js"]);
});

test("the graph is every module the element imports statically, each once, the dynamically imported panels not among them", () => {
  const graph = importGraph();
  assert.equal(new Set(graph).size, graph.length);
  for (const m of ["lib/attention-lab.js", "lib/attention_core.mjs", "app/lab-app.js", "app/run-panel.js", "app/tensor-view.js"]) assert.ok(graph.includes(m), m);
  // (export.js: the downloads, fetched at the first export button pressed)
  for (const m of ["app/attention-lab-element.js", "app/compare-panel.js", "app/checkpoint-panel.js", "app/run-worker.js", "app/export.js"]) assert.ok(!graph.includes(m), m);
  // each module's own imports are in the graph (closed under static import)
  for (const m of graph) {
    for (const spec of staticImports(read(`web/${m}`))) {
      const dep = new URL(spec, `file:///web/${m}`).pathname.replace(/^\/web\//, "");
      assert.ok(graph.includes(dep), `${m} imports ${dep}`);
    }
  }
});

test("withPreloads puts the block after the element's script tag, replaces it in place, and refuses a page without the tag", () => {
  const page = '<head>\n  <script type="module" src="app/attention-lab-element.js"></script>\n</head>\n';
  const once = withPreloads(page, ["app/a.js", "lib/b.mjs"], "t.html");
  assert.match(once, /attention-lab-element\.js"><\/script>\n {2}<!-- modulepreload[^\n]*\n {2}<link rel="modulepreload" href="app\/a\.js">\n {2}<link rel="modulepreload" href="lib\/b\.mjs">\n {2}<!-- \/modulepreload -->\n<\/head>/);
  assert.equal(withPreloads(once, ["app/a.js", "lib/b.mjs"], "t.html"), once);
  const fewer = withPreloads(once, ["app/c.js"], "t.html");
  assert.equal((fewer.match(/modulepreload" href/g) ?? []).length, 1);
  assert.match(fewer, /href="app\/c\.js"/);
  assert.throws(() => withPreloads("<head></head>", ["app/a.js"], "t.html"), /t\.html has no <script type="module" src="app\/attention-lab-element\.js"><\/script>/);
});

test("web/index.html and web/embed.html list exactly the graph, in its order", () => {
  const graph = importGraph();
  for (const page of ["index.html", "embed.html"]) {
    const listed = [...read(`web/${page}`).matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((m) => m[1]);
    assert.deepEqual(listed, graph, page);
  }
});
