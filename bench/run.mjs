// npm run bench: one invocation, every engine, interleaved. Speed targets live here, not in timed tests.
//
// GPT-2 small attention, MultiHeadAttention(768, 768, 1024, 0.0, 12), eval mode, batch 1, causal, on
// T in {6, 64, 256, 1024} tokens (the same seeded module and input everywhere we control them):
//   wasm-node      our WASM through the public API in Node, one thread, in a child process (bench/wasm-threads.mjs
//                  --threads 1): lab.create once, m.forward(x, {training: false})
//   wasm-chromium  the same in headless Debian Chromium (bench/browser.html, served here)
//   native         build/native/attention_lab_native_bench (the core linked natively)
//   torch          /usr/bin/python3 bench/torch_bench.py: nn.MultiheadAttention on one thread, OpenBLAS
//   tfjs-wasm      TF.js 4.22 WASM backend, one thread, SIMD (bench/tfjs-mha.mjs), checked against ours
//   tfjs-wasm-chromium  the same in Chromium on the isolated page, threaded build, the cores (at most 4) (bench/tfjs-browser.html)
//   ort-wasm       onnxruntime-web 1.30's WASM execution provider in Node, one thread, on the book's MultiHeadAttention
//                  as torch.onnx.export writes it with our parameters (bench/onnx_export.py, bench/ort-node.mjs)
//   ort-wasm-mt    the same on numThreads = the cores (at most 4), as ours threaded
//   ort-wasm-chromium   the same in Chromium on the isolated page, numThreads = the cores (at most 4) (bench/ort-browser.html)
// Timing: ROUNDS rounds; in each round every T runs on every engine in turn (the engine order rotates),
// each a warm-up plus REPS timed forwards; an engine's figure for T is the smallest of its per-round
// medians. Ratios are against torch. Plus: GFLOP/s and the fraction of a measured f32x4 peak (when the
// kernel bench is built), peak memory at T = 1024 with and without trace (child processes), and the
// teaching page in Chromium (first-view bytes, time to first output, edit -> rendered trace, GPT-2 small
// on 1024 tokens traced and rendered), and parsing a safetensors header of a million keys natively and
// in WASM (bench/header.mjs, a child process). Every part fails soft: a missing engine prints "n/a" and why.
//
// Environment: BENCH_QUICK=1 a fast smoke run (1 round, few reps, 1 page repetition)
//              BENCH_ROUNDS, BENCH_TOKENS=6,64  override rounds / token counts
//              BENCH_SKIP=torch,chromium,...    leave parts out (engines by name; memory, page, header)
//              BENCH_OUT=path                   where the JSON goes (default bench/results/latest.json;
//                                               quick.json for BENCH_QUICK, not committed)
import { spawn, execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import zlib from "node:zlib";
import { loadAttentionLab } from "attention-lab";
import { baselineLine, bestOf, judgeBaseline, measureNativeGemm, torchEnv } from "./baseline.mjs";
import { describe as describeHeader } from "./header.mjs";
import { checksum as sum } from "./timing.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const QUICK = process.env.BENCH_QUICK === "1";
const TOKENS = (process.env.BENCH_TOKENS ?? "6,64,256,1024").split(",").map(Number).filter((t) => t >= 1 && t <= 1024);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 5));
const REPS = (T) => (QUICK ? (T <= 64 ? 3 : 1) : T <= 6 ? 21 : T <= 64 ? 11 : T <= 256 ? 5 : 3);
const PAGE_REPS = QUICK ? 1 : 3;
const SKIP = new Set((process.env.BENCH_SKIP ?? "").split(",").map((s) => s.trim()).filter(Boolean));
// A smoke run never replaces the full run's file.
const OUT = path.resolve(ROOT, process.env.BENCH_OUT ?? (QUICK ? "bench/results/quick.json" : "bench/results/latest.json"));
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const D = 768;
const H = 12;
const HD = D / H;
const CONFIG = { d_in: D, d_out: D, context_length: 1024, dropout: 0.0, num_heads: H };
const CALL = "MultiHeadAttention(768, 768, 1024, 0.0, 12)";
const FLOP_FORMULA = "flop(T) = 8*T*d^2 (q, k, v, out projections: 4 x 2*T*d*d) + 2*2*H*head_dim*T*(T+1)/2 (scores and context, causal half skipped); d = 768, H = 12, head_dim = 64";
const flop = (T) => 8 * T * D * D + 2 * 2 * H * HD * (T * (T + 1)) / 2;
const GPT2_PAGE_QUERY = "?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0&num_heads=12&seed=123&num_tokens=1024&batch=1&mode=eval";

const ENGINES = ["wasm-node", "wasm-node-mt", "wasm-chromium", "wasm-chromium-static", "wasm-chromium-split", "native", "torch", "torch-2t", "tfjs-wasm", "tfjs-wasm-chromium", "ort-wasm", "ort-wasm-mt", "ort-wasm-chromium"];
/** The WASM rows (ours and the peers): their GFLOP/s are also quoted as a fraction of the f32x4 peak. */
const WASM_ENGINES = ENGINES.filter((e) => !["native", "torch", "torch-2t"].includes(e));
/** The threads of the threaded rows, as their cores reported them (filled in when they start). */
const ROW_THREADS = {};
const threadsText = (n) => (n == null ? "N threads" : n === 1 ? "1 thread" : `${n} threads`);
const LABELS = {
  "wasm-node": "ours WASM (Node, 1 thread)",
  get "wasm-node-mt"() { return `ours WASM (Node, ${threadsText(ROW_THREADS["wasm-node-mt"])})`; },
  get "wasm-chromium"() { return `ours WASM (Chromium isolated, ${threadsText(ROW_THREADS["wasm-chromium"])})`; },
  get "wasm-chromium-static"() { return `ours WASM (Chromium, static host, ${threadsText(ROW_THREADS["wasm-chromium-static"])})`; },
  get "wasm-chromium-split"() { return `ours WASM (Chromium, static host, heads over ${ROW_THREADS["wasm-chromium-split"] ?? "N"} plain Workers + the page)`; },
  native: "ours native", torch: "PyTorch 1 thread", "torch-2t": "PyTorch 2 threads", "tfjs-wasm": "TF.js WASM",
  get "tfjs-wasm-chromium"() { return `TF.js WASM (Chromium isolated, ${threadsText(ROW_THREADS["tfjs-wasm-chromium"])})`; },
  "ort-wasm": "onnxruntime-web (Node, 1 thread)",
  get "ort-wasm-mt"() { return `onnxruntime-web (Node, ${threadsText(ROW_THREADS["ort-wasm-mt"])})`; },
  get "ort-wasm-chromium"() { return `onnxruntime-web (Chromium isolated, ${threadsText(ROW_THREADS["ort-wasm-chromium"])})`; },
};
/** The thread count of each onnxruntime-web row in Node (the threaded one as ours threaded: the cores, at most 4). */
const ORT_THREADS = { "ort-wasm": 1, "ort-wasm-mt": Math.min(os.availableParallelism?.() ?? os.cpus().length, 4) };
/** The thread count of each PyTorch engine (its baseline is judged at that count). */
const TORCH_THREADS = { torch: 1, "torch-2t": 2 };

