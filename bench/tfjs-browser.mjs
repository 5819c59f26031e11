// The bench's TF.js peer in Chromium at its best thread count: the threaded SIMD build with the
// machine's cores (at most 4, as ours) on a cross-origin isolated page, else one thread. The same
// module (our MultiHeadAttention's parameters) and input (seededTokens(T, 768, 1)) as the
// Node rows, each output checked against ours on this page (max |diff| <= 1e-4).
// window.benchRun(T, reps) -> {samples, checksum}: one warm-up forward, then `reps` timed ones.
import { loadAttentionLab } from "/lib/attention-lab.js";
import { initTfjs, makeTfjsMha } from "/bench/tfjs-mha.mjs";
import { checksum } from "/bench/timing.mjs";

const CONFIG = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };

try {
  const lab = await loadAttentionLab({ threads: 1 });
  const m = lab.create("MultiHeadAttention", CONFIG);
  const asked = Number(new URLSearchParams(location.search).get("threads"));  // ?threads=N to compare by hand
  const threads = !globalThis.crossOriginIsolated ? 1 : asked >= 1 ? asked : Math.min(navigator.hardwareConcurrency || 1, 4);
  const info = await initTfjs("/node_modules/@tensorflow/tfjs-backend-wasm/dist/", { threads });
  const mha = makeTfjsMha(m.parameters(), CONFIG.num_heads);
  const inputs = new Map();
  const input = (T) => {
    if (!inputs.has(T)) inputs.set(T, lab.seededTokens(T, 768, 1).data);
    return inputs.get(T);
  };
  const checked = new Map();
  window.benchRun = (T, reps) => {
    const x = input(T);
    let out = mha.forward(x, T);
    if (!checked.has(T)) {
      const ours = m.forward({ shape: [1, T, 768], data: x }, { training: false }).output.data;
      let maxAbsDiff = 0;
      for (let i = 0; i < ours.length; i++) maxAbsDiff = Math.max(maxAbsDiff, Math.abs(ours[i] - out[i]));
      if (!(maxAbsDiff <= 1e-4)) throw new Error(`TF.js output differs from ours at T=${T}: max |diff| = ${maxAbsDiff}`);
      checked.set(T, maxAbsDiff);
    }
    const samples = [];
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      out = mha.forward(x, T);
      samples.push(performance.now() - t0);
    }
    return { samples, checksum: checksum(out), maxAbsDiff: checked.get(T) };
  };
  window.benchInfo = { ...info, threadsAsked: threads, userAgent: navigator.userAgent, crossOriginIsolated: globalThis.crossOriginIsolated ?? false };
  document.body.dataset.ready = "true";
} catch (e) {
  document.body.dataset.error = String(e?.message ?? e);
}
