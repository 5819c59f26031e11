// Generation (issue 18 point 5), part of npm run bench: GPT-2 small-shaped synthetic weights (n_layer 12,
// n_embd 768, n_head 12, vocab 50257, n_ctx 1024; seeded random float32, written to a temporary
// safetensors file), greedy, a prompt of 64 tokens, then 32 decoded tokens:
//  (1) decode tokens per second, ours (WASM in Node, model.generate, weights resident) with and without
//      the KV cache, against PyTorch 1.13 on one thread running the book's KV-cache GPTModel on the same
//      weights (bench/torch_generate.py), interleaved in rounds in this one invocation; targets: cached
//      >= 1.2x PyTorch's tokens/s, and cached >= 5x ours uncached;
//  (2) the bandwidth bound: float32 weight bytes a token reads / WebAssembly's streaming bandwidth
//      measured here (bench/kernel_bench.cpp decode_bench_json: a read-only f32x4 sum over 256 MiB);
//      target: cached decode within 1.25x of it;
//  (3) peak memory: the WASM heap's high-water mark over a cached generation (a fresh process) against
//      the core's estimate, and PyTorch's peak RSS;
//  (4) long context: a prompt of 900 tokens, then 16 decoded with the cache, ours and PyTorch on one
//      thread, in the first two rounds (one with BENCH_QUICK); target: ours within 1.5x of its 64 + 32
//      decode's ms/token (a token then reads ~13% more bytes: every layer's 900 keys and values beside
//      the weights), so a decode step that copies or repacks the cache shows here.
// A decoded token is one forward of one new position (cached) or of the whole context (uncached) plus
// the pick; ours also includes the facade's reads of its wte and wpe rows. Prefill (the first forward,
// where ours also unpacks and packs every weight) is reported apart. Writes bench/results/generate.json
// (BENCH_QUICK=1: one round, generate-quick.json). The machine's load average is printed and saved: the
// figures mean little when it is above the core count.
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { loadAttentionLab } from "attention-lab";
import { baselineLine, judgeBaseline, nativeGemm, torchEnv } from "./baseline.mjs";
import { gpt2Tensors, safetensorsHeader } from "../tests/safetensors.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const QUICK = process.env.BENCH_QUICK === "1";
const ROUNDS = QUICK ? 1 : 3;
const PROMPT = 64;
const DECODED = 32;
const LONG_PROMPT = 900;  // (4): most of n_ctx 1024
const LONG_DECODED = 16;
const LONG_ROUNDS = Math.min(ROUNDS, 2);  // its prefills take ~15 s a round
const SKIP = new Set((process.env.BENCH_SKIP ?? "").split(",").map((s) => s.trim()).filter(Boolean));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const load = () => os.loadavg().map((x) => Number(x.toFixed(2)));

/** A GPT-2 small-shaped F32 file: ln weights 1, everything else uniform in +-0.035 (std 0.02, GPT-2's init) from a seeded xorshift. */
function writeSyntheticGpt2(file) {
  const tensors = gpt2Tensors();
  const { head } = safetensorsHeader(tensors);
  const fd = openSync(file, "w");
  writeSync(fd, head);
  let s = 0x2545f491;
  for (const [key, , shape] of tensors) {
    const n = shape.reduce((a, b) => a * b, 1);
    const chunk = new Float32Array(Math.min(n, 1 << 22));
    for (let done = 0; done < n; done += chunk.length) {
      const m = Math.min(chunk.length, n - done);
      if (/ln_(1|2|f)\.weight$/.test(key)) chunk.fill(1, 0, m);
      else {
        for (let i = 0; i < m; i++) {
          s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
          chunk[i] = ((s >>> 0) / 4294967296 - 0.5) * 0.07;
        }
      }
      writeSync(fd, new Uint8Array(chunk.buffer, 0, m * 4));
    }
  }
  closeSync(fd);
}

/**
 * A child process that answers one JSON line per stdin line (bench/torch_generate.py's protocol, which
 * bench/generate-ours.mjs follows): {next, ask(text), close}; a dead child answers {ready: false, error}.
 */
function lineProcess(command, args, env, name) {
  const p = spawn(command, args, { env, stdio: ["pipe", "pipe", "inherit"] });
  const lines = readline.createInterface({ input: p.stdout });
  const queue = [];
  lines.on("line", (l) => queue.shift()?.(JSON.parse(l)));
  p.on("exit", () => { for (const r of queue.splice(0)) r({ ready: false, error: `${name} exited` }); });
  const next = () => new Promise((resolve) => queue.push(resolve));
  return { next, ask: (text) => { const r = next(); p.stdin.write(`${text}\n`); return r; }, close: () => p.stdin.end("quit\n") };
}

