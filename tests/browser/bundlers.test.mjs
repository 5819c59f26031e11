// The npm tarball through the two bundlers users reach for, each bundle run in Chromium. `npm pack`,
// installed offline into an empty project, then one small app bundled from it:
// - esbuild `--bundle --platform=browser` (a classic-script IIFE, where import.meta is empty), the
//   .wasm imported through the package's exports (`attention-lab/attention_core.wasm`, copied by
//   `--loader:.wasm=file`) and handed over as `wasmUrl`;
// - webpack 5 with no configuration beyond mode and entry: it follows the library's
//   `new URL("./attention_core.wasm", import.meta.url)` and emits the .wasm as an asset by itself;
// - Vite 8's production build with no configuration, which follows the same pattern.
// Each bundle is served by a plain static server; the page's numbers must be Node's, bit for bit, from
// the same binary: Chromium has relaxed SIMD, so webpack's and Vite's default load is the fused
// multiply-add binary (checked against Node running it with --experimental-wasm-relaxed-simd), and
// esbuild's, given the exported attention_core.wasm, the plain one (against Node's default).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import * as esbuild from "esbuild";
import webpack from "webpack";
import { build as viteBuild } from "vite";
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

const APPS = {
  // no wasmUrl first: an IIFE bundle has no URL of its own, so the library must say so (and forget
  // the failed load); then the URL esbuild gives the exported .wasm
  esbuild: `import { loadAttentionLab, AttentionError } from "attention-lab";
import wasmUrl from "attention-lab/attention_core.wasm";
${RUN}
loadAttentionLab().then(() => "loaded without wasmUrl", codeOf).then((before) =>
  loadAttentionLab({ wasmUrl }).then((lab) => show({ ...facts(lab), before }), (e) => show({ error: codeOf(e), message: e.message })));
`,
  // nothing to say: webpack located the .wasm; a second call naming another .wasm is refused
  webpack: `import { loadAttentionLab, AttentionError } from "attention-lab";
${RUN}
loadAttentionLab().then(async (lab) => {
  const again = await loadAttentionLab().then((other) => other === lab, codeOf);
  const elsewhere = await loadAttentionLab({ wasmUrl: "/elsewhere/attention_core.wasm" }).then(() => "loaded twice", codeOf);
  show({ ...facts(lab), again, elsewhere });
}, (e) => show({ error: codeOf(e), message: e.message }));
`,
  // an ES module app (top-level await), the .wasm located by Vite
  vite: `import { loadAttentionLab, AttentionError } from "attention-lab";
${RUN}
try {
  show(facts(await loadAttentionLab()));
} catch (e) {
  show({ error: codeOf(e), message: e.message });
}
`,
};

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

