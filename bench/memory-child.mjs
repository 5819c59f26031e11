// One memory measurement for npm run bench, in a fresh Node process (bench/run.mjs starts one per
// case): GPT-2 small attention, MultiHeadAttention(768, 768, 1024, 0.0, 12), one eval forward on
// 1024 tokens, with --trace (eager: every stage copied out), --lazy (the page's trace, kept in WASM
// memory: residentBytes what it holds, estimateBytes the core's resident estimate) or neither.
// Prints one JSON line:
//   wasmMemoryBytes  the WebAssembly memory after the run; it only grows, so it is the high-water mark
//   rssBytes         process RSS after the run; maxRssBytes the process's peak RSS (getrusage)
import { loadAttentionLab } from "attention-lab";

const lazy = process.argv.includes("--lazy");
const trace = lazy ? "lazy" : process.argv.includes("--trace");
const T = Number(process.env.BENCH_MEMORY_TOKENS ?? 1024);

function wasmBytes(core) {
  // Emscripten 3.1.6 puts HEAP8 on the module object; later versions keep wasmMemory instead.
  if (core?.HEAP8?.length) return { bytes: core.HEAP8.length, via: "lab._core.HEAP8.length" };
  if (core?.wasmMemory?.buffer) return { bytes: core.wasmMemory.buffer.byteLength, via: "lab._core.wasmMemory" };
  if (core?.asm?.memory?.buffer) return { bytes: core.asm.memory.buffer.byteLength, via: "lab._core.asm.memory" };
  return { bytes: null, via: "not found on lab._core" };
}

try {
  const lab = await loadAttentionLab();
  const startup = wasmBytes(lab._core).bytes;
  const m = lab.create("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 });
  const x = { shape: [1, T, 768], data: lab.seededTokens(T, 768, 1).data };
  const t0 = performance.now();
  const r = m.forward(x, { training: false, trace });
  const ms = performance.now() - t0;
  const traceBytes = trace === true ? r.trace.reduce((n, st) => n + st.data.byteLength, 0) : 0;
  const resident = lazy ? { residentBytes: r.trace.bytes, estimateBytes: lab.estimateBytes("MultiHeadAttention", m.config, x.shape, { trace: "lazy" }).bytes } : {};
  const w = wasmBytes(lab._core);
  const mem = process.memoryUsage();
  console.log(JSON.stringify({
    trace, T, forwardMs: ms, wasmMemoryBytes: w.bytes, wasmMemoryVia: w.via, wasmMemoryAtStartupBytes: startup,
    rssBytes: mem.rss, maxRssBytes: process.resourceUsage().maxRSS * 1024, arrayBuffersBytes: mem.arrayBuffers,
    traceStages: trace === true ? r.trace.length : lazy ? r.trace.stages.length : 0, traceBytes, outputBytes: r.output.data.byteLength, ...resident,
  }));
} catch (e) {
  console.log(JSON.stringify({ trace, error: String(e?.message ?? e) }));
}
