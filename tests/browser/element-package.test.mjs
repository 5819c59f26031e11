// The element and the page from the npm package (issue 41.1). The tarball (tests/pack.mjs), installed
// offline once into an empty project, then:
// - `import "attention-lab/element"` bundled by Vite 8 and webpack 5 with no configuration (they bundle
//   the widget's Worker and emit its style sheet and .wasm), by esbuild (ES module output) and Rollup
//   (@rollup/plugin-node-resolve), each with the Worker as a second entry point and the element's
//   style.css and the core's files copied beside the bundle, and from a plain page through an import map;
// - TypeScript (strict, bundler and nodenext resolution) in that project: the export's types name the
//   tag in HTMLElementTagNameMap, run() and the events' details;
// - esbuild's default output (a classic script, where import.meta.url is empty): the widget says why it
//   cannot start (wasm_url) and the console how to bundle it;
// - `npx attention-lab` in that project, with a PATH that has node, npx and sh and nothing else (no emcc,
//   no compiler): it serves the teaching page on a free port.
// Every host is served cross-origin isolated (COOP/COEP) and opened in Chromium. The widget's first run
// is the book's MultiHeadAttention(3, 2, 6, 0.0, 2) on its six tokens, batch 2, seed 123, with Node's bits
// (the same fused multiply-add binary: tests/browser/helpers.mjs inNodeWithRelaxedSimd); then a run large
// enough for the widget's Worker (MultiHeadAttention(64, 64, 256, 0.0, 4) on 256 seeded tokens) runs
// there, with Node's bits, on the machine's cores (at most 4): the core's threaded files sit beside the
// Worker's script (esbuild, Rollup, the import map, npx), or the bundler emitted them (Vite, webpack: the
// library names each by new URL("./attention_core_mt….", import.meta.url)).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import * as esbuild from "esbuild";
import webpack from "webpack";
import { build as viteBuild, createServer as viteServer } from "vite";
import sirv from "sirv";
import { ISOLATION_HEADERS, SECURITY_HEADERS } from "../../bin/page-server.mjs";
import { ROOT, inNodeWithRelaxedSimd, installPackedTarball, launchChromium } from "./helpers.mjs";

// Rollup and its resolver are devDependencies of the bundler recipes (docs/bundlers.md); without them
// (a tree before those landed) the Rollup case says so and is skipped.
const rollupTools = await Promise.all([import("rollup"), import("@rollup/plugin-node-resolve")]).then(([r, n]) => ({ rollup: r.rollup, nodeResolve: n.nodeResolve }), () => null);

const BOOK = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };
const BIG = { d_in: 64, d_out: 64, context_length: 256, dropout: 0.0, num_heads: 4 };
const THREADED = /\/attention_core_mt(_fma)?\.(wasm|mjs)$/;

// The widget's two runs in Node: the book's example as the widget runs it by default (book tokens
// stacked twice, seed 123, training mode: dropout 0.0 changes nothing) and the large one, its output's SHA-256.
const NODE_RUNS = `
const lab = await loadAttentionLab();
const x = lab.bookTokens();
const batch = { shape: [2, ...x.shape], data: new Float32Array([...x.data, ...x.data]) };
const book = lab.run("MultiHeadAttention", ${JSON.stringify(BOOK)}, batch, { seed: 123, training: true, trace: false }).output;
const big = lab.run("MultiHeadAttention", ${JSON.stringify(BIG)}, { shape: [1, 256, 64], data: lab.seededTokens(256, 64, 123).data }, { seed: 123, training: false, trace: false }).output;
const { createHash } = await import("node:crypto");
console.log(JSON.stringify({ kernel: lab.kernel, book: { shape: book.shape, data: Array.from(book.data) }, big: { shape: big.shape, sha256: createHash("sha256").update(new Uint8Array(big.data.buffer, big.data.byteOffset, big.data.byteLength)).digest("hex") } }));
process.exit(0);`;

/** The page a bundle is loaded from (`script`: its tag), with one widget. */
const hostPage = (title, script) => `<!doctype html><meta charset="utf-8"><title>${title}</title>\n<attention-lab></attention-lab>\n${script}\n`;