const median = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const errText = (e) => String(e?.message ?? e).split("\n")[0].slice(0, 300);
const log = (...a) => console.error("bench:", ...a);
const withTimeout = (promise, ms, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms / 1000} s`)), ms).unref())]);

/** A child process that answers one JSON line per request line (native bench, torch bench). */
function lineProcess(cmd, args, options) {
  const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"], ...options });
  const lines = [];
  const waiters = [];
  let stderr = "";
  let exited = null;
  child.stderr.on("data", (d) => { stderr = (stderr + d).slice(-4000); });
  child.on("error", (e) => { exited = e; for (const w of waiters.splice(0)) w.reject(e); });
  child.on("exit", (code, signal) => {
    exited = new Error(`${path.basename(cmd)} exited (${signal ?? code}): ${stderr.trim().split("\n").slice(-2).join(" ")}`);
    for (const w of waiters.splice(0)) w.reject(exited);
  });
  readline.createInterface({ input: child.stdout }).on("line", (l) => {
    if (!l.trim().startsWith("{")) return;
    if (waiters.length) waiters.shift().resolve(l);
    else lines.push(l);
  });
  const next = (ms) => {
    if (lines.length) return Promise.resolve(JSON.parse(lines.shift()));
    if (exited) return Promise.reject(exited);
    return withTimeout(new Promise((resolve, reject) => waiters.push({ resolve, reject })), ms, path.basename(cmd)).then(JSON.parse);
  };
  return {
    next,
    request(line, ms = 300_000) {
      child.stdin.write(`${line}\n`);
      return next(ms);
    },
    async close() {
      if (exited) return;
      child.stdin.end("quit\n");
      await withTimeout(new Promise((r) => child.once("exit", r)), 5_000, "close").catch(() => child.kill("SIGKILL"));
    },
  };
}

function run(cmd, args, options = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { maxBuffer: 16 << 20, timeout: 300_000, ...options }, (error, stdout, stderr) => resolve({ error, stdout, stderr }));
  });
}

// ---- engines ------------------------------------------------------------------------------------
// Each: {name, info, run(T, reps) -> {samples, checksum?}, close()}; a failed set-up leaves {name, reason}.

/**
 * Our Node rows: bench/wasm-threads.mjs in a child process (its own core), on one thread (wasm-node)
 * or the default in Node, the cores (wasm-node-mt); like the peers' Node rows, none runs in this
 * process, which holds the bench's data and its Chromium. Checked bit for bit against this process's
 * one-thread output (the same binary kind, simd128, at any thread count).
 */
async function wasmNodeEngine(expectedChecksum, name) {
  const p = lineProcess(process.execPath, [path.join(ROOT, "bench/wasm-threads.mjs"), ...(name === "wasm-node" ? ["--threads", "1"] : [])], { cwd: ROOT });
  const ready = await p.next(60_000);
  if (!ready.ready) throw new Error(JSON.stringify(ready));
  ROW_THREADS[name] = ready.threads;
  const check = {};
  for (const T of TOKENS) {  // the same binary kind as the parent's (simd128): the same bits at any thread count
    const r = await p.request(`${T} 0`);
    check[T] = { checksum: r.checksum, oneThreadChecksum: expectedChecksum(T) };
    if (r.error || r.checksum !== expectedChecksum(T)) throw new Error(r.error ?? `output on ${ready.threads} threads differs from one thread's at T=${T}: checksum ${r.checksum} vs ${expectedChecksum(T)}`);
  }
  return {
    info: { node: ready.node, threads: ready.threads, kernel: ready.kernel, check },
    async run(T, reps) {
      const r = await p.request(`${T} ${reps}`);
      if (r.error) throw new Error(r.error);
      return { samples: r.samples_ms, checksum: r.checksum };
    },
    close: () => p.close(),
  };
}

async function tfjsEngine(params, input, ours) {
  const { initTfjs, makeTfjsMha } = await import("./tfjs-mha.mjs");
  const info = await initTfjs(path.join(ROOT, "node_modules/@tensorflow/tfjs-backend-wasm/dist") + path.sep);
  const mha = makeTfjsMha(params, H);
  const check = {};
  for (const T of TOKENS) {
    const theirs = mha.forward(input(T).data, T);
    const expected = ours(T);
    let maxDiff = 0;
    let maxRef = 0;
    for (let i = 0; i < expected.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(expected[i] - theirs[i]));
      maxRef = Math.max(maxRef, Math.abs(expected[i]));
    }
    check[T] = { maxAbsDiff: maxDiff, maxAbsRef: maxRef };
    if (!(maxDiff <= 1e-4)) throw new Error(`TF.js output differs from ours at T=${T}: max |diff| = ${maxDiff}`);
  }
  return {
    info: { ...info, check },
    run(T, reps) {
      const x = input(T).data;
      let out = mha.forward(x, T);
      const samples = [];
      for (let i = 0; i < reps; i++) {
        const t0 = performance.now();
        out = mha.forward(x, T);
        samples.push(performance.now() - t0);
      }
      return { samples, checksum: sum(out) };
    },
    close: () => mha.dispose(),
  };
}

/** tmp/mha.onnx: bench/onnx_export.py's export of the book's MultiHeadAttention with our parameters (once). */
let onnxModel = null;
function exportOnnx(tmp) {
  onnxModel ??= (async () => {
    if (!existsSync("/usr/bin/python3")) throw new Error("/usr/bin/python3 is missing (bash bench/setup.sh installs python3-torch)");
    const file = path.join(tmp, "mha.onnx");
    const r = await run("/usr/bin/python3", [path.join(ROOT, "bench/onnx_export.py"), "--weights", path.join(tmp, "weights.f32"), "--out", file], { cwd: ROOT });
    let answer;
    try { answer = JSON.parse(r.stdout.trim().split("\n").pop()); } catch { throw new Error(`bench/onnx_export.py: ${errText(r.error ?? r.stderr ?? "no output")}`); }
    if (!answer.ok) throw new Error(`bench/onnx_export.py: ${answer.error}`);
    return { file, bytes: answer.bytes, torch: answer.torch };
  })();
  return onnxModel;
}

/** An onnxruntime-web row in Node: bench/ort-node.mjs in its own process on `threads` threads, checked against ours. */
async function ortNodeEngine(tmp, name) {
  const model = await exportOnnx(tmp);
  const p = lineProcess(process.execPath, [path.join(ROOT, "bench/ort-node.mjs"), "--model", model.file, "--inputs", tmp, "--threads", String(ORT_THREADS[name])], { cwd: ROOT });
  const ready = await p.next(60_000);
  if (!ready.ready) {
    await p.close();
    throw new Error(ready.error ?? JSON.stringify(ready));
  }
  ROW_THREADS[name] = ready.threads;
  const check = {};
  for (const T of TOKENS) {
    const r = await p.request(`${T} 0`);
    if (r.error) throw new Error(r.error);
    check[T] = { maxAbsDiff: r.max_abs_diff };
    if (!(r.max_abs_diff <= 1e-4)) throw new Error(`onnxruntime-web output differs from ours at T=${T}: max |diff| = ${r.max_abs_diff}`);
  }
  return {
    info: { ...ready, model: { bytes: model.bytes, exportedBy: `torch.onnx.export (torch ${model.torch}, opset 17)` }, check },
    async run(T, reps) {
      const r = await p.request(`${T} ${reps}`);
      if (r.error) throw new Error(r.error);
      return { samples: r.samples_ms, checksum: r.checksum };
    },
    close: () => p.close(),
  };
}

async function nativeEngine() {
  const exe = path.join(ROOT, "build/native/attention_lab_native_bench");
  if (!existsSync(exe)) throw new Error(`${path.relative(ROOT, exe)} is not built (cmake --build --preset native --target attention_lab_native_bench)`);
  const p = lineProcess(exe, ["--stdin"], { cwd: ROOT });
  const ready = await p.next(30_000);
  if (!ready.ready) throw new Error(JSON.stringify(ready));
  return {
    info: { exe: path.relative(ROOT, exe) },
    async run(T, reps) {
      const r = await p.request(`${T} ${reps}`);
      if (r.error) throw new Error(r.error);
      return { samples: r.samples_ms, checksum: r.checksum };
    },
    close: () => p.close(),
  };
}

/**
 * Our parameters, inputs and outputs as raw float32 in `tmp`, so PyTorch and onnxruntime-web run (and
 * are checked) on the same numbers: weights.f32 (W_query, W_key, W_value, out_proj weights (out, in),
 * out_proj.bias), x_T.f32 and ours_T.f32 for each T.
 */
