// The bench's onnxruntime-web peer in Chromium at its best thread count: numThreads = the machine's
// cores (at most 4, as ours) on a cross-origin isolated page, else one thread (?threads=N to compare by
// hand). The same module (our MultiHeadAttention's parameters, exported by bench/onnx_export.py) and
// input (seededTokens(T, 768, 1)) as the Node rows, each output checked against ours on this page
// (max |diff| <= 1e-4). window.benchRun(T, reps) -> {samples, checksum, maxAbsDiff}: one warm-up
// forward, then `reps` timed ones.
import { loadAttentionLab } from "/lib/attention-lab.js";
import { makeOrtMha, maxAbsDiff } from "/bench/ort-mha.mjs";
import { checksum } from "/bench/timing.mjs";

const CONFIG = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };

try {
  const lab = await loadAttentionLab({ threads: 1 });
  const m = lab.create("MultiHeadAttention", CONFIG);
  const asked = Number(new URLSearchParams(location.search).get("threads"));
  const threads = !globalThis.crossOriginIsolated ? 1 : asked >= 1 ? asked : Math.min(navigator.hardwareConcurrency || 1, 4);
  const model = new Uint8Array(await (await fetch("/bench-model/mha.onnx")).arrayBuffer());
  const mha = await makeOrtMha(model, { threads, wasmPaths: "/node_modules/onnxruntime-web/dist/" });
  const inputs = new Map();
  const input = (T) => {
    if (!inputs.has(T)) inputs.set(T, lab.seededTokens(T, 768, 1).data);
    return inputs.get(T);
  };
  const checked = new Map();
  window.benchRun = async (T, reps) => {
    const x = input(T);
    let out = await mha.forward(x, T);
    if (!checked.has(T)) {
      const diff = maxAbsDiff(m.forward({ shape: [1, T, 768], data: x }, { training: false }).output.data, out);
      if (!(diff <= 1e-4)) throw new Error(`onnxruntime-web output differs from ours at T=${T}: max |diff| = ${diff}`);
      checked.set(T, diff);
    }
    const samples = [];
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      out = await mha.forward(x, T);
      samples.push(performance.now() - t0);
    }
    return { samples, checksum: checksum(out), maxAbsDiff: checked.get(T) };
  };
  window.benchInfo = { ...mha.info, threadsAsked: threads, userAgent: navigator.userAgent, crossOriginIsolated: globalThis.crossOriginIsolated ?? false };
  document.body.dataset.ready = "true";
} catch (e) {
  document.body.dataset.error = String(e?.message ?? e);
}