/** webpack 5 through its Node API: production mode and the entry, nothing else. */
function runWebpack(context, entry, outDir) {
  return new Promise((resolve, reject) => {
    const compiler = webpack({ mode: "production", context, entry, target: "web", output: { path: outDir, filename: "main.js" }, performance: { hints: false } });
    compiler.run((err, stats) => compiler.close(() => {
      if (err) reject(err);
      else if (stats.hasErrors()) reject(new Error(stats.toString({ all: false, errors: true })));
      else resolve(stats.toJson({ all: false, warnings: true }).warnings.map((w) => w.message));
    }));
  });
}

/** The element's style sheet and the core's files (web/lib/attention_core*) copied into `out`, as the esbuild and Rollup recipes say. */
function copyBeside(app, out) {
  const pkg = path.join(app, "node_modules", "attention-lab", "web");
  cpSync(path.join(pkg, "app", "style.css"), path.join(out, "style.css"));
  for (const f of readdirSync(path.join(pkg, "lib")).filter((n) => n.startsWith("attention_core"))) cpSync(path.join(pkg, "lib", f), path.join(out, f));
}

/** What the widget on `url` gives: its first run (the book's example) and a large run in its Worker, with what the page reported. */
async function widgetRuns(context, url) {
  const page = await context.newPage();
  const problems = [];
  const missing = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/Failed to load resource: the server responded with a status of 404/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  const threaded = [];
  page.on("response", (r) => {
    const where = new URL(r.url()).pathname;
    if (r.status() >= 400) (THREADED.test(where) && r.status() === 404 ? missing : problems).push(where);
    else if (/attention_core_mt/.test(where)) threaded.push(where);
  });
  await page.goto(url);
  const runs = await page.evaluate(async ([big]) => {
    const el = document.querySelector("attention-lab");
    const sha256 = async (a) => Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(a.buffer, a.byteOffset, a.byteLength))), (b) => b.toString(16).padStart(2, "0")).join("");
    const reason = () => el.shadowRoot.querySelector("[data-testid=run-reason]").dataset;
    const first = await el.run();
    const book = { shape: first.outputShape, data: Array.from(first.output.data), where: reason().where, kernel: reason().kernel };
    for (const [name, value] of Object.entries({ call: big, num_tokens: "256", batch: "1", mode: "eval" })) el.setAttribute(name, value);
    const second = await el.run();
    return { isolated: globalThis.crossOriginIsolated, cores: navigator.hardwareConcurrency, book, big: { shape: second.outputShape, sha256: await sha256(second.output.data), where: reason().where, threads: reason().threads, kernel: reason().kernel } };
  }, [`MultiHeadAttention(${Object.values(BIG).join(", ")})`]);
  const workers = page.workers().map((w) => new URL(w.url()).pathname);
  await page.close();
  return { ...runs, workers, problems, missing: [...new Set(missing)].sort(), threaded: [...new Set(threaded)].sort() };
}