async function writeBenchFiles(tmp, params, input, ours) {
  const order = ["W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight", "out_proj.bias"];
  const parts = order.map((n) => params.find((p) => p.name === n).data);
  const bytes = (a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  await writeFile(path.join(tmp, "weights.f32"), Buffer.concat(parts.map(bytes)));
  for (const T of TOKENS) {
    await writeFile(path.join(tmp, `x_${T}.f32`), bytes(input(T).data));
    await writeFile(path.join(tmp, `ours_${T}.f32`), bytes(ours(T)));
  }
}

async function torchEngine(tmp, threads) {
  if (!existsSync("/usr/bin/python3")) throw new Error("/usr/bin/python3 is missing");
  const p = lineProcess("/usr/bin/python3", [path.join(ROOT, "bench/torch_bench.py"), "--weights", path.join(tmp, "weights.f32"), "--inputs", tmp], { cwd: ROOT, env: torchEnv(threads) });
  const ready = await p.next(120_000);
  if (!ready.ready) {
    await p.close();
    throw new Error(ready.error ?? JSON.stringify(ready));
  }
  const check = {};
  for (const T of TOKENS) {
    const r = await p.request(`check ${T} ${path.join(tmp, `ours_${T}.f32`)}`);
    if (r.error) throw new Error(r.error);
    check[T] = { maxAbsDiff: r.max_abs_diff, maxAbsRef: r.max_abs_ref };
    if (!(r.max_abs_diff <= 1e-4)) ready.warnings.push(`PyTorch output differs from ours at T=${T}: max |diff| = ${r.max_abs_diff}`);
  }
  return {
    info: { ...ready, check },
    async run(T, reps) {
      const r = await p.request(`${T} ${reps}`);
      if (r.error) throw new Error(r.error);
      return { samples: r.samples_ms };
    },
    close: () => p.close(),
  };
}

/**
 * Serves web/ at / and bench/ at /bench/ (no page CSP here: the bench page is not the teaching page),
 * the peers' pinned packages at /node_modules/@tensorflow/ and /node_modules/onnxruntime-web/, and
 * `tmp` at /bench-model/ (bench/onnx_export.py's mha.onnx); cross-origin isolated unless `isolated` is
 * false (a plain static host: the single-thread core).
 */
async function benchServer(tmp, isolated = true) {
  const { default: sirv } = await import("sirv");
  const { ISOLATION_HEADERS } = await import("../scripts/serve.mjs");
  const web = sirv(path.join(ROOT, "web"), { dev: true });
  const bench = sirv(path.join(ROOT, "bench"), { dev: true });
  const tfjs = sirv(path.join(ROOT, "node_modules/@tensorflow"), { dev: true });  // the TF.js peer's page
  const ort = sirv(path.join(ROOT, "node_modules/onnxruntime-web"), { dev: true });  // the onnxruntime-web peer's page
  const model = sirv(tmp, { dev: true });
  const server = http.createServer((req, res) => {
    // cross-origin isolated, as npm start's server: the page gets the threaded core
    if (isolated) for (const [k, v] of Object.entries(ISOLATION_HEADERS)) res.setHeader(k, v);
    const notFound = () => { res.statusCode = 404; res.end("Not found"); };
    if (req.url.startsWith("/bench/")) {
      req.url = req.url.slice("/bench".length);
      bench(req, res, notFound);
    } else if (req.url.startsWith("/node_modules/@tensorflow/")) {
      req.url = req.url.slice("/node_modules/@tensorflow".length);
      tfjs(req, res, notFound);
    } else if (req.url.startsWith("/node_modules/onnxruntime-web/")) {
      req.url = req.url.slice("/node_modules/onnxruntime-web".length);
      ort(req, res, notFound);
    } else if (req.url === "/bench-model/mha.onnx") {
      req.url = "/mha.onnx";
      model(req, res, notFound);
    } else web(req, res, notFound);
  });
  await new Promise((resolve, reject) => { server.once("error", reject); server.listen(0, "127.0.0.1", resolve); });
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((r) => server.close(r)) };
}

async function launchChromium() {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing (bash scripts/setup.sh --browser installs Debian's chromium)`);
  const { chromium } = await import("playwright-core");
  const userDataDir = await mkdtemp(path.join(os.tmpdir(), "attention-lab-bench-chromium-"));
  try {
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 800 }, serviceWorkers: "block",
    });
    for (const p of context.pages()) await p.close();
    return {
      context,
      version: context.browser()?.version() ?? null,
      async close() {
        await context.close().catch(() => {});
        await rm(userDataDir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await rm(userDataDir, { recursive: true, force: true });
    throw e;
  }
}

/** A bench page (bench/<file>) once it says ready: the page and its window.benchInfo; throws its error. */
async function openBenchPage(browser, server, file) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}bench/${file}`);
  await page.waitForFunction(() => document.body.dataset.ready || document.body.dataset.error, null, { timeout: 60_000 })
    .catch(() => { throw new Error(`bench page ${file} did not load: ${errors.join("; ") || "timeout"}`); });
  const error = await page.evaluate(() => document.body.dataset.error);
  if (error) throw new Error(`bench page ${file}: ${error}`);
  return { page, info: await page.evaluate(() => window.benchInfo) };
}

async function chromiumEngine(browser, server, expectedChecksum, nodeKernel, name = "wasm-chromium", file = "browser.html") {
  const { page, info } = await openBenchPage(browser, server, file);
  ROW_THREADS[name] = info.workers ?? info.threads;
  // Same module, same input: the same bits as in Node from the same binary; Chromium loads the fused
  // multiply-add one where Node has the plain one, and then each output is within 1e-6 of Node's, so
  // the sum of the T x 768 of them is within T x 768 x 1e-6.
  const check = {};
  for (const T of TOKENS) {
    const r = await page.evaluate(([t]) => window.benchRun(t, 0), [T]);
    check[T] = { checksum: r.checksum, nodeChecksum: expectedChecksum(T) };
    const same = info.kernel === nodeKernel;
    if (same ? r.checksum !== expectedChecksum(T) : !(Math.abs(r.checksum - expectedChecksum(T)) <= T * D * 1e-6)) {
      throw new Error(`Chromium output (binary ${info.kernel}) differs from Node's (${nodeKernel}) at T=${T}: checksum ${r.checksum} vs ${expectedChecksum(T)}`);
    }
  }
  return {
    info: { ...info, chromium: browser.version, check, timerNote: info.crossOriginIsolated ? "cross-origin isolated: performance.now() at 5 us" : "performance.now() in a page that is not cross-origin isolated is coarsened to 100 us" },
    run: (T, reps) => page.evaluate(([t, n]) => window.benchRun(t, n), [T, reps]),
    close: () => page.close(),
  };
}

/**
 * A WASM peer in Chromium at its best thread count (bench/<file>, on the isolated bench server): TF.js
 * (tfjs-browser.html) or onnxruntime-web (ort-browser.html); each page checks its output against ours.
 */
async function peerChromiumEngine(browser, server, file, name) {
  const { page, info } = await openBenchPage(browser, server, file);
  ROW_THREADS[name] = info.threads;
  const check = {};
  for (const T of TOKENS) check[T] = { maxAbsDiff: (await page.evaluate(([t]) => window.benchRun(t, 0), [T])).maxAbsDiff };
  return {
    info: { ...info, chromium: browser.version, check },
    run: (T, reps) => page.evaluate(([t, n]) => window.benchRun(t, n), [T, reps]),
    close: () => page.close(),
  };
}

// ---- the f32x4 peak hook --------------------------------------------------------------------------
// The kernel bench: bench/kernel_bench.cpp built as build/wasm/attention_kernel_bench.mjs (wasm
// preset); its _kernel_bench_json(quick) returns JSON {peakGflops, gemm: [...]} (see bench/kernel.mjs).
async function kernelBench() {
  const file = path.join(ROOT, "build/wasm/attention_kernel_bench.mjs");
  if (!existsSync(file)) return { available: false, reason: "build/wasm/attention_kernel_bench.mjs not built (bash scripts/build.sh)" };
  const mod = await import(pathToFileURL(file).href);
  const candidates = [];
  let instance = null;
  if (typeof mod.default === "function") {
    try { instance = await mod.default(); } catch (e) { candidates.push(`default() threw: ${errText(e)}`); }
  }
  const tries = [
    ["module._kernel_bench_json(quick)", () => (instance?._kernel_bench_json ? instance.UTF8ToString(instance._kernel_bench_json(QUICK ? 1 : 0)) : undefined)],
    ["module.runKernelBench()", () => instance?.runKernelBench?.()],
    ["module.run()", () => instance?.run?.()],
    ["export runKernelBench()", () => mod.runKernelBench?.()],
    ["export run()", () => mod.run?.()],
  ];
  for (const [name, fn] of tries) {
    let r;
    try { r = await fn(); } catch (e) { candidates.push(`${name} threw: ${errText(e)}`); continue; }
    if (r === undefined || r === null) continue;
    if (typeof r === "string") { try { r = JSON.parse(r); } catch { candidates.push(`${name} returned a non-JSON string`); continue; } }
    if (typeof r?.peakGflops === "number") {
      const gemm = Array.isArray(r.gemm) ? r.gemm : [];
      // The 1024 x 768 x 768 product (any of m/n/k spellings, or a "1024x768x768" label).
      const dims = (g) => (Array.isArray(g.shape) ? g.shape : [g.m ?? g.M ?? g.rows, g.k ?? g.K ?? g.inner, g.n ?? g.N ?? g.cols]).map(Number);
      const target = gemm.find((g) => { const [m, k, n] = dims(g); return m === 1024 && k === 768 && n === 768; })
        ?? gemm.find((g) => /1024\s*x\s*768\s*x\s*768/.test(String(g.shape ?? g.label ?? g.name ?? "")));
      const gflops = target ? Number(target.gflops ?? target.GFLOPs ?? target.gflopsPerSecond) : NaN;
      return { available: true, via: name, peakGflops: r.peakGflops, gemm, gemm1024x768x768Gflops: Number.isFinite(gflops) ? gflops : null, raw: r };
    }
    candidates.push(`${name} returned no peakGflops`);
  }
  return { available: false, reason: `attention_kernel_bench.mjs found, but no API gave {peakGflops}: ${candidates.join("; ") || "no runKernelBench()/run() on the module or its exports"}` };
}

