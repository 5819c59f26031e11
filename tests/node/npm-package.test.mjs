// The npm package holds what a user imports, runs and what its README links, nothing else. `npm pack` gives
// the library (the browser module, its Node entry, the .d.ts, the built WebAssembly core), the element
// and the teaching page (web/app, web/index.html, web/embed.html, the vendored GPT-2 tokenizer, the
// element's custom-elements.json) with npx attention-lab's server (bin/), the README,
// the docs pages it links (docs/**/*.md: the getting-started pages, the element's reference, the API
// in depth, benchmarks, reliability, design, layout) and its screenshot, CONTRIBUTING.md, the
// changelog and the license. Installed from the tarball into an empty folder (no network: it has no
// dependencies), it imports, requires and runs GPT-2 small's attention with the same bits as this
// checkout, also under jsdom's globals and in vitest's jsdom environment, and `npm pack` refuses a
// tree whose core is not built.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";
import { loadAttentionLab } from "attention-lab";
import { packProblems } from "../../scripts/prepack.mjs";
import { fencedBlocks } from "./markdown.mjs";
import { installPackedTarball, npm, packedTarball } from "../pack.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

const MHA = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };

// What each app prints: GPT-2 small's attention run seeded, and the code of a config that fails.
const RUN = `
  const mha = lab.create("MultiHeadAttention", ${JSON.stringify(MHA)}, { generator: lab.manualSeed(123) });
  const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output;
  let code = "";
  try { lab.create("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2 }); } catch (e) { code = e instanceof AttentionError ? e.code : "?"; }
  const result = { headDim: lab.describe("MultiHeadAttention", ${JSON.stringify(MHA)}).headDim, shape: y.shape, first: Array.from(y.data.slice(0, 8)), code, classes: lab.classes.length };
`;

