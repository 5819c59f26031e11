// The npm tarball through the bundlers users reach for, each bundle run in Chromium. `npm pack`,
// installed offline into an empty project (once, shared by every app here), then small apps bundled
// from it (docs/bundlers.md has each recipe):
// - esbuild `--bundle --platform=browser` (a classic-script IIFE, where import.meta is empty), the
//   .wasm imported through the package's exports (`attention-lab/attention_core.wasm`, copied by
//   `--loader:.wasm=file`) and handed over as `wasmUrl`; the page in another folder than the bundle,
//   so `--public-path` makes the .wasm's URL absolute;
// - esbuild again with `wasmPaths`: the package's core files copied to a folder of the site, the page
//   and the bundle each in another folder; on a cross-origin isolated page it keeps the relaxed-SIMD
//   twin and threads, and where the twin is missing it runs the plain binary with a console note;
// - esbuild `--format=esm` with the core's files copied beside the bundle: no option at all;
// - webpack 5 with no configuration beyond mode and entry: it follows the library's
//   `new URL("./attention_core.wasm", import.meta.url)` and emits the .wasm as an asset by itself, and
//   bundles the head split's Worker (`new Worker(new URL("./head-split-worker.js", import.meta.url))`);
// - Vite 8's production build with no configuration, which follows the same patterns;
// - Rollup 4 with @rollup/plugin-node-resolve and @web/rollup-plugin-import-meta-assets, which follows
//   the .wasm pattern too.
// Each bundle is served by a plain static server (with the headers that make a page cross-origin
// isolated); the page's numbers must be Node's, bit for bit, from the same binary: Chromium has relaxed
// SIMD, so a located load (the default, wasmPaths) is the fused multiply-add binary (checked against
// Node running it with --experimental-wasm-relaxed-simd), and esbuild's, given the exported
// attention_core.wasm, the plain one (against Node's default).
import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import * as esbuild from "esbuild";
import webpack from "webpack";
import { build as viteBuild } from "vite";
import { rollup } from "rollup";
import { nodeResolve } from "@rollup/plugin-node-resolve";
import { importMetaAssets } from "@web/rollup-plugin-import-meta-assets";
import sirv from "sirv";
import { loadAttentionLab } from "attention-lab";
import { inNodeWithRelaxedSimd, installPackedTarball, launchChromium } from "./helpers.mjs";

const MHA = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };

// What the app computes, in the page and here: GPT-2 small's attention described and run seeded.
const RUN = `
const MHA = ${JSON.stringify(MHA)};
function facts(lab) {
  const d = lab.describe("MultiHeadAttention", MHA);
  const mha = lab.create("MultiHeadAttention", MHA, { generator: lab.manualSeed(123) });
  const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output;
  let code = "";
  try { lab.create("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2 }); } catch (e) { code = e instanceof AttentionError ? e.code : "not an AttentionError"; }
  return { kernel: lab.kernel, headDim: d.headDim, outputWidth: d.outputWidth, parameterCount: d.parameterCount, shape: y.shape, first: Array.from(y.data.slice(0, 8)), code };
}
const show = (result) => { document.getElementById("out").textContent = JSON.stringify(result); };
const codeOf = (e) => (e instanceof AttentionError ? e.code : String(e));
`;

// A forward split by heads across one Worker (attention-lab/head-split): the bundler must have bundled
// the Worker with the library and its .wasm. "same bits" when it gives module.forward's output.
const SPLIT = `
import { createHeadSplit } from "attention-lab/head-split";
async function splitBits(lab) {
  const mha = lab.create("MultiHeadAttention", { d_in: 8, d_out: 8, context_length: 6, dropout: 0, num_heads: 4 }, { generator: lab.manualSeed(1) });
  const x = { shape: [1, 6, 8], data: lab.seededTokens(6, 8, 3).data };
  const whole = mha.forward(x, { training: false }).output.data;
  const split = createHeadSplit({ workers: 1 });
  try {
    const parts = (await split.forward(mha, x, { training: false })).output.data;
    return parts.length === whole.length && whole.every((v, i) => Object.is(v, parts[i])) ? "same bits" : "other bits";
  } catch (e) {
    return codeOf(e);
  } finally {
    split.dispose();
  }
}
`;

