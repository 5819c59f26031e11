// The bench page's script: the library's public API in the browser, the same module (seed 123) and
// input (seededTokens(T, 768, 1)) as the Node row. window.benchRun(T, reps) -> {samples, checksum}:
// one warm-up forward, then `reps` timed ones; checksum is the sum of the last output.
import { loadAttentionLab } from "/lib/attention-lab.js";

const CONFIG = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };

try {
  const lab = await loadAttentionLab();
  const m = lab.create("MultiHeadAttention", CONFIG);
  const inputs = new Map();
  const input = (T) => {
    if (!inputs.has(T)) inputs.set(T, { shape: [1, T, 768], data: lab.seededTokens(T, 768, 1).data });
    return inputs.get(T);
  };
  window.benchRun = (T, reps) => {
    const x = input(T);
    let out = m.forward(x, { training: false }).output;
    const samples = [];
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      out = m.forward(x, { training: false }).output;
      samples.push(performance.now() - t0);
    }
    let checksum = 0;
    for (const v of out.data) checksum += v;
    return { samples, checksum };
  };
  window.benchInfo = { userAgent: navigator.userAgent, crossOriginIsolated: globalThis.crossOriginIsolated ?? false };
  document.body.dataset.ready = "true";
} catch (e) {
  document.body.dataset.error = String(e?.message ?? e);
}