/** bench/torch_generate.py on `threads` threads (BENCH_SKIP names "torch" for one thread, "torch-2t" for two). */
function torchProcess(file, threads) {
  if (SKIP.has(threads === 1 ? "torch" : `torch-${threads}t`)) return null;
  if (!existsSync("/usr/bin/python3")) return null;
  return lineProcess("/usr/bin/python3", [path.join(ROOT, "bench/torch_generate.py"), file], torchEnv(threads), "bench/torch_generate.py");
}

/** Ours on `threads` threads in a child process (bench/generate-ours.mjs, loadAttentionLab({threads})). */
function oursProcess(file, threads) {
  return lineProcess(process.execPath, [path.join(ROOT, "bench/generate-ours.mjs"), file, String(threads)], process.env, "bench/generate-ours.mjs");
}

async function decodeBench() {
  const file = path.join(ROOT, "build/wasm/attention_kernel_bench.mjs");
  if (!existsSync(file)) return { available: false, reason: "build/wasm/attention_kernel_bench.mjs not built (bash scripts/build.sh)" };
  const bench = await (await import(pathToFileURL(file).href)).default();
  return { available: true, ...JSON.parse(bench.UTF8ToString(bench._decode_bench_json(QUICK ? 1 : 0))) };
}

/** Ours: one greedy generation of decoded + 1 tokens (the prefill's pick, then `decoded` one-position forwards). */
async function ours(model, ids, cache, decoded = DECODED) {
  const g = await model.generate(ids, { maxNewTokens: decoded + 1, cache });
  const ms = g.steps.map((s) => s.ms);
  return { prefill_ms: ms[0], decode_ms: ms.slice(1), ids: g.tokenIds.slice(ids.length, ids.length + decoded), resident: g.resident };
}

const perToken = (r) => sum(r.decode_ms) / r.decode_ms.length;  // ms per decoded token