// The code that reads files is a dynamic import() of the library (lab-files.js): the bundlers that split
// emit it as a chunk loaded by the first call that reads a file. "safetensors 1" when it loaded and
// opened a one-tensor .safetensors file made here.
const FILE = `
async function fileRead(lab) {
  const header = new TextEncoder().encode(JSON.stringify({ w: { dtype: "F32", shape: [1], data_offsets: [0, 4] } }));
  const bytes = new Uint8Array(8 + header.length + 4);
  new DataView(bytes.buffer).setUint32(0, header.length, true);
  bytes.set(header, 8);
  try {
    const file = await lab.openCheckpoint(bytes);
    return \`\${file.format} \${file.keys}\`;
  } catch (e) {
    return codeOf(e);
  }
}
`;

const APPS = {
  // no wasmUrl first: an IIFE bundle has no URL of its own, so the library must say so (and forget
  // the failed load); then the URL esbuild gives the exported .wasm
  esbuild: `import { loadAttentionLab, AttentionError } from "attention-lab";
import wasmUrl from "attention-lab/attention_core.wasm";
${RUN}
loadAttentionLab().then(() => "loaded without wasmUrl", codeOf).then((before) =>
  loadAttentionLab({ wasmUrl }).then((lab) => show({ ...facts(lab), before }), (e) => show({ error: codeOf(e), message: e.message })));
`,
  // every file from the folder the page's query names (wasmPaths), on the threads it asks for
  paths: `import { loadAttentionLab, AttentionError } from "attention-lab";
${RUN}
const query = new URLSearchParams(location.search);
loadAttentionLab({ wasmPaths: query.get("paths"), threads: Number(query.get("threads")) }).then(
  (lab) => show({ ...facts(lab), threads: lab.threads, isolated: crossOriginIsolated }), (e) => show({ error: codeOf(e), message: e.message }));
`,
  // nothing to say: webpack located the .wasm; a second call naming another .wasm is refused
  webpack: `import { loadAttentionLab, AttentionError } from "attention-lab";
${SPLIT}
${FILE}
${RUN}
loadAttentionLab().then(async (lab) => {
  const again = await loadAttentionLab().then((other) => other === lab, codeOf);
  const elsewhere = await loadAttentionLab({ wasmUrl: "/elsewhere/attention_core.wasm" }).then(() => "loaded twice", codeOf);
  show({ ...facts(lab), again, elsewhere, split: await splitBits(lab), reads: await fileRead(lab) });
}, (e) => show({ error: codeOf(e), message: e.message }));
`,
  // an ES module app (top-level await), the .wasm located by Vite
  vite: `import { loadAttentionLab, AttentionError } from "attention-lab";
${SPLIT}
${FILE}
${RUN}
try {
  const lab = await loadAttentionLab();
  show({ ...facts(lab), split: await splitBits(lab), reads: await fileRead(lab) });
} catch (e) {
  show({ error: codeOf(e), message: e.message });
}
`,
  // the same app through Rollup, the .wasm located by its import-meta-assets plugin
  rollup: `import { loadAttentionLab, AttentionError } from "attention-lab";
${FILE}
${RUN}
try {
  const lab = await loadAttentionLab();
  show({ ...facts(lab), reads: await fileRead(lab) });
} catch (e) {
  show({ error: codeOf(e), message: e.message });
}
`,
};

/** Emitted files' names without their folder and hash ("assets/attention_core_mt-Ab1_c.mjs" -> "attention_core_mt.mjs"), sorted. */
const emitted = (files) => files.map((f) => path.basename(f).replace(/-[\w-]{8}(\.\w+)$/, "$1")).sort();

/** Runs webpack 5 through its Node API (no CLI): production mode, the entry, the output folder. */
function runWebpack(context, entry, outDir) {
  return new Promise((resolve, reject) => {
    const compiler = webpack({ mode: "production", context, entry, target: "web", output: { path: outDir, filename: path.basename(entry) }, performance: { hints: false } });
    compiler.run((err, stats) => {
      compiler.close(() => {
        if (err) reject(err);
        else if (stats.hasErrors()) reject(new Error(stats.toString({ all: false, errors: true })));
        else resolve(stats.toJson({ all: false, assets: true, warnings: true }));
      });
    });
  });
}

