// The web code keeps no facts about a class: the core is their only source. No JS module of the page, the widget
// or the library names an attention class in its code (comments aside) except the strings table:
// class-specific behaviour comes from what the core returns (lab.describe(name).class, diagnostics).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
const web = new URL("../../web/", import.meta.url);

/** The code of a JS file without its comments (block comments, then line comments outside strings). */
function codeOf(text) {
  const noBlocks = text.replace(/\/\*[\s\S]*?\*\//g, "");
  return noBlocks.split("\n").map((line) => line.replace(/(^|[^:"'`\\])\/\/.*$/, "$1")).join("\n");
}

test("no JS module under web/ names an attention class outside the strings table", () => {
  const files = [];
  for (const dir of ["app", "lib"]) {
    for (const name of readdirSync(new URL(`${dir}/`, web))) {
      // The strings table: strings.js, strings-panels.js and strings-gpt2.js (the later panels' parts of it).
      if (!name.endsWith(".js") || /^strings(-panels|-gpt2)?\.js$/.test(name)) continue; // attention_core.mjs is generated
      files.push(`${dir}/${name}`);
    }
  }
  assert.ok(files.length >= 15, files.join(" "));
  const offenders = [];
  for (const file of files) {
    const code = codeOf(readFileSync(new URL(file, web), "utf8"));
    for (const name of lab.classes) {
      const hits = code.match(new RegExp(`\\b${name}\\b`, "g"));
      if (hits) offenders.push(`${file}: ${name} (${hits.length})`);
    }
  }
  assert.deepEqual(offenders, []);
  // the scan would see one: the strings table does name them
  const strings = codeOf(readFileSync(new URL("app/strings.js", web), "utf8"));
  assert.ok(lab.classes.some((name) => strings.includes(name)));
});

test("no JS module under web/ branches on how a class makes its heads: sentences are keyed by the core's facts, choices come from its numbers", () => {
  const offenders = [];
  for (const dir of ["app", "lib"]) {
    for (const name of readdirSync(new URL(`${dir}/`, web))) {
      if (!name.endsWith(".js")) continue;
      const code = codeOf(readFileSync(new URL(`${dir}/${name}`, web), "utf8"));
      // a comparison with a heads kind ("single", "modules", "fused"), in either order
      const hits = code.match(/(===|!==|==|!=)\s*["'`](single|modules|fused)["'`]|["'`](single|modules|fused)["'`]\s*(===|!==|==|!=)/g);
      if (hits) offenders.push(`${dir}/${name}: ${hits.join(" ")}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test("the GPT-2 size table has one home, core/include/attention_lab/gpt2_sizes.hpp; the facade hands it out as lab.gpt2Sizes", () => {
  const root = new URL("../../", import.meta.url);
  const files = [];
  const walk = (rel) => {
    for (const entry of readdirSync(new URL(rel, root), { withFileTypes: true })) {
      const path = `${rel}${entry.name}`;
      if (entry.isDirectory()) { if (entry.name !== "vendor") walk(`${path}/`); continue; }
      if (/\.(cpp|hpp|js)$/.test(entry.name) && !entry.name.startsWith("attention_core")) files.push(path);
    }
  };
  for (const dir of ["core/", "web/app/", "web/lib/", "web/wasm/"]) walk(dir);
  assert.ok(files.length > 40);
  // The two widths only the size table lists (768 and 1024 stand for much else): a file naming both is a copy of it.
  const copies = files.filter((f) => { const code = readFileSync(new URL(f, root), "utf8"); return /\b1280\b/.test(code) && /\b1600\b/.test(code); });
  assert.deepEqual(copies, ["core/include/attention_lab/gpt2_sizes.hpp"]);
  assert.deepEqual(lab.gpt2Sizes.map((g) => [g.name, g.n_embd, g.n_head, g.n_layer]), [["small", 768, 12, 12], ["medium", 1024, 16, 24], ["large", 1280, 20, 36], ["XL", 1600, 25, 48]]);
  assert.ok(Object.isFrozen(lab.gpt2Sizes) && Object.isFrozen(lab.gpt2Sizes[0]));
  // the presets and the checkpoint loader read it: GPT-2 XL's preset is its row
  const xl = lab.classFacts("MultiHeadAttention").presets.find((p) => p.key === "gpt2XL");
  assert.deepEqual([xl.slots.d_in, xl.slots.num_heads], ["1600", "25"]);
});

test("the bindings are declarations: one file includes <emscripten/...>, at most 400 lines, value_objects of core structs, no rule of their own", () => {
  const root = new URL("../../", import.meta.url);
  const sources = [];
  const walk = (dir) => {
    for (const entry of readdirSync(new URL(dir, root), { withFileTypes: true })) {
      const path = `${dir}${entry.name}`;
      if (entry.isDirectory()) walk(`${path}/`);
      else if (/\.(cpp|hpp)$/.test(entry.name)) sources.push(path);
    }
  };
  for (const dir of ["core/", "web/", "tests/native/"]) walk(dir);
  const including = sources.filter((f) => /#include\s*<emscripten\//.test(readFileSync(new URL(f, root), "utf8")));
  assert.deepEqual(including, ["web/wasm/bindings.cpp"]);
  const text = readFileSync(new URL("web/wasm/bindings.cpp", root), "utf8");
  const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  assert.ok(lines <= 400, `web/wasm/bindings.cpp is ${lines} lines`);
  const code = codeOf(text);
  assert.ok((code.match(/\bobject<\w+(::\w+)*>\(/g) ?? []).length >= 30, "the results are declared as value_objects");
  // every exported call is a Session member (the core decides); the bindings throw nothing and test no value of their own
  const calls = [...code.matchAll(/"(\w+)",\s*call<&Session::(\w+)>/g)].map((m) => [m[0], m[2], m[1]]);
  assert.ok(calls.length >= 40, `${calls.length} calls declared`);
  const functions = [...code.matchAll(/emscripten::function\(\s*"(\w+)"/g)].map((m) => m[1]);
  assert.deepEqual(functions, ["heapInUse", "heapPeak"], "only the heap figures of this build are not Session calls");
  assert.doesNotMatch(code, /\bthrow\b|AttentionError\(/, "no error of their own");
  assert.doesNotMatch(code, /\b(isNumber|isArray|floor|kMax\w+|2147483648)\b/, "no checks of values");
  // and the facade (with its ledger of held results and its loader) reaches every declared call
  const modules = ["attention-lab", "inputs", "lab", "lab-files", "handles", "trace", "checkpoint-file", "checkpoint-calls", "file-reads", "gpt2-model", "held-results", "load-core"];
  const facade = codeOf(modules.map((f) => readFileSync(new URL(`web/lib/${f}.js`, root), "utf8")).join("\n"));
  const unused = calls.map((m) => m[2]).filter((name) => !new RegExp(`\\bcore\\.${name}\\(|_core\\.${name}\\(|core\\.${name}\\b`).test(facade));
  assert.deepEqual(unused, []);
});

test("the page's pitch counts the classes the core has: the chapter 3 classes, its bonus ways and the chapter 4 bonus classes", () => {
  const html = readFileSync(new URL("../../web/index.html", import.meta.url), "utf8");
  const words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
  const count = (pred) => words[lab.classes.filter((c) => pred(lab.classFacts(c).book)).length];
  const main = count((b) => b.chapter === "3" && b.section !== "");
  const bonus3 = count((b) => b.chapter === "3" && b.section === "");
  const bonus4 = count((b) => b.chapter === "4");
  const pitch = `chapter 3’s ${main} classes, its ${bonus3} bonus ways to write multi-head attention and ${bonus4} chapter 4 bonus classes`;
  assert.equal(html.split(pitch).length - 1, 2, `the description and the visible pitch say: ${pitch}`);
  assert.deepEqual([main, bonus3, bonus4], ["five", "seven", "four"]);
});

test("the validator sits below the modules: no core/src/validator* file includes modules.hpp", () => {
  const src = new URL("../../core/src/", import.meta.url);
  const files = readdirSync(src).filter((name) => /^validator.*\.(cpp|hpp)$/.test(name));
  assert.ok(["validator.cpp", "validator_detail.hpp", "validator_heads.cpp"].every((name) => files.includes(name)), files.join(" "));
  // ModuleConfig, the one thing they share with the modules, lives in schema.hpp
  const including = files.filter((name) => /#include\s*"attention_lab\/modules\.hpp"/.test(readFileSync(new URL(name, src), "utf8")));
  assert.deepEqual(including, []);
  assert.match(readFileSync(new URL("../../core/include/attention_lab/schema.hpp", import.meta.url), "utf8"), /^struct ModuleConfig \{/m);
});