// ---- memory -------------------------------------------------------------------------------------

async function memory() {
  const out = {};
  for (const [key, args] of [["untraced", []], ["traced", ["--trace"]], ["lazy", ["--lazy"]]]) {
    const r = await run(process.execPath, [path.join(ROOT, "bench/memory-child.mjs"), ...args], { cwd: ROOT });
    try {
      const line = r.stdout.trim().split("\n").pop();
      out[key] = JSON.parse(line);
      if (out[key].error) out[key] = { error: out[key].error };
    } catch {
      out[key] = { error: errText(r.error ?? r.stderr ?? "no output") };
    }
  }
  return out;
}

// ---- a million-key safetensors header (issue 17) ----------------------------------------------------

async function headerBench() {
  const r = await run(process.execPath, [path.join(ROOT, "bench/header.mjs")], { cwd: ROOT, timeout: 900_000 });
  try {
    return JSON.parse(r.stdout.trim().split("\n").pop());
  } catch {
    return { error: errText(r.error ?? r.stderr ?? "no output") };
  }
}

// ---- the teaching page --------------------------------------------------------------------------

async function pageMetrics(browser) {
  const { startServer } = await import("../scripts/serve.mjs");
  const server = await startServer({ port: 0 });
  const result = {};
  const freshPage = async ({ noCache = false } = {}) => {
    const page = await browser.context.newPage();
    if (noCache) {
      const cdp = await browser.context.newCDPSession(page);
      await cdp.send("Network.enable");
      await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });  // every view is a first view
    }
    page.problems = [];
    page.on("pageerror", (e) => page.problems.push(e.message));
    await page.addInitScript(() => {
      window.__bench = {};
      document.addEventListener("run-complete", () => { window.__bench.firstRunComplete ??= performance.now(); }, true);
      document.addEventListener("run-error", (e) => { window.__bench.runError ??= e.detail?.message ?? "run-error"; }, true);
    });
    return page;
  };
  /** One first view of the page at `url` (cache disabled): its time to first output, and with `bytes` every response's size. */
  const firstView = async (url, bytes) => {
    const page = await freshPage({ noCache: true });
    const bodies = [];
    page.on("response", (res) => {
      const u = res.url();
      if (u.startsWith("data:")) return;  // the single-file WASM's data: URL: its bytes are in the .mjs
      bodies.push(res.body().then(
        (b) => ({ url: u.replace(url, "/"), status: res.status(), bytes: b.length, gzipBytes: zlib.gzipSync(b, { level: 9 }).length }),
        (e) => ({ url: u.replace(url, "/"), status: res.status(), error: errText(e) }),
      ));
    });
    await page.goto(url, { waitUntil: "load" });
    await page.waitForFunction(() => window.__bench.firstRunComplete !== undefined || window.__bench.runError, null, { timeout: 60_000 });
    const b = await page.evaluate(() => window.__bench);
    if (b.runError) throw new Error(`the default page's first run failed: ${b.runError}`);
    const view = { firstOutputMs: b.firstRunComplete, problems: page.problems.slice(0, 5) };
    if (bytes) {
      // What was requested before the first output is the first view; the panels the page fetches by
      // itself right after (once idle, below the fold) are counted with it as well (withPanels): the
      // issue's target counts them. Three seconds of no input after the first output let them come.
      await page.waitForTimeout(3000);
      const lateUrls = new Set(await page.evaluate((at) => performance.getEntriesByType("resource").filter((e) => e.startTime > at).map((e) => e.name), b.firstRunComplete));
      const all = await Promise.all(bodies);
      const isLate = (f) => lateUrls.has(url + f.url.replace(/^\//, ""));
      const later = all.filter(isLate);
      const files = all.filter((f) => !isLate(f)).sort((x, y) => (y.bytes ?? 0) - (x.bytes ?? 0));
      view.bytes = {
        rawBytes: files.reduce((n, f) => n + (f.bytes ?? 0), 0),
        gzipBytes: files.reduce((n, f) => n + (f.gzipBytes ?? 0), 0),
        files: files.length,
        biggest: files.slice(0, 8),
        loadedAfterFirstOutput: later.map((f) => f.url),
        withPanels: { rawBytes: all.reduce((n, f) => n + (f.bytes ?? 0), 0), gzipBytes: all.reduce((n, f) => n + (f.gzipBytes ?? 0), 0), files: all.length },
        note: "every response body requested from navigation until the first run-complete (cache disabled), gzip level 9 per file; files requested later are listed apart; withPanels: also those the page requested by itself in the 3 s after it (no input)",
      };
    }
    await page.close();
    return view;
  };
  try {
    // First view: every response body until load + the first run-complete; time to first output. Of
    // the page as npm start serves it (web/'s sources) and of dist/ (bundled and minified, what a host serves),
    // each with npm start's headers (cross-origin isolated).
    const distServer = existsSync(path.join(ROOT, "dist/index.html")) ? await startServer({ port: 0, dir: path.join(ROOT, "dist") }) : null;
    const firstOutput = [];
    try {
      for (let i = 0; i < PAGE_REPS; i++) {
        const view = await firstView(server.url, i === 0);
        firstOutput.push(view.firstOutputMs);
        if (i === 0) result.firstView = view.bytes;
        if (view.problems.length) result.problems = view.problems;
      }
      if (distServer) {
        const view = await firstView(distServer.url, true);
        result.firstViewDist = { ...view.bytes, firstOutputMs: view.firstOutputMs, note: `dist/ (JavaScript bundled and minified, CSS minified by scripts/dist.mjs) with npm start's headers; ${view.bytes.note}` };
      }
    } finally {
      await distServer?.close();
    }
    result.firstOutputMs = { median: median(firstOutput), samples: firstOutput, note: "navigation start -> the run-complete event of the default page's <attention-lab> (cache disabled)" };

    // Edit -> rendered trace: change d_out in the slot input, press Run as a reader does (unless the
    // edit started a run itself), wait for run-complete plus two animation frames.
    {
      const page = await freshPage();
      await page.goto(server.url);
      await page.waitForFunction(() => window.__bench.firstRunComplete !== undefined, null, { timeout: 60_000 });
      const values = QUICK ? ["4", "2", "4"] : ["4", "6", "2", "4", "6", "2", "4", "6", "2"];
      const samples = await page.evaluate(async ([vals]) => {
        const el = document.querySelector("attention-lab");
        const input = el.shadowRoot.querySelector('[data-testid="slot-d_out"]');
        const runButton = el.shadowRoot.querySelector('[data-testid="run"]');
        const out = [];
        for (const v of vals) {
          const done = new Promise((resolve, reject) => {
            el.addEventListener("run-complete", resolve, { once: true });
            el.addEventListener("run-error", (e) => reject(new Error(e.detail.message)), { once: true });
          });
          const t0 = performance.now();
          input.value = v;
          input.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
          await Promise.resolve();
          if (!runButton.disabled) runButton.click();
          await done;
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
          out.push(performance.now() - t0);
        }
        return out;
      }, [values]).catch((e) => { throw new Error(`edit -> rendered: ${errText(e)}`); });
      result.editToRenderedMs = { median: median(samples.slice(1)), samples, note: "d_out edited in the slot input of the default MultiHeadAttention(3, 2, 6, 0.0, 2) page -> Run -> run-complete + 2 rAF (first sample left out of the median)" };
      await page.close();
    }

    // GPT-2 small on 1024 tokens, traced (the page always traces) and rendered: Run clicked as soon as
    // the page is ready (its worker still loading), and on another page 1 s after it is ready, as a
    // reader clicks (the worker loaded, warmed up and the run's heap reserved).
    const gpt2 = [];
    const readerClick = [];
    for (let i = 0; i < PAGE_REPS; i++) {
      const page = await freshPage();
      await page.goto(server.url + GPT2_PAGE_QUERY);
      await page.waitForFunction(() => document.querySelector("attention-lab")?.dataset.ready !== undefined, null, { timeout: 60_000 });
      const r = await page.evaluate(async () => {
        const el = document.querySelector("attention-lab");
        const runButton = el.shadowRoot.querySelector('[data-testid="run"]');
        const runOnce = async () => {
          const done = new Promise((resolve, reject) => {
            el.addEventListener("run-complete", (e) => resolve(e.detail), { once: true });
            el.addEventListener("run-error", (e) => reject(new Error(e.detail.message)), { once: true });
          });
          const start = performance.now();
          runButton.click();
          const detail = await done;
          await new Promise((r2) => requestAnimationFrame(() => requestAnimationFrame(r2)));
          return { start, end: performance.now(), detail, computeMs: Number(el.dataset.computeMs) };
        };
        const cold = await runOnce();
        // the same Run again half a second later: the worker loaded, warmed up and its heap grown
        await new Promise((r2) => setTimeout(r2, 500));
        const warm = await runOnce();
        return {
          triggerToRenderedMs: cold.end - cold.start, navigationToRenderedMs: cold.end, runDurationMs: cold.detail.durationMs, computeMs: cold.computeMs,
          warmTriggerToRenderedMs: warm.end - warm.start, warmComputeMs: warm.computeMs, outputShape: cold.detail.outputShape, stages: cold.detail.stages.length,
        };
      }).catch((e) => ({ error: errText(e) }));
      await page.close();
      if (r.error) throw new Error(`GPT-2 small page run: ${r.error}`);
      gpt2.push(r);
      const later = await freshPage();
      await later.goto(server.url + GPT2_PAGE_QUERY);
      await later.waitForFunction(() => document.querySelector("attention-lab")?.dataset.ready !== undefined, null, { timeout: 60_000 });
      await later.waitForTimeout(1000);
      const reader = await later.evaluate(async () => {
        const el = document.querySelector("attention-lab");
        const done = new Promise((resolve, reject) => {
          el.addEventListener("run-complete", resolve, { once: true });
          el.addEventListener("run-error", (e) => reject(new Error(e.detail.message)), { once: true });
        });
        const start = performance.now();
        el.shadowRoot.querySelector('[data-testid="run"]').click();
        await done;
        await new Promise((r2) => requestAnimationFrame(() => requestAnimationFrame(r2)));
        return performance.now() - start;
      }).catch((e) => ({ error: errText(e) }));
      await later.close();
      if (reader.error) throw new Error(`GPT-2 small page run 1 s after ready: ${reader.error}`);
      readerClick.push(reader);
    }
    result.gpt2Traced1024 = {
      triggerToRenderedMs: median(gpt2.map((r) => r.triggerToRenderedMs)),
      readerTriggerToRenderedMs: median(readerClick),
      readerSamples: readerClick,
      warmTriggerToRenderedMs: median(gpt2.map((r) => r.warmTriggerToRenderedMs)),
      navigationToRenderedMs: median(gpt2.map((r) => r.navigationToRenderedMs)),
      samples: gpt2,
      url: GPT2_PAGE_QUERY,
      note: "Run clicked as soon as the page is ready -> run-complete + 2 rAF; reader: on another page Run clicked 1 s after it is ready (the worker loaded, warmed up, the run's heap reserved) (the page runs it in a Web Worker with a lazy trace kept there, and renders the stage cards from what the worker sends for them); warm: Run clicked again 0.5 s after that (the worker loaded, warmed up, its heap grown); computeMs: Run -> the run's answers in the page (the worker's load and warm-up included when cold)",
    };

    // The GPT-2 grid on 1024 ids: a click on a layer x head cell -> the head view redrawn + 2 rAF. The
    // file has GPT-2 small's real size (its header, then zeros, as bench/gpt2.mjs: no real GPT-2 file is
    // fetched here), so the grid is GPT-2 small's 12 x 12 cells from the core's thumbnails.
    result.gpt2GridClick1024 = await gridClick(browser).catch((e) => ({ error: errText(e) }));
  } catch (e) {
    result.error = errText(e);
  } finally {
    await server.close();
  }
  return result;
}

/** The checkpoint panel's whole-model grid on 1024 ids of a GPT-2-small-sized file: the time of a cell click. */
async function gridClick(browser) {
  const { gpt2Tensors, safetensorsHeader } = await import("../tests/safetensors.mjs");
  const { openSync, writeSync, ftruncateSync, closeSync } = await import("node:fs");
  const { startServer } = await import("../scripts/serve.mjs");
  const dir = await mkdtemp(path.join(os.tmpdir(), "attention-lab-grid-bench-"));
  const file = path.join(dir, "gpt2-small-zeros.safetensors");
  const { head, dataBytes } = safetensorsHeader(gpt2Tensors());
  const fd = openSync(file, "w");
  writeSync(fd, head);
  ftruncateSync(fd, head.length + dataBytes);
  closeSync(fd);
  const server = await startServer({ port: 0 });
  const page = await browser.context.newPage();
  try {
    await page.goto(server.url);
    await page.waitForFunction(() => document.querySelector("attention-lab")?.dataset.ready !== undefined, null, { timeout: 60_000 });
    const runs = (n) => page.waitForFunction(([k]) => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === String(k), [n], { timeout: 300_000 });
    await page.getByTestId("ckpt-file").setInputFiles(file);
    await runs(1);
    await page.getByTestId("ckpt-kind-ids").check();
    await page.getByTestId("ckpt-ids").fill(Array.from({ length: 1024 }, (_, i) => (i * 977) % 50257).join(", "));
    await page.getByTestId("gpt2-run").click();
    await runs(2);
    const samples = await page.evaluate(async () => {
      const root = document.querySelector("attention-lab").shadowRoot;
      const cells = [...root.querySelectorAll("[data-testid=gpt2-cell]")];
      const out = [];
      for (let k = 0; k < 7; k++) {
        const cell = cells[(k * 37 + 13) % cells.length];
        const t0 = performance.now();
        cell.click();
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        out.push(performance.now() - t0);
      }
      return { out, cells: cells.length, caption: root.querySelector("[data-testid=gpt2-grid] caption").textContent };
    });
    return { medianMs: median(samples.out.slice(1)), samples: samples.out, cells: samples.cells, caption: samples.caption,
      note: "a click on a layer x head cell of the grid on 1024 ids -> head view redrawn + 2 rAF (first sample left out of the median); a GPT-2-small-sized file of zeros" };
  } finally {
    await page.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// ---- main ---------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  // One thread here (the "ours WASM (Node, 1 thread)" row); the threaded row runs in its own process.
  const lab = await loadAttentionLab({ threads: 1 });
  const module = lab.create("MultiHeadAttention", CONFIG);
  const params = module.parameters();
  const inputs = new Map();
  const input = (T) => {
    if (!inputs.has(T)) inputs.set(T, { shape: [1, T, D], data: lab.seededTokens(T, D, 1).data });
    return inputs.get(T);
  };
  const outputs = new Map();
  const ours = (T) => {
    if (!outputs.has(T)) outputs.set(T, module.forward(input(T), { training: false }).output.data);
    return outputs.get(T);
  };
  const tmp = await mkdtemp(path.join(os.tmpdir(), "attention-lab-bench-"));
  await writeBenchFiles(tmp, params, input, ours);

  const engines = {};
  const unavailable = {};
  const infos = {};
  const setUp = async (name, make) => {
    if (SKIP.has(name)) { unavailable[name] = "skipped (BENCH_SKIP)"; return; }
    try {
      log(`setting up ${name}`);
      engines[name] = await make();
      infos[name] = engines[name].info;
    } catch (e) {
      unavailable[name] = errText(e);
      log(`${name}: n/a (${unavailable[name]})`);
    }
  };
  let browser = null;
  let benchSrv = null;
  const needBrowser = ["wasm-chromium", "wasm-chromium-static", "wasm-chromium-split", "tfjs-wasm-chromium", "ort-wasm-chromium", "page"].some((e) => !SKIP.has(e));
  let browserError = null;
  if (needBrowser) {
    try { browser = await launchChromium(); } catch (e) { browserError = errText(e); log(`chromium: ${browserError}`); }
  }
  for (const name of ["wasm-node", "wasm-node-mt"]) await setUp(name, () => wasmNodeEngine((T) => sum(ours(T)), name));
  await setUp("native", () => nativeEngine());
  // PyTorch's baseline: the native GEMM reference is measured next to each PyTorch process's own
  // torch.mm (best of all its measurements), then each process is judged against it.
  log("native GEMM reference (PyTorch's baseline check)");
  const references = [measureNativeGemm()];
  for (const name of ["torch", "torch-2t"]) {
    await setUp(name, async () => {
      const engine = await torchEngine(tmp, TORCH_THREADS[name]);
      references.push(measureNativeGemm());
      return engine;
    });
  }
  const gemmReference = bestOf(references);
  for (const name of ["torch", "torch-2t"]) if (engines[name]) infos[name].baseline = judgeBaseline(infos[name], gemmReference, TORCH_THREADS[name]);
  await setUp("tfjs-wasm", () => tfjsEngine(params, input, ours));
  for (const name of ["ort-wasm", "ort-wasm-mt"]) await setUp(name, () => ortNodeEngine(tmp, name));
  await setUp("wasm-chromium", async () => {
    if (!browser) throw new Error(`Chromium did not start: ${browserError}`);
    benchSrv = await benchServer(tmp);
    return chromiumEngine(browser, benchSrv, (T) => sum(ours(T)), lab.kernel);
  });
  await setUp("tfjs-wasm-chromium", async () => {
    if (!browser) throw new Error(`Chromium did not start: ${browserError}`);
    benchSrv ??= await benchServer(tmp);
    return peerChromiumEngine(browser, benchSrv, "tfjs-browser.html", "tfjs-wasm-chromium");
  });
  await setUp("ort-wasm-chromium", async () => {
    if (!browser) throw new Error(`Chromium did not start: ${browserError}`);
    await exportOnnx(tmp);
    benchSrv ??= await benchServer(tmp);
    return peerChromiumEngine(browser, benchSrv, "ort-browser.html", "ort-wasm-chromium");
  });
  let staticSrv = null;
  await setUp("wasm-chromium-static", async () => {
    if (!browser) throw new Error(`Chromium did not start: ${browserError}`);
    staticSrv = await benchServer(tmp, false);
    return chromiumEngine(browser, staticSrv, (T) => sum(ours(T)), lab.kernel, "wasm-chromium-static");
  });
  // The same static host with the library's head split (web/lib/head-split.js): the page and its
  // plain Workers each run a share of the heads, with the same bits.
  await setUp("wasm-chromium-split", async () => {
    if (!browser) throw new Error(`Chromium did not start: ${browserError}`);
    staticSrv ??= await benchServer(tmp, false);
    return chromiumEngine(browser, staticSrv, (T) => sum(ours(T)), lab.kernel, "wasm-chromium-split", "browser.html?split");
  });
  if (engines.native) {
    // Same module and input; native and WASM may sum in another order, so compare loosely.
    const r = await engines.native.run(TOKENS[0], 0).catch((e) => ({ error: errText(e) }));
    const want = sum(ours(TOKENS[0]));
    engines.native.info.check = { T: TOKENS[0], checksum: r.checksum, wasmChecksum: want };
    if (r.error || !(Math.abs(r.checksum - want) <= 1e-3 * Math.max(1, Math.abs(want)))) {
      unavailable.native = r.error ?? `native output differs from the WASM's (checksum ${r.checksum} vs ${want})`;
      await engines.native.close?.();
      delete engines.native;
    }
  }

  // Interleaved rounds.
  const perRound = {};
  const active = ENGINES.filter((e) => engines[e]);
  log(`${ROUNDS} round(s) over T = ${TOKENS.join(", ")} on: ${active.join(", ")}`);
  for (let round = 0; round < ROUNDS; round++) {
    for (const T of TOKENS) {
      const order = active.map((_, i) => active[(i + round + TOKENS.indexOf(T)) % active.length]);
      for (const name of order) {
        if (!engines[name]) continue;
        try {
          const r = await engines[name].run(T, REPS(T));
          ((perRound[name] ??= {})[T] ??= []).push({ median: median(r.samples), samples: r.samples });
        } catch (e) {
          unavailable[name] = `failed during the run at T=${T}: ${errText(e)}`;
          log(`${name}: ${unavailable[name]}`);
          await engines[name].close?.();
          delete engines[name];
        }
      }
    }
    log(`round ${round + 1}/${ROUNDS} done (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  }

  const speed = {};
  for (const name of ENGINES) {
    speed[name] = {};
    for (const T of TOKENS) {
      const rounds = perRound[name]?.[T];
      if (!rounds?.length || unavailable[name]) {
        speed[name][T] = { ms: null, reason: unavailable[name] ?? "no samples" };
        continue;
      }
      const ms = Math.min(...rounds.map((r) => r.median));
      speed[name][T] = { ms, gflops: flop(T) / (ms * 1e6), roundMedians: rounds.map((r) => r.median), reps: REPS(T) };
    }
  }
  // Ratios to PyTorch (one thread, and two) only against a baseline judged valid (bench/baseline.mjs).
  const validBaseline = (e) => Boolean(infos[e]?.baseline?.valid);
  for (const name of ENGINES) {
    for (const T of TOKENS) {
      const base = validBaseline("torch") ? speed.torch[T]?.ms : null;
      const base2 = validBaseline("torch-2t") ? speed["torch-2t"][T]?.ms : null;
      if (speed[name][T].ms != null && base) speed[name][T].xTorch = speed[name][T].ms / base;
      if (speed[name][T].ms != null && base2) speed[name][T].xTorch2 = speed[name][T].ms / base2;
    }
  }

  for (const name of Object.keys(engines)) await engines[name].close?.();
  if (benchSrv) await benchSrv.close();
  if (staticSrv) await staticSrv.close();

  log("kernel bench hook");
  const kernel = await kernelBench().catch((e) => ({ available: false, reason: `kernel bench failed: ${errText(e)}` }));
  if (!kernel.available) log(`note: ${kernel.reason}`);
  if (kernel.available) {
    for (const name of WASM_ENGINES) {
      for (const T of TOKENS) if (speed[name][T].gflops) speed[name][T].fractionOfPeak = speed[name][T].gflops / kernel.peakGflops;
    }
  }

  let mem = { skipped: true };
  if (!SKIP.has("memory")) {
    log("memory (child processes, T = 1024)");
    mem = await memory().catch((e) => ({ error: errText(e) }));
  }
  let header = { skipped: true };
  if (!SKIP.has("header")) {
    log("million-key safetensors header (child process)");
    header = await headerBench().catch((e) => ({ error: errText(e) }));
  }
  let page = { skipped: true };
  if (!SKIP.has("page")) {
    log("teaching page in Chromium");
    page = browser ? await pageMetrics(browser).catch((e) => ({ error: errText(e) })) : { error: `Chromium did not start: ${browserError}` };
  }
  if (browser) await browser.close();
  await rm(tmp, { recursive: true, force: true });

  const targets = evaluateTargets(speed, kernel, page);
  const result = {
    generatedAt: new Date().toISOString(),
    quick: QUICK,
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? "?", loadavg: os.loadavg(), node: process.version, platform: `${os.type()} ${os.release()}` },
    config: { call: CALL, mode: "eval", batch: 1, causal: true, tokens: TOKENS, rounds: ROUNDS, reps: Object.fromEntries(TOKENS.map((T) => [T, REPS(T)])) },
    method: "per T, engines in rotating order each round; warm-up + reps forwards per turn; figure = min over rounds of the per-round median",
    flopFormula: FLOP_FORMULA,
    engines: Object.fromEntries(ENGINES.map((e) => [e, { label: LABELS[e], available: !unavailable[e], reason: unavailable[e] ?? null, info: infos[e] ?? null }])),
    speed,
    nodeKernel: lab.kernel,
    gemmReference,
    kernel,
    memory: mem,
    header,
    page,
    targets,
    durationS: (Date.now() - started) / 1000,
  };
  await mkdir(path.dirname(OUT), { recursive: true });
  await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
  printReport(result, unavailable);
  console.log(`\nJSON: ${path.relative(process.cwd(), OUT)}  (${result.durationS.toFixed(0)} s)`);
}

function evaluateTargets(speed, kernel, page) {
  const t = [];
  const ms = (e, T) => speed[e]?.[T]?.ms ?? null;
  const fmt = (v, d = 2) => (v == null ? "n/a" : v.toFixed(d));
  // (1) ahead of every WASM peer at every T, in every mode (issue 21's target 1): each pair is ours
  // and a peer in the same runtime on the same threads; the value is ours / theirs.
  const ahead = (id, target, pairsOf) => {
    const pairs = TOKENS.map((T) => [T, ...pairsOf.map(([o, p]) => [ms(o, T), ms(p, T)])]);
    const known = pairs.every(([, ...ps]) => ps.every(([a, b]) => a != null && b != null));
    t.push({ id, target, met: known ? pairs.every(([, ...ps]) => ps.every(([a, b]) => a < b)) : null,
      value: pairs.map(([T, ...ps]) => `T=${T}: ${ps.map(([a, b]) => `x${a != null && b != null ? fmt(a / b) : "n/a"}`).join(" / ")}`).join(", ") });
  };
  ahead("1", "faster than TF.js-WASM / onnxruntime-web at every T (Node, 1 thread)", [["wasm-node", "tfjs-wasm"], ["wasm-node", "ort-wasm"]]);
  ahead("21.1", "faster than TF.js-WASM / onnxruntime-web at every T, on the isolated page's threads (Chromium)", [["wasm-chromium", "tfjs-wasm-chromium"], ["wasm-chromium", "ort-wasm-chromium"]]);
  ahead("21.1n", "faster than onnxruntime-web at every T, both on the cores (Node, threads)", [["wasm-node-mt", "ort-wasm-mt"]]);
  // (2a) T=1024 <= 1.35x PyTorch; (2b) T=6 <= 0.75 ms.
  {
    const x = speed["wasm-node"]?.[1024]?.xTorch ?? null;
    const xc = speed["wasm-chromium"]?.[1024]?.xTorch ?? null;
    t.push({ id: "2a", target: "T=1024 <= 1.35x PyTorch (1 thread)", met: x == null ? null : x <= 1.35, value: `Node x${fmt(x)}, Chromium x${fmt(xc)}` });
    const a = ms("wasm-node", 6);
    const c = ms("wasm-chromium", 6);
    // The floor on this machine: T=6's flop at the measured f32x4 peak (no product can beat it).
    const floor = kernel?.peakGflops ? flop(6) / (kernel.peakGflops * 1e6) : null;
    const torch6 = speed.torch?.[6]?.xTorch == null ? null : ms("torch", 6);
    t.push({ id: "2b", target: "T=6 <= 0.75 ms", met: a == null ? null : a <= 0.75,
      value: `Node ${fmt(a, 3)} ms, Chromium ${fmt(c, 3)} ms (floor here at the f32x4 peak: ${fmt(floor, 3)} ms; x${fmt(torch6 ? a / torch6 : null)} PyTorch)` });
  }
  // Issue 21, target 2: T=1024 <= 1.0x PyTorch one thread when isolated (threads + FMA), <= 1.5x on a plain static host.
  {
    const xi = speed["wasm-chromium"]?.[1024]?.xTorch ?? null;
    const xs = speed["wasm-chromium-static"]?.[1024]?.xTorch ?? null;
    const xw = speed["wasm-chromium-split"]?.[1024]?.xTorch ?? null;
    t.push({ id: "21.2a", target: "T=1024 <= 1.0x PyTorch 1 thread, isolated (Chromium)", met: xi == null ? null : xi <= 1.0, value: `x${fmt(xi)} (${LABELS["wasm-chromium"]})` });
    t.push({ id: "21.2b", target: "T=1024 <= 1.5x PyTorch 1 thread, static host (Chromium)", met: xs == null ? null : xs <= 1.5, value: `x${fmt(xs)} (${LABELS["wasm-chromium-static"]})` });
    t.push({ id: "21.2c", target: "T=1024 <= 1.5x PyTorch 1 thread, static host, heads over plain Workers (Chromium)", met: xw == null ? null : xw <= 1.5,
      value: `x${fmt(xw)} (${LABELS["wasm-chromium-split"]}; x${fmt(xw != null && xs != null ? xw / xs : null)} of one thread)` });
  }
  // (3) WASM matmul >= 70% of the f32x4 peak at 1024x768x768 (from the kernel bench).
  {
    const f = kernel.available && kernel.gemm1024x768x768Gflops ? kernel.gemm1024x768x768Gflops / kernel.peakGflops : null;
    t.push({ id: "3", target: "WASM matmul >= 70% of f32x4 peak at 1024x768x768", met: f == null ? null : f >= 0.7,
      value: f == null ? `n/a: ${kernel.reason ?? "the kernel bench gave no 1024x768x768 row"}` : `${(100 * f).toFixed(0)}% (${fmt(kernel.gemm1024x768x768Gflops, 1)} of ${fmt(kernel.peakGflops, 1)} GFLOP/s)` });
  }
  // (4) page: first view <= 300 KB gzip, first output < 1 s, GPT-2 small 1024 traced + rendered < 0.5 s
  // (issue 21's target 3), a GPT-2 grid click at 1024 ids < 50 ms.
  {
    // What a reader downloads is dist/ on a host (bundled, minified); npm start's web/ sources are quoted beside it.
    const dist = page.firstViewDist?.withPanels?.gzipBytes ?? null;
    const web = page.firstView?.withPanels?.gzipBytes ?? null;
    const kb = (v) => `${(v / 1000).toFixed(1)} KB`;
    t.push({ id: "4a", target: "first view + the panels fetched right after <= 300 KB gzip (dist/, as a host serves it)", met: dist == null ? null : dist <= 300 * 1000,
      value: web == null ? `n/a: ${page.error ?? (page.skipped ? "skipped" : "?")}` : `dist/ ${dist == null ? "n/a (not built)" : `${kb(dist)} gzip (${kb(page.firstViewDist.gzipBytes)} to the first output)`}; npm start's web/ ${kb(web)} gzip (${kb(page.firstView.gzipBytes)} to the first output)` });
    const fo = page.firstOutputMs?.median ?? null;
    t.push({ id: "4b", target: "first output < 1 s (Chromium)", met: fo == null ? null : fo < 1000, value: fo == null ? "n/a" : `${fo.toFixed(0)} ms` });
    const g = page.gpt2Traced1024?.triggerToRenderedMs ?? null;
    t.push({ id: "4c", target: "GPT-2 small, 1024 tokens, traced + rendered < 0.5 s (Chromium)", met: g == null ? null : g < 500,
      value: g == null ? "n/a" : `${g.toFixed(0)} ms from Run (${page.gpt2Traced1024.navigationToRenderedMs.toFixed(0)} ms from navigation; warm worker ${page.gpt2Traced1024.warmTriggerToRenderedMs?.toFixed(0) ?? "n/a"} ms)` });
    const rc = page.gpt2Traced1024?.readerTriggerToRenderedMs ?? null;
    t.push({ id: "4e", target: "GPT-2 small, 1024 tokens, traced + rendered < 0.5 s from a Run clicked 1 s after the page is ready (Chromium)", met: rc == null ? null : rc < 500,
      value: rc == null ? "n/a" : `${rc.toFixed(0)} ms (samples ${page.gpt2Traced1024.readerSamples.map((v) => v.toFixed(0)).join(", ")})` });
    const c = page.gpt2GridClick1024?.medianMs ?? null;
    t.push({ id: "4d", target: "GPT-2 grid click at 1024 ids < 50 ms (Chromium)", met: c == null ? null : c < 50,
      value: c == null ? `n/a: ${page.gpt2GridClick1024?.error ?? "not measured"}` : `${c.toFixed(1)} ms (${page.gpt2GridClick1024.cells} cells)` });
  }
  return t;
}

function printReport(r, unavailable) {
  const pad = (s, n) => String(s).padStart(n);
  const padE = (s, n) => String(s).padEnd(n);
  console.log(`\n${CALL}, eval, batch 1, causal; ${r.config.rounds} round(s), figure = min over rounds of per-round medians${r.quick ? " (BENCH_QUICK: smoke run, numbers are rough)" : ""}`);
  console.log(`machine: ${r.machine.cpus} cpus, ${r.machine.model}, load ${r.machine.loadavg.map((x) => x.toFixed(1)).join(" ")}`);
  const w = Math.max(26, ...ENGINES.map((e) => LABELS[e].length + 2));
  console.log(`\nforward time, ms (x PyTorch)`);
  console.log(padE("engine", w) + TOKENS.map((T) => pad(`T=${T}`, 18)).join(""));
  for (const e of ENGINES) {
    const cells = TOKENS.map((T) => {
      const s = r.speed[e][T];
      if (s.ms == null) return pad("n/a", 18);
      const x = s.xTorch != null ? ` (x${s.xTorch.toFixed(2)})` : "";
      return pad(`${s.ms < 10 ? s.ms.toFixed(3) : s.ms.toFixed(1)}${x}`, 18);
    });
    console.log(padE(LABELS[e], w) + cells.join(""));
  }
  console.log(padE("ours (Node) x PyTorch 2t", w) + TOKENS.map((T) => pad(r.speed["wasm-node"][T].xTorch2 != null ? `x${r.speed["wasm-node"][T].xTorch2.toFixed(2)}` : "n/a", 18)).join(""));
  console.log(`\nGFLOP/s${r.kernel.available ? ` (fraction of the measured f32x4 peak ${r.kernel.peakGflops.toFixed(1)} GFLOP/s for WASM rows)` : ""}`);
  console.log(padE("engine", w) + TOKENS.map((T) => pad(`T=${T}`, 18)).join(""));
  for (const e of ENGINES) {
    const cells = TOKENS.map((T) => {
      const s = r.speed[e][T];
      if (s.ms == null) return pad("n/a", 18);
      return pad(`${s.gflops.toFixed(2)}${s.fractionOfPeak != null ? ` (${(100 * s.fractionOfPeak).toFixed(0)}%)` : ""}`, 18);
    });
    console.log(padE(LABELS[e], w) + cells.join(""));
  }
  console.log(`  ${r.flopFormula}`);
  if (!r.kernel.available) console.log(`  peak: n/a (${r.kernel.reason})`);
  const missing = Object.entries(unavailable);
  if (missing.length) {
    console.log("\nn/a:");
    for (const [e, why] of missing) console.log(`  ${LABELS[e] ?? e}: ${why}`);
  }
  const torch = r.engines.torch.info;
  console.log("\nPyTorch's baseline (x PyTorch is printed only when it is valid)");
  for (const e of ["torch", "torch-2t"]) {
    const info = r.engines[e].info;
    if (!info) continue;
    console.log(`  ${baselineLine(info, r.gemmReference, info.baseline)}`);
    for (const wmsg of info.warnings ?? []) console.log(`    WARNING: ${wmsg}`);
  }
  const binaries = ["wasm-node", "wasm-node-mt", "wasm-chromium", "wasm-chromium-static", "wasm-chromium-split"].filter((e) => r.engines[e].available).map((e) => `${LABELS[e]}: ${e === "wasm-node" ? r.nodeKernel : r.engines[e].info?.kernel ?? "?"}`);
  if (binaries.length) console.log(`binaries (lab.kernel: relaxed_madd is attention_core[_mt]_fma.wasm, _mt the threaded build): ${binaries.join("; ")}`);
  const tf = r.engines["tfjs-wasm"].info;
  if (tf) console.log(`TF.js ${tf.version} ${tf.backend} backend, ${tf.threads} thread(s), SIMD ${tf.simd}; max |TF.js - ours| ${Math.max(...Object.values(tf.check).map((c) => c.maxAbsDiff)).toExponential(1)}`);
  const tfc = r.engines["tfjs-wasm-chromium"]?.info;
  if (tfc) console.log(`TF.js in Chromium (isolated ${tfc.crossOriginIsolated}): ${tfc.version} ${tfc.backend} backend, ${tfc.threads} thread(s) by its own count (asked for ${tfc.threadsAsked}, the threaded SIMD build), SIMD ${tfc.simd}; max |TF.js - ours| ${Math.max(...Object.values(tfc.check).map((c) => c.maxAbsDiff)).toExponential(1)}`);
  for (const e of ["ort-wasm", "ort-wasm-mt", "ort-wasm-chromium"]) {
    const o = r.engines[e]?.info;
    if (o) console.log(`${LABELS[e]}: onnxruntime-web ${o.version}, ${o.executionProvider} EP, numThreads ${o.threads}, graph optimisation ${o.graphOptimizationLevel}; max |onnxruntime-web - ours| ${Math.max(...Object.values(o.check).map((c) => c.maxAbsDiff)).toExponential(1)}`);
  }
  if (torch?.check) console.log(`max |PyTorch - ours| ${Math.max(...Object.values(torch.check).map((c) => c.maxAbsDiff)).toExponential(1)}`);

  console.log("\nmemory, GPT-2 small, T = 1024, one eval forward (fresh Node process per case)");
  const MiB = (b) => (b == null ? "n/a" : `${(b / 1048576).toFixed(0)} MiB`);
  if (r.memory.skipped) console.log("  skipped");
  else if (r.memory.error) console.log(`  n/a: ${r.memory.error}`);
  else {
    for (const k of ["untraced", "traced", "lazy"]) {
      const m = r.memory[k];
      if (!m) continue;
      const held = m.traceBytes ? `   trace ${MiB(m.traceBytes)} in ${m.traceStages} stages` : m.residentBytes != null ? `   trace kept in WASM memory ${MiB(m.residentBytes)} (${m.traceStages} stages; estimate ${MiB(m.estimateBytes)})` : "";
      if (m.error) console.log(`  ${padE(k, 9)} n/a: ${m.error}`);
      else console.log(`  ${padE(k, 9)} WASM memory ${pad(MiB(m.wasmMemoryBytes), 8)}   RSS ${pad(MiB(m.rssBytes), 8)}   peak RSS ${pad(MiB(m.maxRssBytes), 8)}${held}`);
    }
  }

  console.log("");
  if (r.header.skipped) console.log("safetensors header with a million keys: skipped");
  else if (r.header.error) console.log(`safetensors header with a million keys: n/a (${r.header.error})`);
  else console.log(describeHeader(r.header));

  console.log("\nteaching page in Chromium");
  const p = r.page;
  if (p.skipped) console.log("  skipped");
  else {
    if (p.error) console.log(`  n/a: ${p.error}`);
    if (p.firstView) {
      console.log(`  first view: ${(p.firstView.rawBytes / 1000).toFixed(0)} KB raw, ${(p.firstView.gzipBytes / 1000).toFixed(0)} KB gzip, ${p.firstView.files} files; biggest:`);
      for (const f of p.firstView.biggest.slice(0, 6)) console.log(`    ${pad((f.bytes / 1000).toFixed(1), 8)} KB  ${pad((f.gzipBytes / 1000).toFixed(1), 7)} KB gz  ${f.url}`);
      if (p.firstView.loadedAfterFirstOutput?.length) console.log(`    loaded after the first output (in the next 3 s, no input; ${(p.firstView.withPanels.gzipBytes / 1000).toFixed(0)} KB gzip with them): ${p.firstView.loadedAfterFirstOutput.join(", ")}`);
    }
    if (p.firstViewDist) {
      console.log(`  first view of dist/ (bundled, minified): ${(p.firstViewDist.rawBytes / 1000).toFixed(0)} KB raw, ${(p.firstViewDist.gzipBytes / 1000).toFixed(0)} KB gzip, ${p.firstViewDist.files} files (first output at ${p.firstViewDist.firstOutputMs.toFixed(0)} ms); with the panels fetched right after ${(p.firstViewDist.withPanels.gzipBytes / 1000).toFixed(0)} KB gzip, ${p.firstViewDist.withPanels.files} files; biggest:`);
      for (const f of p.firstViewDist.biggest.slice(0, 4)) console.log(`    ${pad((f.bytes / 1000).toFixed(1), 8)} KB  ${pad((f.gzipBytes / 1000).toFixed(1), 7)} KB gz  ${f.url}`);
    }
    if (p.firstOutputMs) console.log(`  time to first output: ${p.firstOutputMs.median.toFixed(0)} ms (samples ${p.firstOutputMs.samples.map((x) => x.toFixed(0)).join(", ")})`);
    if (p.editToRenderedMs) console.log(`  edit -> rendered trace: ${p.editToRenderedMs.median.toFixed(1)} ms (samples ${p.editToRenderedMs.samples.map((x) => x.toFixed(1)).join(", ")})`);
    if (p.gpt2Traced1024) console.log(`  GPT-2 small, 1024 tokens, traced + rendered: ${p.gpt2Traced1024.triggerToRenderedMs.toFixed(0)} ms from Run as soon as the page is ready, ${p.gpt2Traced1024.navigationToRenderedMs.toFixed(0)} ms from navigation; ${p.gpt2Traced1024.readerTriggerToRenderedMs?.toFixed(0) ?? "n/a"} ms from a Run 1 s after ready; ${p.gpt2Traced1024.warmTriggerToRenderedMs?.toFixed(0) ?? "n/a"} ms from a second Run (warm worker)`);
    if (p.gpt2GridClick1024?.medianMs != null) console.log(`  GPT-2 grid click, 1024 ids: ${p.gpt2GridClick1024.medianMs.toFixed(1)} ms (samples ${p.gpt2GridClick1024.samples.map((x) => x.toFixed(1)).join(", ")})`);
  }

  console.log("\ntargets");
  for (const t of r.targets) console.log(`  ${padE(`(${t.id})`, 5)} ${padE(t.target, 64)} ${padE(t.met == null ? "n/a" : t.met ? "met" : "MISSED", 7)} ${t.value}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