describe("the element and the page from the npm package", () => {
  let dir;
  let app;
  let server;
  let context;
  let expected;
  const warnings = {};
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-element-"));
    app = installPackedTarball(dir, "app");
    const site = path.join(dir, "site");
    writeFileSync(path.join(app, "main.js"), 'import "attention-lab/element";\n');
    // a plain page, no bundler: the import map names the element's module in node_modules
    writeFileSync(path.join(app, "importmap.html"), hostPage("import map", `<script type="importmap">{"imports": {"attention-lab/element": "./node_modules/attention-lab/web/app/attention-lab-element.js"}}</script>
<script type="module" src="./main.js"></script>`));
    // vite build: its index.html and main.js, no configuration but the base it is served under
    writeFileSync(path.join(app, "index.html"), hostPage("vite", '<script type="module" src="./main.js"></script>'));
    await viteBuild({ root: app, base: "/site/vite/", configFile: false, logLevel: "silent", build: { outDir: path.join(site, "vite"), emptyOutDir: true } });
    // webpack: mode and entry
    warnings.webpack = await runWebpack(app, "./main.js", path.join(site, "webpack"));
    writeFileSync(path.join(site, "webpack", "index.html"), hostPage("webpack", '<script src="./main.js"></script>'));
    // esbuild main.js run-worker=node_modules/attention-lab/web/app/run-worker.js --bundle --format=esm --splitting --outdir=site/esbuild
    const es = await esbuild.build({ absWorkingDir: app, entryPoints: { main: "main.js", "run-worker": "node_modules/attention-lab/web/app/run-worker.js" }, bundle: true, format: "esm", splitting: true, outdir: path.join(site, "esbuild"), logLevel: "silent" });
    warnings.esbuild = es.warnings.map((w) => w.text);
    copyBeside(app, path.join(site, "esbuild"));
    writeFileSync(path.join(site, "esbuild", "index.html"), hostPage("esbuild", '<script type="module" src="./main.js"></script>'));
    // esbuild's default browser output, a classic script: the element has no URL of its own
    await esbuild.build({ absWorkingDir: app, entryPoints: ["main.js"], bundle: true, outdir: path.join(site, "iife"), logLevel: "silent" });
    writeFileSync(path.join(site, "iife", "index.html"), hostPage("iife", '<script src="./main.js"></script>'));
    if (rollupTools) {
      // rollup: two inputs, the element's dependencies resolved from node_modules (browser: true)
      const seen = [];
      const bundle = await rollupTools.rollup({
        input: { main: path.join(app, "main.js"), "run-worker": path.join(app, "node_modules/attention-lab/web/app/run-worker.js") },
        plugins: [rollupTools.nodeResolve({ browser: true, rootDir: app })],
        onwarn: (w) => seen.push(w.code),
      });
      await bundle.write({ dir: path.join(site, "rollup"), format: "es", entryFileNames: "[name].js" });
      await bundle.close();
      warnings.rollup = seen;
      copyBeside(app, path.join(site, "rollup"));
      writeFileSync(path.join(site, "rollup", "index.html"), hostPage("rollup", '<script type="module" src="./main.js"></script>'));
    }
    const files = sirv(dir, { dev: true, setHeaders: (res) => { for (const [k, v] of Object.entries(ISOLATION_HEADERS)) res.setHeader(k, v); } });
    server = http.createServer((req, res) => files(req, res, () => { res.statusCode = 404; res.end(); }));
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    context = await launchChromium(path.join(dir, "profile"));
    expected = inNodeWithRelaxedSimd(NODE_RUNS);
  });
  after(async () => {
    await context?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const at = (route) => `http://127.0.0.1:${server.address().port}/${route}`;

  /** The checks every host shares: isolation, the book's example and the large run with Node's bits, in the Worker on `threads`. */
  function assertRuns(got, threads, workerScript) {
    assert.equal(expected.kernel, "relaxed_madd");
    assert.equal(got.isolated, true, "served with COOP/COEP: cross-origin isolated");
    assert.deepEqual(got.book, { ...expected.book, where: "page", kernel: "relaxed_madd" }, "the book's MultiHeadAttention(3, 2, 6, 0.0, 2), batch 2: Node's bits");
    assert.deepEqual(got.book.data.slice(0, 2).map((v) => v.toFixed(4)), ["0.3190", "0.4858"], "the README's numbers");
    assert.deepEqual(got.big, { ...expected.big, where: "worker", threads: String(threads === "cores" ? Math.min(got.cores, 4) : threads), kernel: "relaxed_madd" });
    assert.ok(got.workers.some((w) => workerScript.test(w)), `the widget's Worker is ${workerScript} (${got.workers.join(", ")})`);
    assert.deepEqual(got.problems, []);
  }

  test("vite build with no configuration: the widget, its style sheet and its bundled Worker, on the threads of the threaded files Vite emitted", async () => {
    const got = await widgetRuns(context, at("site/vite/"));
    assertRuns(got, "cores", /^\/site\/vite\/assets\/run-worker-[\w-]+\.js$/);
    assert.deepEqual(got.missing, []);
    // the pthread workers: the emitted worker file (not a data: URL), as many as threads - 1
    const pool = got.workers.filter((w) => /^\/site\/vite\/assets\/attention_core_mt\.worker-[\w-]+\.js$/.test(w));
    assert.equal(pool.length, Number(got.big.threads) - 1, got.workers.join(", "));
    // what the threads loaded: the emitted glue, its worker and the fused threaded binary, by their hashed names
    const kinds = [/^attention_core_mt-[\w-]+\.mjs$/, /^attention_core_mt\.worker-[\w-]+\.js$/, /^attention_core_mt_fma-[\w-]+\.wasm$/];
    assert.deepEqual(got.threaded.map((p) => kinds.findIndex((re) => re.test(p.replace("/site/vite/assets/", "")))), [0, 1, 2], got.threaded.join(", "));
  });

  test("vite's dev server with COOP/COEP and no other configuration: the widget's Worker runs on threads (the pthread workers are module Workers, which hold what Vite adds)", async () => {
    const dev = await viteServer({ root: app, configFile: false, logLevel: "silent", server: { host: "127.0.0.1", port: 0, strictPort: false, headers: ISOLATION_HEADERS } });
    try {
      await dev.listen();
      const got = await widgetRuns(context, dev.resolvedUrls.local[0]);
      assertRuns(got, "cores", /^\/node_modules\/attention-lab\/web\/app\/run-worker\.js$/);
      assert.deepEqual(got.missing, []);
      assert.equal(got.workers.filter((w) => w === "/node_modules/attention-lab/web/lib/attention_core_mt.worker.js").length, Number(got.big.threads) - 1, got.workers.join(", "));
    } finally {
      await dev.close();
    }
  });

  test("webpack 5 with no configuration: the widget and its bundled Worker, on the threads of the threaded files webpack emitted, no warning", async () => {
    assert.deepEqual(warnings.webpack, []);
    const got = await widgetRuns(context, at("site/webpack/"));
    assertRuns(got, "cores", /^\/site\/webpack\/\d+\.main\.js$/);
    assert.deepEqual(got.missing, []);
    assert.equal(got.workers.filter((w) => /^\/site\/webpack\/[\da-f]+\.js$/.test(w)).length, Number(got.big.threads) - 1, got.workers.join(", "));
  });

  test("esbuild --format=esm with the Worker as a second entry and the files copied beside: the widget runs its Worker on threads", async () => {
    assert.deepEqual(warnings.esbuild, []);
    const got = await widgetRuns(context, at("site/esbuild/"));
    assertRuns(got, "cores", /^\/site\/esbuild\/run-worker\.js$/);
    assert.deepEqual(got.missing, []);
  });

  test("esbuild's default output (a classic script, no import.meta.url): the widget says why it cannot start and the console how to bundle it", async () => {
    const page = await context.newPage();
    const seen = [];
    page.on("console", (m) => seen.push(`${m.type()}: ${m.text()}`));
    page.on("pageerror", (e) => seen.push(`page error: ${e.message}`));
    await page.goto(at("site/iife/"));
    await page.locator("attention-lab[data-load-error]").waitFor({ timeout: 60_000 });
    const outcome = await page.evaluate(() => document.querySelector("attention-lab").run().then(() => null, (e) => ({ code: e.code, message: e.message })));
    assert.equal(outcome.code, "wasm_url");
    assert.match(outcome.message, /cannot be located: this copy of attention-lab\.js has no URL of its own \(bundled into a classic script/);
    assert.ok(seen.some((line) => /^warning: attention-lab: the <attention-lab> element has no URL of its own .*bundle it as an ES module \(esbuild --format=esm\)/.test(line)), seen.join("\n"));
    assert.deepEqual(seen.filter((line) => /^(error|page error)/.test(line)), []);
    await page.close();
  });

  test("rollup with @rollup/plugin-node-resolve, the Worker as a second input and the files copied beside: the widget runs its Worker on threads", { skip: !rollupTools && "rollup and @rollup/plugin-node-resolve are not installed (devDependencies of the bundler recipes)" }, async () => {
    // the vendored GPT-2 tokenizer's modules import each other (what rollup warns about), nothing else
    assert.deepEqual([...new Set(warnings.rollup)], ["CIRCULAR_DEPENDENCY"]);
    const got = await widgetRuns(context, at("site/rollup/"));
    assertRuns(got, "cores", /^\/site\/rollup\/run-worker\.js$/);
    assert.deepEqual(got.missing, []);
  });

  test("a plain page, no bundler: an import map into node_modules; the widget's Worker is the package's run-worker.js, on threads", async () => {
    const got = await widgetRuns(context, at("app/importmap.html"));
    assertRuns(got, "cores", /^\/app\/node_modules\/attention-lab\/web\/app\/run-worker\.js$/);
    assert.deepEqual(got.missing, []);
  });

  test("TypeScript strict, bundler and nodenext resolution: import \"attention-lab/element\" types the tag, run() and the events; a wrong use fails", () => {
    const source = (misuse) => `import "attention-lab/element";
import type { AttentionLabElement, RunCompleteDetail } from "attention-lab/element";
export async function host(): Promise<number[]> {
  const el = document.querySelector("attention-lab");
  if (el === null) return [];
  const same: AttentionLabElement = el;
  el.addEventListener("load-error", (e) => console.log(e.detail.code, e.detail.hint));
  const detail: RunCompleteDetail = await same.run();
  ${misuse ? "const wrong: string = detail.outputShape;" : "const shape: number[] = detail.outputShape;"}
  return ${misuse ? "[]" : "shape"};
}
`;
    const tsc = path.join(ROOT, "node_modules", ".bin", "tsc");
    for (const resolution of ["bundler", "nodenext"]) {
      for (const misuse of [false, true]) {
        const project = path.join(app, `ts-${resolution}-${misuse ? "misuse" : "use"}`);
        mkdirSync(project);
        const file = resolution === "bundler" ? "host.ts" : "host.mts"; // an ES module under nodenext, as the package is
        writeFileSync(path.join(project, file), source(misuse));
        const module = resolution === "bundler" ? "esnext" : "nodenext";
        writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: "es2022", module, moduleResolution: resolution, lib: ["es2022", "dom"], types: [], skipLibCheck: false }, files: [file] }));
        const r = spawnSync(tsc, ["-p", project], { encoding: "utf8" });
        if (misuse) {
          assert.notEqual(r.status, 0, `${resolution}: the misuse compiled`);
          assert.match(r.stdout, /host\.m?ts\(9,\d+\): error TS2322: Type 'number\[\]' is not assignable to type 'string'/, resolution);
        } else assert.equal(r.status, 0, `${resolution}: ${r.stdout}${r.stderr}`);
      }
    }
  });

  test("npx attention-lab, with no emcc or compiler on PATH: the teaching page on a free port, isolated, runs the book's example and its large runs on threads", async () => {
    // PATH: node, npx and sh (npx runs a bin through sh), nothing else
    const bin = path.join(dir, "path-bin");
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, "node"));
    symlinkSync(spawnSync("sh", ["-c", "command -v npx"], { encoding: "utf8" }).stdout.trim(), path.join(bin, "npx"));
    symlinkSync("/bin/sh", path.join(bin, "sh"));
    const env = { ...process.env, PATH: bin };
    delete env.PORT;
    for (const tool of ["emcc", "em++", "cmake", "c++", "gcc", "clang"]) assert.notEqual(spawnSync("/bin/sh", ["-c", `command -v ${tool}`], { env }).status, 0, `${tool} is not on the PATH`);
    const child = spawn("npx", ["--offline", "attention-lab"], { cwd: app, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    try {
      const url = await new Promise((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d) => {
          out += d;
          const m = /^attention-lab \d+\.\d+\.\d+\S* is running at (http:\/\/127\.0\.0\.1:(\d+)\/)$/m.exec(out);
          if (m) resolve(m[1]);
        });
        child.stderr.on("data", (d) => (out += d));
        child.on("exit", (code) => reject(new Error(`npx attention-lab exited ${code}: ${out}`)));
      });
      assert.notEqual(new URL(url).port, "8080", "a free port");
      const res = await fetch(url);
      assert.equal(res.status, 200);
      for (const [k, v] of Object.entries({ ...ISOLATION_HEADERS, ...SECURITY_HEADERS })) assert.equal(res.headers.get(k), v, k);
      assert.equal((await fetch(`${url}embed`)).status, 200, "the embedding example");
      assert.equal((await fetch(`${url}lib/attention_core_mt_fma.wasm`)).headers.get("content-type"), "application/wasm");
      const got = await widgetRuns(context, url);
      assertRuns(got, "cores", /^\/app\/run-worker\.js$/);
      assert.deepEqual(got.missing, []);
    } finally {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already ended
      }
    }
  });
});