describe("the npm tarball bundled by esbuild, webpack 5, Vite and Rollup", () => {
  let dir;
  let server;
  let context;
  let expected;
  let expectedFma;
  const built = {};
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-bundlers-"));
    const app = installPackedTarball(dir, "app");
    const site = path.join(dir, "site");
    const page = (folder, name, script, module = false) => {
      mkdirSync(path.join(site, folder), { recursive: true });
      writeFileSync(path.join(site, folder, "index.html"), `<!doctype html><meta charset="utf-8"><title>${name}</title><pre id="out"></pre><script ${module ? 'type="module" ' : ""}src="${script}"></script>`);
    };
    for (const [name, source] of Object.entries(APPS)) writeFileSync(path.join(app, `${name}.js`), source);
    // esbuild esbuild.js --bundle --platform=browser --loader:.wasm=file --outdir=site/esbuild/js --public-path=/esbuild/js/
    // (the page is site/esbuild/index.html, a folder above the bundle)
    page("esbuild", "esbuild", "./js/esbuild.js");
    const es = await esbuild.build({ absWorkingDir: app, entryPoints: ["esbuild.js"], bundle: true, platform: "browser", loader: { ".wasm": "file" }, outdir: path.join(site, "esbuild", "js"), publicPath: "/esbuild/js/", logLevel: "silent", metafile: true });
    built.esbuild = { warnings: es.warnings.map((w) => w.text), files: Object.keys(es.metafile.outputs).map((f) => path.basename(f)).sort() };
    // esbuild paths.js --bundle --platform=browser --outdir=site/paths/js, the page in site/paths/page/,
    // the package's core files copied to site/cdn/attention-lab/ (and only attention_core.wasm to site/plain/)
    page(path.join("paths", "page"), "paths", "../js/paths.js");
    const ps = await esbuild.build({ absWorkingDir: app, entryPoints: ["paths.js"], bundle: true, platform: "browser", outdir: path.join(site, "paths", "js"), logLevel: "silent" });
    built.paths = { warnings: ps.warnings.map((w) => w.text) };
    const lib = path.join(app, "node_modules", "attention-lab", "web", "lib");
    built.copied = readdirSync(lib).filter((n) => n.startsWith("attention_core")).sort();
    for (const name of built.copied) cpSync(path.join(lib, name), path.join(site, "cdn", "attention-lab", name));
    cpSync(path.join(lib, "attention_core.wasm"), path.join(site, "plain", "attention_core.wasm"));
    // esbuild esm.js --bundle --format=esm --outdir=site/esm/js, the core's files copied beside the bundle
    page("esm", "esm", "./js/esm.js", true);
    writeFileSync(path.join(app, "esm.js"), APPS.rollup);
    const em = await esbuild.build({ absWorkingDir: app, entryPoints: ["esm.js"], bundle: true, platform: "browser", format: "esm", outdir: path.join(site, "esm", "js"), logLevel: "silent" });
    built.esm = { warnings: em.warnings.map((w) => w.text) };
    for (const name of built.copied) cpSync(path.join(lib, name), path.join(site, "esm", "js", name));
    page("webpack", "webpack", "./webpack.js");
    const wp = await runWebpack(app, "./webpack.js", path.join(site, "webpack"));
    built.webpack = { warnings: wp.warnings.map((w) => w.message), files: wp.assets.map((a) => a.name).sort() };
    // vite build, from the app's index.html, with the base the site serves it under
    writeFileSync(path.join(app, "index.html"), `<!doctype html><meta charset="utf-8"><title>vite</title><pre id="out"></pre><script type="module" src="./vite.js"></script>`);
    const vite = await viteBuild({ root: app, base: "/vite/", configFile: false, logLevel: "silent", build: { outDir: path.join(site, "vite"), emptyOutDir: true } });
    built.vite = { files: vite.output.map((o) => o.fileName).sort() };
    // rollup -p node-resolve={browser: true} -p import-meta-assets rollup.js --format es --dir site/rollup
    page("rollup", "rollup", "./rollup.js", true);
    const warnings = [];
    const rb = await rollup({ input: path.join(app, "rollup.js"), plugins: [nodeResolve({ browser: true }), importMetaAssets()], onwarn: (w) => warnings.push(w.message) });
    const { output } = await rb.write({ dir: path.join(site, "rollup"), format: "es" });
    await rb.close();
    built.rollup = { warnings, files: output.map((o) => o.fileName).sort(), code: output.filter((o) => o.type === "chunk").map((o) => o.code).join("\n") };
    for (const name of ["esbuild", "webpack"]) built[name].code = readFileSync(path.join(site, name, name === "esbuild" ? "js" : "", `${name}.js`), "utf8");
    built.vite.code = vite.output.filter((o) => o.type === "chunk").map((o) => o.code).join("\n");
    const files = sirv(site);
    server = http.createServer((req, res) => {
      // cross-origin isolated (SharedArrayBuffer, so threads), as docs/api.md's Threads section says a host must be
      res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
      res.setHeader("Cross-Origin-Embedder-Policy", "require-corp");
      files(req, res, () => { res.statusCode = 404; res.end(); });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    context = await launchChromium(path.join(dir, "profile"));
    // the same app's numbers in Node, from this checkout
    const lab = await loadAttentionLab();
    const { AttentionError } = await import("attention-lab");
    expected = new Function("AttentionError", "document", `${RUN}; return facts;`)(AttentionError, null)(lab);
    // the same app in a Node that has relaxed SIMD: the default is then the fused multiply-add binary
    expectedFma = inNodeWithRelaxedSimd(`${RUN}; console.log(JSON.stringify(facts(await loadAttentionLab())));`);
  });
  after(async () => {
    await context?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Opens site/<where>, waits for the app's result and returns it with the page's errors, its console
   * warnings, the .wasm requests and the failed requests (HTTP 400 and above, those under /elsewhere/ aside).
   */
  async function run(where) {
    const page = await context.newPage();
    const problems = [];
    const missing = [];
    const warnings = [];
    const wasm = [];
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("console", (m) => m.type() === "warning" && warnings.push(m.text()));
    page.on("response", (r) => {
      if (r.status() >= 400 && !r.url().includes("/elsewhere/")) missing.push(`HTTP ${r.status()} ${new URL(r.url()).pathname}`);
      if (r.url().endsWith(".wasm")) wasm.push({ path: new URL(r.url()).pathname, status: r.status(), type: r.headers()["content-type"] });
    });
    await page.goto(`http://127.0.0.1:${server.address().port}/${where}`);
    await page.waitForFunction(() => document.getElementById("out").textContent !== "", null, { timeout: 60_000 });
    const result = JSON.parse(await page.locator("#out").textContent());
    await page.close();
    return { result, problems, missing, warnings, wasm };
  }

  test("the numbers Node gives (the same test app, from this checkout), from each binary", () => {
    assert.equal(expected.kernel, "simd128");
    assert.equal(expectedFma.kernel, "relaxed_madd");
    assert.deepEqual({ ...expectedFma, kernel: "simd128", first: expected.first }, expected, "the same facts from both binaries");
    assert.notDeepEqual(expectedFma.first, expected.first, "fused multiply-adds round differently");
    for (let i = 0; i < 8; i++) assert.ok(Math.abs(expectedFma.first[i] - expected.first[i]) <= 1e-6, `output ${i}: ${expectedFma.first[i]} vs ${expected.first[i]}`);
    assert.equal(expected.headDim, 64);
    assert.equal(expected.outputWidth, 768);
    assert.equal(expected.parameterCount, 2_360_064);
    assert.deepEqual(expected.shape, [1, 6, 768]);
    assert.equal(expected.code, "heads_divisibility");
  });

  test("esbuild --bundle --platform=browser, the page in another folder: no node: module in the bundle; the exported .wasm, copied and passed as wasmUrl with an absolute --public-path, runs with Node's bits", async () => {
    const b = built.esbuild;
    assert.deepEqual(b.warnings, []);
    const wasmFile = b.files.find((f) => f.endsWith(".wasm"));
    assert.deepEqual(b.files.filter((f) => f !== wasmFile), ["esbuild.js"]);
    assert.match(wasmFile, /^attention_core-[A-Z0-9]+\.wasm$/);
    assert.doesNotMatch(b.code, /["']node:|require\(["']fs["']\)/);
    const { result, problems, missing, wasm } = await run("esbuild/");
    assert.deepEqual(result, { ...expected, before: "wasm_url" });
    assert.deepEqual([problems, missing], [[], []]);
    assert.deepEqual(wasm, [{ path: `/esbuild/js/${wasmFile}`, status: 200, type: "application/wasm" }]);
  });

  test("esbuild with wasmPaths (the page, the bundle and the core's files each in its own folder): the relaxed-SIMD twin and threads, with Node's bits", async () => {
    assert.deepEqual(built.paths.warnings, []);
    assert.deepEqual(built.copied, ["attention_core.mjs", "attention_core.wasm", "attention_core_fma.wasm", "attention_core_lean.wasm", "attention_core_lean_fma.wasm", "attention_core_mt.mjs", "attention_core_mt.wasm", "attention_core_mt.worker.cjs", "attention_core_mt.worker.js", "attention_core_mt_fma.wasm"]);
    const { result, problems, missing, warnings, wasm } = await run("paths/page/?paths=/cdn/attention-lab/&threads=2");
    assert.deepEqual(result, { ...expectedFma, threads: 2, isolated: true });
    // Emscripten's own note on threads asked for on a page's main thread (docs/api.md: a Worker is the place for them)
    const mainThread = (w) => w.startsWith("Blocking on the main thread is very dangerous");
    assert.deepEqual([problems, missing, warnings.filter((w) => !mainThread(w))], [[], [], []]);
    assert.deepEqual(wasm, [{ path: "/cdn/attention-lab/attention_core_mt_fma.wasm", status: 200, type: "application/wasm" }]);
  });

  test("esbuild --format=esm with the core's files copied beside the bundle: no option, the relaxed-SIMD twin, Node's bits", async () => {
    assert.deepEqual(built.esm.warnings, []);
    const { result, problems, missing, warnings, wasm } = await run("esm/");
    assert.deepEqual(result, { ...expectedFma, reads: "safetensors 1" });
    assert.deepEqual([problems, missing, warnings], [[], [], []]);
    assert.deepEqual(wasm, [{ path: "/esm/js/attention_core_fma.wasm", status: 200, type: "application/wasm" }]);
  });

  test("wasmPaths where attention_core_fma.wasm is missing: the plain binary runs, with Node's bits, and a console note names the missing file", async () => {
    const { result, problems, missing, warnings, wasm } = await run("paths/page/?paths=/plain/&threads=1");
    assert.deepEqual(result, { ...expected, threads: 1, isolated: true });
    assert.deepEqual(problems, []);
    assert.deepEqual(missing, ["HTTP 404 /plain/attention_core_fma.wasm"]);
    const origin = `http://127.0.0.1:${server.address().port}`;
    assert.deepEqual(warnings, [`attention-lab: attention_core_fma.wasm could not be fetched: attention_core_fma.wasm from wasmPaths (${origin}/plain/attention_core_fma.wasm) answered 404 Not Found; attention_core.wasm runs instead: products as a multiply then an add (lab.kernel "simd128"), the same results within 1e-6.`]);
    assert.deepEqual(wasm.map((w) => [w.path, w.status]), [["/plain/attention_core_fma.wasm", 404], ["/plain/attention_core.wasm", 200]]);
  });

  test("webpack 5 with no configuration: it emits the .wasm and bundles the head split's Worker itself; the bundle runs with Node's bits, the split too, and a second load from elsewhere is refused", async () => {
    const b = built.webpack;
    assert.deepEqual(b.warnings, []);
    const wasmAssets = b.files.filter((f) => f.endsWith(".wasm"));
    const scripts = b.files.filter((f) => /webpack\.js$/.test(f));
    assert.equal(scripts.length, 3, scripts.join(" "));
    assert.equal(scripts[2], "webpack.js");
    for (const chunk of scripts.slice(0, 2)) assert.match(chunk, /^\d+\.webpack\.js$/, "the Worker's chunk, and the code that reads files (loaded on first use)");
    assert.equal(wasmAssets.length, 4, "the four binaries emitted (plain and relaxed-SIMD, single-thread and threaded), once for the page and its Worker");
    // the threaded core's glue and its pthread worker, emitted as they are (assets, not bundled)
    assert.deepEqual(b.files.filter((f) => !f.endsWith(".wasm") && !scripts.includes(f)).map((f) => f.replace(/^[\da-f]+/, "HASH")).sort(), ["HASH.js", "HASH.mjs"]);
    assert.doesNotMatch(b.code, /["']node:|require\(["']fs["']\)/);
    const { result, problems, missing, wasm } = await run("webpack/");
    assert.deepEqual(result, { ...expectedFma, again: true, elsewhere: "wasm_loaded", split: "same bits", reads: "safetensors 1" });
    assert.deepEqual([problems, missing], [[], []]);
    assert.equal(new Set(wasm.map((w) => w.path)).size, 1, "one binary fetched (by the page and by the Worker)");
    assert.ok(wasmAssets.map((f) => `/webpack/${f}`).includes(wasm[0].path), wasm[0].path);
    assert.deepEqual(wasm[0], { path: wasm[0].path, status: 200, type: "application/wasm" });
    assert.deepEqual(readdirSync(path.join(dir, "site", "webpack")).sort(), [...b.files, "index.html"].sort());
  });

  test("vite build with no configuration: it emits the .wasm and bundles the head split's Worker itself; the page runs with Node's bits, the split too", async () => {
    const b = built.vite;
    const wasmFiles = b.files.filter((f) => f.endsWith(".wasm"));
    assert.deepEqual(emitted(wasmFiles), ["attention_core.wasm", "attention_core_fma.wasm", "attention_core_mt.wasm", "attention_core_mt_fma.wasm"], "the four binaries emitted");
    const wasmFile = wasmFiles.find((f) => f.startsWith("assets/attention_core_fma-"));
    assert.match(wasmFile, /^assets\/attention_core_fma-[\w-]+\.wasm$/);
    const scripts = b.files.filter((f) => /\.m?js$/.test(f));
    // the code that reads files a chunk loaded on first use, and what it shares with the app a chunk (named after one of its modules)
    assert.deepEqual(emitted(scripts), ["attention_core_mt.mjs", "attention_core_mt.worker.js", "checkpoint-calls.js", "handles.js", "head-split-worker.js", "index.js"], "the threaded glue and its worker (a file, not a data: URL), the code that reads files and what it shares with the app, the head split's Worker, the app");
    assert.doesNotMatch(b.code, /["']node:|require\(["']fs["']\)/);
    const { result, problems, missing, wasm } = await run("vite/");
    assert.deepEqual(result, { ...expectedFma, split: "same bits", reads: "safetensors 1" });
    assert.deepEqual([problems, missing], [[], []]);
    assert.deepEqual([...new Set(wasm.map((w) => w.path))], [`/vite/${wasmFile}`]);
  });

  test("rollup with @rollup/plugin-node-resolve and @web/rollup-plugin-import-meta-assets: it emits the .wasm; the page runs with Node's bits", async () => {
    const b = built.rollup;
    assert.deepEqual(b.warnings, []);
    const wasmFiles = b.files.filter((f) => f.endsWith(".wasm"));
    assert.deepEqual(emitted(wasmFiles), ["attention_core.wasm", "attention_core_fma.wasm", "attention_core_mt.wasm", "attention_core_mt_fma.wasm"], "the four binaries emitted");
    const wasmFile = wasmFiles.find((f) => f.startsWith("assets/attention_core_fma-"));
    assert.match(wasmFile, /^assets\/attention_core_fma-[\w-]+\.wasm$/);
    // the code that reads files a chunk loaded on first use, and what it shares with the app a chunk
    assert.deepEqual(emitted(b.files.filter((f) => !f.endsWith(".wasm"))), ["attention_core_mt.mjs", "attention_core_mt.worker.js", "checkpoint-calls.js", "handles.js", "rollup.js"]);
    assert.doesNotMatch(b.code, /["']node:|require\(["']fs["']\)/);
    const { result, problems, missing, wasm } = await run("rollup/");
    assert.deepEqual(result, { ...expectedFma, reads: "safetensors 1" });
    assert.deepEqual([problems, missing], [[], []]);
    assert.deepEqual(wasm, [{ path: `/rollup/${wasmFile}`, status: 200, type: "application/wasm" }]);
  });
});
