// The bench page's script: the library's public API in the browser, the same module (seed 123) and
// input (seededTokens(T, 768, 1)) as the Node row. window.benchRun(T, reps) -> {samples, checksum}:
// one warm-up forward, then `reps` timed ones; checksum is the sum of the last output.
import { loadAttentionLab } from "/lib/attention-lab.js";
import { checksum, timeForwards } from "/bench/timing.mjs";

const CONFIG = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };

try {
  // A page's main thread defaults to one thread; cross-origin isolated, the bench asks for the
  // default a Worker gets (the machine's cores, at most 4), as the teaching page's run worker has.
  const lab = await loadAttentionLab(globalThis.crossOriginIsolated ? { threads: Math.min(navigator.hardwareConcurrency || 1, 4) } : undefined);
  const m = lab.create("MultiHeadAttention", CONFIG);
  const inputs = new Map();
  const input = (T) => {
    if (!inputs.has(T)) inputs.set(T, { shape: [1, T, 768], data: lab.seededTokens(T, 768, 1).data });
    return inputs.get(T);
  };
  // ?split on a page that is not isolated: the library's head split (the page and plain Workers).
  const split = new URLSearchParams(location.search).has("split") ? (await import("/lib/head-split.js")).createHeadSplit() : null;
  window.benchRun = split ? (T, reps) => timeSplit(split, m, input(T), reps) : (T, reps) => timeForwards(m, input(T), reps);
  window.benchInfo = { userAgent: navigator.userAgent, crossOriginIsolated: globalThis.crossOriginIsolated ?? false, kernel: lab.kernel, threads: lab.threads, ...(split ? { workers: split.workers } : {}) };
  document.body.dataset.ready = "true";
} catch (e) {
  document.body.dataset.error = String(e?.message ?? e);
}

/** timeForwards through a head split (async: the Workers answer by message). */
async function timeSplit(split, module, x, reps) {
  let out = (await split.forward(module, x, { training: false })).output;
  const samples = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    out = (await split.forward(module, x, { training: false })).output;
    samples.push(performance.now() - t0);
  }
  return { samples, checksum: checksum(out.data) };
}