async function main() {
  const out = { promptTokens: PROMPT, decodedTokens: DECODED, rounds: ROUNDS, loadBefore: load(), cpus: os.cpus().length, cpu: os.cpus()[0]?.model };
  const dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-generate-bench-"));
  const file = path.join(dir, "model.safetensors");
  try {
    writeSyntheticGpt2(file);
    const lab = await loadAttentionLab();
    const model = await lab.loadGPT2(readFileSync(file));  // the file's bytes in memory, as a page has them once read
    const c = model.config;
    out.config = { n_layer: c.n_layer, n_embd: c.n_embd, n_head: c.n_head, vocab_size: c.vocab_size, n_ctx: c.n_ctx };
    // float32 weights a decoded token reads: each block's four matrices and the tied output head (wte)
    out.weightBytesPerToken = 4 * (c.n_layer * 12 * c.n_embd * c.n_embd + c.vocab_size * c.n_embd);
    const longIds = Array.from({ length: LONG_PROMPT }, (_, i) => (i * 977) % c.vocab_size);  // torch_generate.py's prompt
    const ids = longIds.slice(0, PROMPT);

    const kernel = [await decodeBench()];
    const torch = torchProcess(file, 1);
    out.torch = torch ? await torch.next() : { ready: false, error: SKIP.has("torch") ? "skipped (BENCH_SKIP)" : "/usr/bin/python3 is missing" };
    const torch2 = torchProcess(file, 2);
    out.torch2 = torch2 ? await torch2.next() : { ready: false, error: SKIP.has("torch-2t") ? "skipped (BENCH_SKIP)" : "/usr/bin/python3 is missing" };
    // ours on one thread beside the in-process lab (the default: the threaded core, on lab.threads)
    out.oursThreads = lab.threads;
    const ours1 = lab.threads > 1 ? oursProcess(file, 1) : null;
    out.ours1Setup = ours1 ? await ours1.next() : null;
    await ours(model, ids.slice(0, 8), true);  // warm-up (V8's tiers)
    const runs = { ours: [], ours1: [], torch: [], torch2: [], oursUncached: [], torchUncached: [], oursLong: [], torchLong: [] };
    for (let r = 0; r < ROUNDS; r++) {  // interleaved; the order rotates
      const steps = [
        async () => runs.ours.push(await ours(model, ids, true)),
        async () => out.torch.ready && runs.torch.push(await torch.ask(`cached ${PROMPT} ${DECODED}`)),
        async () => out.torch2.ready && runs.torch2.push(await torch2.ask(`cached ${PROMPT} ${DECODED}`)),
        async () => out.ours1Setup?.ready && runs.ours1.push(await ours1.ask(`cached ${PROMPT} ${DECODED}`)),
      ];
      if (r < LONG_ROUNDS) {
        steps.push(async () => runs.oursLong.push(await ours(model, longIds, true, LONG_DECODED)));
        steps.push(async () => out.torch.ready && runs.torchLong.push(await torch.ask(`cached ${LONG_PROMPT} ${LONG_DECODED}`)));
      }
      for (let i = 0; i < steps.length; i++) await steps[(i + r) % steps.length]();
    }
    // without the cache: one round each (ours reruns 65..96 positions per token: ~30 x the cached work)
    runs.oursUncached.push(await ours(model, ids, false));
    if (out.torch.ready) runs.torchUncached.push(await torch.ask(`uncached ${PROMPT} ${DECODED}`));
    kernel.push(await decodeBench());
    torch?.close();
    torch2?.close();
    ours1?.close();
    model.dispose();
    out.loadAfter = load();

    const best = (xs) => (xs.length ? xs.reduce((a, b) => (perToken(a) <= perToken(b) ? a : b)) : null);
    const summary = (xs) => {
      const b = best(xs);
      return b && { msPerToken: perToken(b), tokensPerSecond: 1000 / perToken(b), medianMsPerToken: median(b.decode_ms), fastestTokenMs: Math.min(...xs.flatMap((x) => x.decode_ms)), prefillMs: b.prefill_ms, roundsMsPerToken: xs.map(perToken), ids: b.ids };
    };
    out.ours = summary(runs.ours);
    out.oursUncached = summary(runs.oursUncached);
    out.pytorch = summary(runs.torch);
    out.pytorchUncached = summary(runs.torchUncached);
    out.pytorch2 = summary(runs.torch2);
    out.ours1 = lab.threads > 1 ? summary(runs.ours1) : out.ours;
    out.long = { promptTokens: LONG_PROMPT, decodedTokens: LONG_DECODED, ours: summary(runs.oursLong), pytorch: summary(runs.torchLong) };
    out.torchPeakRssBytes = runs.torch.length ? Math.max(...[...runs.torch, ...runs.torchUncached].map((r) => r.peak_rss_bytes)) : null;
    out.streamGBps = kernel.every((k) => k.available) ? Math.max(...kernel.map((k) => k.streamGBps)) : null;
    out.gemv = kernel[0].available ? kernel.map((k) => k.gemv) : kernel[0].reason;
    out.boundMsPerToken = out.streamGBps ? out.weightBytesPerToken / (out.streamGBps * 1e6) : null;
    const same = (a, b) => { let i = 0; while (i < a.length && a[i] === b[i]) i++; return i; };
    out.idsAgree = { oursCachedUncached: same(out.ours.ids, out.oursUncached.ids), oursPytorch: out.pytorch ? same(out.ours.ids, out.pytorch.ids) : null, of: DECODED };

    // (3) the WASM heap's peak over a cached generation, in a fresh process (its high-water mark starts low)
    const child = path.join(ROOT, "tests/node/children/gpt2-generate-peak.mjs");
    const peak = JSON.parse(execFileSync(process.execPath, ["--max-old-space-size=2048", child, JSON.stringify({ path: file, promptTokens: PROMPT, maxNewTokens: DECODED + 1, cache: true, resident: null })], { encoding: "utf8" }));
    out.peakBytes = peak.peak;
    out.estimateBytes = peak.estimate;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const mb = (b) => `${(b / 1e6).toFixed(0)} MB`;
  const t = out.torch;
  console.log(`\nGPT-2 small-shaped synthetic weights, greedy: prompt ${PROMPT} tokens, then ${DECODED} decoded (load average ${out.loadBefore.join(" ")} -> ${out.loadAfter.join(" ")} on ${out.cpus} CPUs)`);
  if (t.warnings?.length) console.log(`  PyTorch warnings: ${t.warnings.join("; ")}`);
  const row = (label, s) => console.log(`  ${label.padEnd(34)} ${s ? `${s.msPerToken.toFixed(1).padStart(7)} ms/token  ${s.tokensPerSecond.toFixed(2).padStart(6)} tokens/s  (fastest token ${s.fastestTokenMs.toFixed(1)} ms; prefill ${s.prefillMs.toFixed(0)} ms; rounds ${s.roundsMsPerToken.map((x) => x.toFixed(1)).join(", ")})` : "n/a"}`);
  row(`ours, KV cache (WASM, Node, ${out.oursThreads} thread${out.oursThreads === 1 ? "" : "s"})`, out.ours);
  if (out.oursThreads > 1) row("ours, KV cache (WASM, Node, 1 thread)", out.ours1);
  row(`ours, no cache (${out.oursThreads} thread${out.oursThreads === 1 ? "" : "s"})`, out.oursUncached);
  row("PyTorch 1 thread, KV cache", out.pytorch);
  row("PyTorch 1 thread, no cache", out.pytorchUncached);
  row("PyTorch 2 threads, KV cache", out.pytorch2);
  console.log(`  long context: prompt ${LONG_PROMPT} tokens, then ${LONG_DECODED} decoded`);
  row(`ours, KV cache (${out.oursThreads} thread${out.oursThreads === 1 ? "" : "s"})`, out.long.ours);
  row("PyTorch 1 thread, KV cache", out.long.pytorch);
  console.log(`  WASM streaming bandwidth ${out.streamGBps?.toFixed(2) ?? "n/a"} GB/s; a token reads ${mb(out.weightBytesPerToken)} of float32 weights: bound ${out.boundMsPerToken?.toFixed(1) ?? "n/a"} ms/token`);
  console.log(`  ids: ours cached = ours uncached for the first ${out.idsAgree.oursCachedUncached} of ${DECODED}; ours = PyTorch for the first ${out.idsAgree.oursPytorch ?? "n/a"}`);
  // one thread against one thread, and the threaded core against PyTorch on two
  const vsTorch = out.pytorch && out.ours1 ? out.ours1.tokensPerSecond / out.pytorch.tokensPerSecond : null;
  // The baseline rule (bench/baseline.mjs): OpenBLAS, its kernel unforced, torch.mm at >= 60% of this
  // machine's native GEMM; otherwise a ratio against it means nothing.
  out.gemmReference = nativeGemm();
  out.baseline = judgeBaseline(t, out.gemmReference, 1);
  out.baselineValid = out.baseline.valid;
  console.log(`  ${baselineLine(t, out.gemmReference, out.baseline)}`);
  out.baseline2 = judgeBaseline(out.torch2, out.gemmReference, 2);
  if (out.torch2.ready) console.log(`  ${baselineLine(out.torch2, out.gemmReference, out.baseline2)}`);
  const vsTorch2 = out.pytorch2 && out.oursThreads === 2 ? out.ours.tokensPerSecond / out.pytorch2.tokensPerSecond : null;
  const vsBound = out.boundMsPerToken ? out.ours1.msPerToken / out.boundMsPerToken : null;
  const vsUncached = out.oursUncached.msPerToken / out.ours.msPerToken;
  const longVsShort = out.long.ours.msPerToken / out.ours.msPerToken;
  const rows = [
    ["(D1) cached decode >= 1.2x PyTorch's tokens/s (1 thread each)", vsTorch == null || !out.baselineValid ? null : vsTorch >= 1.2,
      vsTorch == null ? "n/a" : `x${vsTorch.toFixed(2)}${out.baselineValid ? "" : " (baseline degraded: not valid)"}`],
    ["(D1b) cached decode >= 1.2x PyTorch's tokens/s (2 threads each)", vsTorch2 == null || !out.baseline2.valid ? null : vsTorch2 >= 1.2,
      vsTorch2 == null ? "n/a" : `x${vsTorch2.toFixed(2)}${out.baseline2.valid ? "" : " (baseline degraded: not valid)"}`],
    ["(D2) cached decode within 1.25x of the bandwidth bound (1 thread)", vsBound == null ? null : vsBound <= 1.25, vsBound == null ? "n/a" : `x${vsBound.toFixed(2)}`],
    ["(D3) cached decode >= 5x uncached (64 + 32 tokens)", vsUncached >= 5, `x${vsUncached.toFixed(1)}`],
    ["(D4) peak WASM memory <= the core's estimate", out.peakBytes <= out.estimateBytes, `${mb(out.peakBytes)} (estimate ${mb(out.estimateBytes)}; PyTorch peak RSS ${out.torchPeakRssBytes ? mb(out.torchPeakRssBytes) : "n/a"})`],
    [`(D5) ${LONG_PROMPT} + ${LONG_DECODED} decode within 1.5x of ${PROMPT} + ${DECODED}'s ms/token`, longVsShort <= 1.5,
      `x${longVsShort.toFixed(2)} (${out.long.ours.msPerToken.toFixed(1)} ms/token${out.long.pytorch ? `; PyTorch ${out.long.pytorch.msPerToken.toFixed(1)}` : ""})`],
  ];
  console.log("\ntargets");
  for (const [what, met, value] of rows) console.log(`  ${what.padEnd(58)} ${met == null ? "n/a   " : met ? "met   " : "MISSED"}  ${value}`);
  out.targets = rows.map(([target, met, value]) => ({ target, met, value }));
  const dest = path.join(ROOT, "bench/results", QUICK ? "generate-quick.json" : "generate.json");
  writeFileSync(dest, `${JSON.stringify(out, null, 1)}\n`);
  console.log(`\nwritten to ${path.relative(ROOT, dest)}`);
}

await main();