describe("the npm tarball bundled by esbuild, webpack 5 and Vite", () => {
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
    for (const [name, source] of Object.entries(APPS)) {
      writeFileSync(path.join(app, `${name}.js`), source);
      if (name === "vite") continue;  // Vite writes its own index.html from the app's
      mkdirSync(path.join(site, name), { recursive: true });
      writeFileSync(path.join(site, name, "index.html"), `<!doctype html><meta charset="utf-8"><title>${name}</title><pre id="out"></pre><script src="./${name}.js"></script>`);
    }
    // esbuild app.js --bundle --platform=browser --loader:.wasm=file --outdir=site/esbuild
    const es = await esbuild.build({ absWorkingDir: app, entryPoints: ["esbuild.js"], bundle: true, platform: "browser", loader: { ".wasm": "file" }, outdir: path.join(site, "esbuild"), logLevel: "silent", metafile: true });
    built.esbuild = { warnings: es.warnings.map((w) => w.text), files: Object.keys(es.metafile.outputs).map((f) => path.basename(f)).sort() };
    const wp = await runWebpack(app, "./webpack.js", path.join(site, "webpack"));
    built.webpack = { warnings: wp.warnings.map((w) => w.message), files: wp.assets.map((a) => a.name).sort() };
    // vite build, from the app's index.html, with the base the site serves it under
    writeFileSync(path.join(app, "index.html"), `<!doctype html><meta charset="utf-8"><title>vite</title><pre id="out"></pre><script type="module" src="./vite.js"></script>`);
    const vite = await viteBuild({ root: app, base: "/vite/", configFile: false, logLevel: "silent", build: { outDir: path.join(site, "vite"), emptyOutDir: true } });
    built.vite = { files: vite.output.map((o) => o.fileName).sort() };
    for (const name of ["esbuild", "webpack"]) built[name].code = readFileSync(path.join(site, name, `${name}.js`), "utf8");
    built.vite.code = vite.output.filter((o) => o.type === "chunk").map((o) => o.code).join("\n");
    const files = sirv(site);
    server = http.createServer((req, res) => files(req, res, () => { res.statusCode = 404; res.end(); }));
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

  /** Opens site/<name>/, waits for the app's result and returns it with the page's errors and the .wasm requests. */
  async function run(name) {
    const page = await context.newPage();
    const problems = [];
    const wasm = [];
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("response", (r) => {
      if (r.status() >= 400 && !r.url().includes("/elsewhere/")) problems.push(`HTTP ${r.status()} ${r.url()}`);
      if (r.url().endsWith(".wasm")) wasm.push({ path: new URL(r.url()).pathname, status: r.status(), type: r.headers()["content-type"] });
    });
    await page.goto(`http://127.0.0.1:${server.address().port}/${name}/`);
    await page.waitForFunction(() => document.getElementById("out").textContent !== "", null, { timeout: 60_000 });
    const result = JSON.parse(await page.locator("#out").textContent());
    await page.close();
    return { result, problems, wasm };
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

  test("esbuild --bundle --platform=browser: no node: module in the bundle; the exported .wasm is copied and, passed as wasmUrl, runs with Node's bits", async () => {
    const b = built.esbuild;
    assert.deepEqual(b.warnings, []);
    const wasmFile = b.files.find((f) => f.endsWith(".wasm"));
    assert.deepEqual(b.files.filter((f) => f !== wasmFile), ["esbuild.js"]);
    assert.match(wasmFile, /^attention_core-[A-Z0-9]+\.wasm$/);
    assert.doesNotMatch(b.code, /["']node:|require\(["']fs["']\)/);
    const { result, problems, wasm } = await run("esbuild");
    assert.deepEqual(result, { ...expected, before: "wasm_url" });
    assert.deepEqual(problems, []);
    assert.deepEqual(wasm, [{ path: `/esbuild/${wasmFile}`, status: 200, type: "application/wasm" }]);
  });

  test("webpack 5 with no configuration: it emits the .wasm itself; the bundle runs with Node's bits and a second load from elsewhere is refused", async () => {
    const b = built.webpack;
    assert.deepEqual(b.warnings, []);
    const wasmAssets = b.files.filter((f) => f.endsWith(".wasm"));
    assert.deepEqual(b.files.filter((f) => !f.endsWith(".wasm")), ["webpack.js"]);
    assert.equal(wasmAssets.length, 2, "both binaries emitted (the plain one and the relaxed-SIMD one)");
    assert.doesNotMatch(b.code, /["']node:|require\(["']fs["']\)/);
    const { result, problems, wasm } = await run("webpack");
    assert.deepEqual(result, { ...expectedFma, again: true, elsewhere: "wasm_loaded" });
    assert.deepEqual(problems, []);
    assert.equal(wasm.length, 1, "one binary fetched");
    assert.ok(wasmAssets.map((f) => `/webpack/${f}`).includes(wasm[0].path), wasm[0].path);
    assert.deepEqual(wasm, [{ path: wasm[0].path, status: 200, type: "application/wasm" }]);
    assert.deepEqual(readdirSync(path.join(dir, "site", "webpack")).sort(), [...b.files, "index.html"].sort());
  });

  test("vite build with no configuration: it emits the .wasm itself; the page runs with Node's bits", async () => {
    const b = built.vite;
    const wasmFiles = b.files.filter((f) => f.endsWith(".wasm"));
    assert.equal(wasmFiles.length, 2, "both binaries emitted");
    const wasmFile = wasmFiles.find((f) => f.startsWith("assets/attention_core_fma-"));
    assert.match(wasmFile, /^assets\/attention_core_fma-[\w-]+\.wasm$/);
    assert.equal(b.files.filter((f) => f.endsWith(".js")).length, 1);
    assert.doesNotMatch(b.code, /["']node:|require\(["']fs["']\)/);
    const { result, problems, wasm } = await run("vite");
    assert.deepEqual(result, expectedFma);
    assert.deepEqual(problems, []);
    assert.deepEqual(wasm, [{ path: `/vite/${wasmFile}`, status: 200, type: "application/wasm" }]);
  });
});