describe("the npm package", () => {
  let dir;
  let app;
  let packed;
  let expected;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-pack-"));
    packed = packedTarball();
    app = installPackedTarball(dir, "app", { type: "module" });
    const lab = await loadAttentionLab();
    const mha = lab.create("MultiHeadAttention", MHA, { generator: lab.manualSeed(123) });
    const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output;
    expected = { headDim: 64, shape: [1, 6, 768], first: Array.from(y.data.slice(0, 8)), code: "heads_divisibility", classes: lab.classes.length };
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const node = (file, source, args = []) => {
    writeFileSync(path.join(app, file), source);
    return JSON.parse(execFileSync(process.execPath, [...args, file], { cwd: app, encoding: "utf8" }));
  };

  test("npm pack ships the library, the element and the page; installed into an empty folder it imports and runs", () => {
    // the element and the page (issue 41): every file of web/app and of the vendored tokenizer (the build writes it)
    const page = (f) => /^(web\/app\/|web\/vendor\/|bin\/)|^web\/(index|embed)\.html$|^custom-elements\.json$/.test(f);
    const filesOf = (dir) => readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
    const [element, vendored] = [filesOf("web/app"), filesOf("web/vendor")];
    assert.deepEqual(packed.files.map((f) => f.path).filter(page).sort(), ["bin/attention-lab.mjs", "bin/page-server.mjs", "custom-elements.json", ...element, ...vendored, "web/embed.html", "web/index.html"].sort());
    assert.ok(element.includes("web/app/run-worker.js") && element.includes("web/app/style.css") && vendored.includes("web/vendor/gpt-tokenizer/encoding/r50k_base.js"));
    assert.deepEqual(packed.files.map((f) => f.path).filter((f) => !page(f)).sort(), [
      "CHANGELOG.md", "CONTRIBUTING.md", "LICENSE", "README.md",
      "docs/api.md", "docs/benchmarks.md", "docs/bundlers.md", "docs/check-module.md", "docs/cpp-mainpage.md", "docs/design.md", "docs/getting-started/course-author.md", "docs/getting-started/cpp-developer.md",
      "docs/getting-started/js-developer.md", "docs/getting-started/reader.md", "docs/index.md", "docs/layout.md", "docs/reliability.md", "docs/screenshot.png", "docs/torch-rng.md", "docs/widget.md",
      "package.json",
      "web/lib/attention-lab.cjs", "web/lib/attention-lab.d.ts", "web/lib/attention-lab.js", "web/lib/attention-lab.node.js", "web/lib/attention_core.mjs", "web/lib/attention_core.wasm",
      "web/lib/attention_core_fma.wasm", "web/lib/attention_core_lean.wasm", "web/lib/attention_core_lean_fma.wasm", "web/lib/attention_core_mt.mjs", "web/lib/attention_core_mt.wasm", "web/lib/attention_core_mt.worker.cjs",
      "web/lib/attention_core_mt.worker.js", "web/lib/attention_core_mt_fma.wasm", "web/lib/check-module.js", "web/lib/checkpoint-calls.js", "web/lib/checkpoint-file.js", "web/lib/file-reads.js",
      "web/lib/gpt2-model.js", "web/lib/handles.js", "web/lib/head-split-worker.js", "web/lib/head-split.d.ts", "web/lib/head-split.js",
      "web/lib/held-results.js", "web/lib/inputs.js", "web/lib/lab-files.js", "web/lib/lab.js", "web/lib/load-core.js",
      "web/lib/options.js", "web/lib/trace.js", "web/lib/values.js", "web/lib/wasm-source.js",
    ]);
    // four binaries of ~345 KB gzip each (plain SIMD128 and relaxed SIMD, issue 21.3; each single-thread
    // and threaded, issue 21.2), the two lean single-thread ones of ~200 KB (no checkpoint readers), a
    // .d.ts that documents every declaration (issue 20), and the docs the README links with its
    // screenshot (~190 KB, so that the README's links work from node_modules); 2.26 MB with the chapter 4
    // and 5 bonus classes of issue 40 (the gate and RoPE passes, the stage table) in each binary; 2.29 MB
    // with the CommonJS build for Jest (~26 KB gzip, issue 41) and docs/bundlers.md; 2.66 MB (7.7 MB
    // unpacked) with the element and the page (issue 41): web/app's sources (~135 KB gzip), the vendored
    // GPT-2 tokenizer (~225 KB gzip, most of it GPT-2's BPE ranks) and the two pages; 2.74 MB with the
    // torch.save reader (issue 42) and checkModule's catalogue (issue 43) in the four full binaries;
    // 2.88 MB with the rest of issue 43 in all six (the first difference, the seeded dropout entries,
    // the causes' lines spelled per class: ~20 KB of each binary, 26 KB of it won back by setters that
    // convert nothing), the facade in modules of one job and the reader's guide to the check
    assert.ok(packed.size < 2_950_000, `${packed.size} bytes packed`);
    // the version it carries is package.json's, and the changelog (Keep a Changelog) has a section for
    // it: released ("## [0.1.0] - 2026-12-24"), or the unreleased one, which names the version it becomes
    const version = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).version;
    assert.equal(packed.version, version);
    const v = version.replace(/\./g, "\\.");
    assert.match(readFileSync(path.join(ROOT, "CHANGELOG.md"), "utf8"), new RegExp(`^## \\[${v}\\] - \\d{4}-\\d{2}-\\d{2}$|^## \\[Unreleased\\]\n\nThe first version, ${v}, when it is released\\.$`, "m"));
    const out = node("main.mjs", `
      import { loadAttentionLab, AttentionError } from "attention-lab";
      const lab = await loadAttentionLab();
      ${RUN}
      console.log(JSON.stringify({ ...result, entry: import.meta.resolve("attention-lab") }));
    `);
    assert.deepEqual(out, { ...expected, entry: pathToFileURL(path.join(app, "node_modules/attention-lab/web/lib/attention-lab.node.js")).href });
  });

  test("require() of the package works on the Node versions engines admits (>=20.19: require of an ES module)", () => {
    const { engines } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
    assert.deepEqual(engines, { node: ">=20.19" });
    const [major, minor] = process.versions.node.split(".").map(Number);
    assert.ok(major > 20 || (major === 20 && minor >= 19), `this Node (${process.version}) is one engines admits`);
    const out = node("main.cjs", `
      const { loadAttentionLab, AttentionError } = require("attention-lab");
      loadAttentionLab().then((lab) => {
        ${RUN}
        console.log(JSON.stringify({ ...result, entry: require.resolve("attention-lab") }));
      });
    `, ["--no-warnings"]);
    assert.deepEqual(out, { ...expected, entry: path.join(app, "node_modules/attention-lab/web/lib/attention-lab.node.js") });
  });

  test("exports: the .wasm, the head split's worker and package.json are reachable; other files are not", () => {
    const out = node("exports.mjs", `
      import { readFileSync } from "node:fs";
      import { createRequire } from "node:module";
      const require = createRequire(import.meta.url);
      const wasm = import.meta.resolve("attention-lab/attention_core.wasm");
      let deep = "";
      try { import.meta.resolve("attention-lab/web/lib/attention_core.mjs"); } catch (e) { deep = e.code; }
      const worker = import.meta.resolve("attention-lab/head-split-worker.js");
      console.log(JSON.stringify({ wasm, bytes: readFileSync(new URL(wasm)).length, version: require("attention-lab/package.json").version, deep, worker }));
    `);
    assert.deepEqual(out, {
      worker: pathToFileURL(path.join(app, "node_modules/attention-lab/web/lib/head-split-worker.js")).href,
      wasm: pathToFileURL(path.join(app, "node_modules/attention-lab/web/lib/attention_core.wasm")).href,
      bytes: readFileSync(path.join(ROOT, "web/lib/attention_core.wasm")).length,
      version: packed.version,
      deep: "ERR_PACKAGE_PATH_NOT_EXPORTED",
    });
  });

  test("under jsdom's globals (as vitest's jsdom environment installs them: window, document, jsdom's own URL and Blob...) it loads from disk and runs", () => {
    const jsdom = pathToFileURL(path.join(ROOT, "node_modules/jsdom/lib/api.js")).href;
    const out = node("jsdom.mjs", `
      import { JSDOM } from ${JSON.stringify(jsdom)};
      const dom = new JSDOM("<!doctype html><p>course page</p>", { url: "http://localhost:3000/lesson/3" });
      const NodeURL = URL;
      for (const key of ["window", "self", "document", "location", "navigator", "HTMLElement", "customElements", "URL", "URLSearchParams", "Blob", "File", "FileReader", "AbortController", "AbortSignal", "Event", "EventTarget", "DOMException"]) {
        Object.defineProperty(globalThis, key, { value: key === "window" || key === "self" ? dom.window : dom.window[key], configurable: true, writable: true });
      }
      // vitest 4 installs its own subclass of jsdom's URL (so a URL.prototype with no own href)
      globalThis.URL = class URL extends dom.window.URL {};
      const { loadAttentionLab, AttentionError } = await import("attention-lab");
      // a URL made with jsdom's URL class (vitest's tests make them so): a file: URL is read from disk
      const lab = await loadAttentionLab({ wasmUrl: new URL("./node_modules/attention-lab/web/lib/attention_core.wasm", import.meta.url) });
      const same = (await loadAttentionLab()) === lab;
      ${RUN}
      console.log(JSON.stringify({ ...result, same, window: typeof window, jsdomURL: URL !== NodeURL, paragraph: document.querySelector("p").textContent }));
    `);
    assert.deepEqual(out, { ...expected, same: true, window: "object", jsdomURL: true, paragraph: "course page" });
  });

  test("vitest 4 with the jsdom environment: a test file in the installed project loads it and gets Node's bits", () => {
    writeFileSync(path.join(app, "lab.test.js"), `// @vitest-environment jsdom
      import { loadAttentionLab, AttentionError } from "attention-lab";
      test("the library in vitest's jsdom environment", async () => {
        expect(typeof window).toBe("object");
        const lab = await loadAttentionLab();
        ${RUN}
        expect(result).toEqual(${JSON.stringify(expected)});
      });
      test("a wasmUrl made with the environment's URL class, and a wrong option", async () => {
        const url = new URL("./node_modules/attention-lab/web/lib/attention_core.wasm", ${JSON.stringify(pathToFileURL(`${app}/`).href)});
        expect(await loadAttentionLab({ wasmUrl: url }).catch((e) => e.code)).toBe("wasm_loaded");
        expect(await loadAttentionLab({ wasmPath: url }).catch((e) => e.code)).toBe("unknown_option");
      });
    `);
    const vitest = path.join(ROOT, "node_modules", ".bin", "vitest");
    execFileSync(vitest, ["run", "--globals", "--reporter=json", "--outputFile=vitest.json", "lab.test.js"], { cwd: app, env: { ...process.env, NO_COLOR: "1" }, stdio: "ignore" });
    const report = JSON.parse(readFileSync(path.join(app, "vitest.json"), "utf8"));
    const results = report.testResults.flatMap((f) => f.assertionResults.map((a) => [a.title, a.status, a.failureMessages]));
    assert.deepEqual(results, [["the library in vitest's jsdom environment", "passed", []], ["a wasmUrl made with the environment's URL class, and a wrong option", "passed", []]]);
  });

  test("checkpoints: false loads the installed lean binary; where it is missing (a copy without it) the full one, readers and all", () => {
    const script = `
      import { loadAttentionLab } from "attention-lab";
      const lab = await loadAttentionLab({ checkpoints: false, threads: 1 });
      const y = lab.run("SelfAttention_v2", { d_in: 3, d_out: 2 }, lab.seededTokens(4, 3, 7), { seed: 123, trace: false }).output;
      console.log(JSON.stringify({ hasCheckpoints: lab.hasCheckpoints, first: Array.from(y.data.slice(0, 2)) }));
      process.exit(0);`;
    const lean = node("lean.mjs", script);
    assert.equal(lean.hasCheckpoints, false);
    const file = path.join(app, "node_modules/attention-lab/web/lib/attention_core_lean.wasm");
    const bytes = readFileSync(file);
    rmSync(file);
    try {
      const full = node("lean-missing.mjs", script);
      assert.deepEqual(full, { hasCheckpoints: true, first: lean.first });
    } finally {
      writeFileSync(file, bytes);
    }
  });

  test("Jest 30, CommonJS (its default) and ESM, node and jsdom environments: the README's example prints its lines", () => {
    // the README's JS example, as a user pastes it into a test: the import, then the body in an async test
    const readme = fencedBlocks(readFileSync(path.join(ROOT, "README.md"), "utf8")).find((b) => b.lang === "js" && b.code.includes('from "attention-lab"')).code;
    const [importLine, ...body] = readme.split("\n");
    assert.equal(importLine, 'import { loadAttentionLab } from "attention-lab";');
    const prints = body.map((l) => l.match(/^\/\/ prints: (.*)$/)?.[1]).filter((l) => l !== undefined);
    assert.equal(prints.length, 3);
    const testOf = (title, extra = "") => `test(${JSON.stringify(title)}, async () => {
      const printed = [];
      const console = { log: (...args) => printed.push(format(...args)) };
      ${body.join("\n")}
      expect(printed).toEqual(${JSON.stringify(prints)});
      ${extra}
    });`;
    const jsdom = (options = "") => `/**\n * @jest-environment jsdom${options ? `\n * @jest-environment-options ${options}` : ""}\n */\n`;
    const cjs = 'const { loadAttentionLab } = require("attention-lab");\nconst { format } = require("node:util");\n';
    const esm = `${importLine}\nimport { format } from "node:util";\n`;
    const tests = path.join(app, "jest");
    mkdirSync(tests);
    // CommonJS: require gets the package's CommonJS build (Jest's module system cannot require an ES module on Node < 24.9)
    const entry = 'expect(require.resolve("attention-lab")).toMatch(/attention-lab\\.cjs$/);';
    writeFileSync(path.join(tests, "readme.test.cjs"), `${cjs}${testOf("README, CommonJS, node environment", entry)}`);
    writeFileSync(path.join(tests, "readme-jsdom.test.cjs"), `${jsdom()}${cjs}${testOf("README, CommonJS, jsdom environment", `expect(typeof window).toBe("object"); ${entry}`)}`);
    // ESM (node --experimental-vm-modules): the Node entry; under jsdom with the one-line setting docs/bundlers.md gives
    writeFileSync(path.join(tests, "readme.test.mjs"), `${esm}${testOf("README, ESM, node environment")}`);
    writeFileSync(path.join(tests, "readme-jsdom.test.mjs"), `${jsdom('{"customExportConditions": ["node"]}')}${esm}${testOf("README, ESM, jsdom environment", 'expect(typeof window).toBe("object");')}`);
    // without the setting, Jest's ESM jsdom environment hands over the browser entry: a coded error that names the setting
    writeFileSync(path.join(tests, "no-setting-jsdom.test.mjs"), `${jsdom()}${esm}test("ESM, jsdom environment without the setting", async () => {
      const e = await loadAttentionLab().then(() => null, (err) => err);
      expect([e?.code, e?.slot]).toEqual(["wasm_fetch", ""]);
      expect(e.message).toMatch(/^attention_core\\.wasm cannot be fetched from .*: this realm has no fetch$/);
      expect(e.hint).toContain('testEnvironmentOptions: {customExportConditions: ["node"]}');
    });`);
    const jest = path.join(ROOT, "node_modules", "jest", "bin", "jest.js");
    const report = path.join(dir, "jest.json");
    const run = spawnSync(process.execPath, ["--experimental-vm-modules", "--no-warnings", jest, "--rootDir", tests, "--ci", `--cacheDirectory=${path.join(dir, "jest-cache")}`, "--json", `--outputFile=${report}`], { cwd: app, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
    const results = JSON.parse(readFileSync(report, "utf8")).testResults.flatMap((f) => f.assertionResults.map((a) => [a.title, a.status, a.failureMessages.join("\n").slice(0, 600)])).sort();
    assert.deepEqual(results, [
      ["ESM, jsdom environment without the setting", "passed", ""],
      ["README, CommonJS, jsdom environment", "passed", ""],
      ["README, CommonJS, node environment", "passed", ""],
      ["README, ESM, jsdom environment", "passed", ""],
      ["README, ESM, node environment", "passed", ""],
    ], run.stderr.slice(-2000));
  });

  test("a Node bundle (esbuild --platform=node): run in its project it reads the installed package's .wasm; deployed alone it says what to copy, and runs once they are copied", async () => {
    writeFileSync(path.join(app, "bundled.mjs"), `
      import { loadAttentionLab, AttentionError } from "attention-lab";
      const lab = await loadAttentionLab().catch((e) => { console.log(JSON.stringify({ code: e.code, message: e.message, hint: e.hint })); process.exit(0); });
      ${RUN}
      console.log(JSON.stringify({ ...result, threads: lab.threads }));
      process.exit(0);`);
    writeFileSync(path.join(app, "bundled.cjs"), `
      const { loadAttentionLab, AttentionError } = require("attention-lab");
      loadAttentionLab().then((lab) => {
        ${RUN}
        console.log(JSON.stringify({ ...result, threads: lab.threads }));
        process.exit(0);
      });`);
    // esbuild app.mjs --bundle --platform=node --format=esm, and a CommonJS app with esbuild's default format (cjs)
    const esm = await esbuild.build({ absWorkingDir: app, entryPoints: ["bundled.mjs"], bundle: true, platform: "node", format: "esm", outfile: path.join(app, "dist", "app.mjs"), logLevel: "silent" });
    const cjs = await esbuild.build({ absWorkingDir: app, entryPoints: ["bundled.cjs"], bundle: true, platform: "node", outfile: path.join(app, "dist", "app.cjs"), logLevel: "silent" });
    assert.deepEqual([...esm.warnings, ...cjs.warnings].map((w) => w.text), []);
    const threads = Math.min(os.availableParallelism(), 4);
    const run = (file) => JSON.parse(execFileSync(process.execPath, [file], { cwd: dir, encoding: "utf8", env: { ...process.env, NODE_PATH: "" } }));
    assert.deepEqual(run(path.join(app, "dist", "app.mjs")), { ...expected, threads }, "the threaded core too, from node_modules/attention-lab");
    assert.deepEqual(run(path.join(app, "dist", "app.cjs")), { ...expected, threads });
    // the bundle alone, where no attention-lab is installed
    const deploy = path.join(dir, "deploy");
    mkdirSync(deploy);
    cpSync(path.join(app, "dist", "app.mjs"), path.join(deploy, "app.mjs"));
    const alone = run(path.join(deploy, "app.mjs"));
    assert.equal(alone.code, "wasm_fetch");
    assert.equal(alone.message, `attention_core.wasm could not be found for the bundle ${path.join(deploy, "app.mjs")}: attention-lab was bundled into it, and ${deploy}${path.sep} does not hold the .wasm files`);
    assert.match(alone.hint, /^Copy them beside the bundle \(cp node_modules\/attention-lab\/web\/lib\/attention_core\* .*\), or leave the package out of the bundle \(esbuild --external:attention-lab\), or pass loadAttentionLab\(\{wasmPaths: /);
    // the recipe: copy the package's core files beside the bundle
    const lib = path.join(app, "node_modules", "attention-lab", "web", "lib");
    for (const name of readdirSync(lib).filter((n) => n.startsWith("attention_core"))) cpSync(path.join(lib, name), path.join(deploy, name));
    assert.deepEqual(run(path.join(deploy, "app.mjs")), { ...expected, threads });
  });
});

describe("npm pack refuses a tree whose WebAssembly core is not built (the prepack hook)", () => {
  let dir;
  before(() => {
    // a copy of what `npm pack` reads, without the built files (the real ones are not touched)
    dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-unbuilt-"));
    for (const file of ["package.json", "README.md", "LICENSE", "CHANGELOG.md", "scripts/prepack.mjs", "web/lib/attention-lab.js", "web/lib/attention-lab.node.js", "web/lib/attention-lab.d.ts", "web/lib/held-results.js"]) {
      cpSync(path.join(ROOT, file), path.join(dir, file));
    }
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("unbuilt: npm pack fails, names the missing files and says to run npm run build, and writes no tarball", () => {
    let failure;
    try {
      npm(["pack", "--pack-destination", dir], dir);
    } catch (err) {
      failure = err;
    }
    assert.ok(failure, "npm pack succeeded on an unbuilt tree");
    assert.notEqual(failure.status, 0);
    assert.match(failure.stderr, /prepack: refusing to pack attention-lab/);
    assert.match(failure.stderr, /web\/lib\/attention_core\.mjs is missing/);
    assert.match(failure.stderr, /web\/lib\/attention_core\.wasm is missing: this tree is not built/);
    assert.match(failure.stderr, /web\/lib\/attention_core_fma\.wasm is missing: this tree is not built/);
    assert.match(failure.stderr, /Run `npm run build`/);
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith(".tgz")), []);
  });

  test("empty, not the build's, or stale against build/wasm: each refused with its reason; this checkout's built files pass", () => {
    const lib = path.join(dir, "web/lib");
    writeFileSync(path.join(lib, "attention_core.mjs"), "");
    writeFileSync(path.join(lib, "attention_core.wasm"), "<!doctype html>");
    const missing = (name) => `web/lib/${name} is missing: this tree is not built, and the package would have no WebAssembly core.`;
    const lean = ["attention_core_lean.wasm", "attention_core_lean_fma.wasm"];
    const threaded = ["attention_core_mt.mjs", "attention_core_mt.wasm", "attention_core_mt_fma.wasm", "attention_core_mt.worker.js", "attention_core_mt.worker.cjs"];
    assert.deepEqual(packProblems(dir), [
      "web/lib/attention_core.mjs is empty (0 bytes): an interrupted build?",
      "web/lib/attention_core.wasm is not a WebAssembly module (it does not start with \\0asm).",
      missing("attention_core_fma.wasm"),
      ...lean.map(missing),
      ...threaded.map(missing),
    ]);
    cpSync(path.join(ROOT, "web/lib/attention_core.mjs"), path.join(lib, "attention_core.mjs"));
    cpSync(path.join(ROOT, "web/lib/attention_core.wasm"), path.join(lib, "attention_core.wasm"));
    assert.deepEqual(packProblems(dir), [missing("attention_core_fma.wasm"), ...lean.map(missing), ...threaded.map(missing)]);
    cpSync(path.join(ROOT, "web/lib/attention_core_fma.wasm"), path.join(lib, "attention_core_fma.wasm"));
    for (const name of lean) cpSync(path.join(ROOT, "web/lib", name), path.join(lib, name));
    assert.deepEqual(packProblems(dir), threaded.map(missing));
    for (const name of threaded) cpSync(path.join(ROOT, "web/lib", name), path.join(lib, name));
    assert.deepEqual(packProblems(dir), []);
    mkdirSync(path.join(dir, "build/wasm"), { recursive: true });
    cpSync(path.join(ROOT, "web/lib/attention_core.mjs"), path.join(dir, "build/wasm/attention_core.mjs"));
    writeFileSync(path.join(dir, "build/wasm/attention_core.wasm"), Buffer.concat([readFileSync(path.join(lib, "attention_core.wasm")), Buffer.from([0])]));
    assert.deepEqual(packProblems(dir), ["web/lib/attention_core.wasm differs from build/wasm/attention_core.wasm: the copy in web/lib is stale (the build copies it there)."]);
    assert.deepEqual(packProblems(ROOT), []);
  });
});
