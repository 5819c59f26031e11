// A module Web Worker that runs large forward passes off the main thread with the same facade:
// torch.manual_seed(seed), the constructor, then forward with tracing. The trace's Float32Arrays are
// transferred back (no copy).
import { loadAttentionLab } from "../lib/attention-lab.js";

const ready = loadAttentionLab();

self.addEventListener("message", async (e) => {
  const { id, className, config, x, seed, training } = e.data;
  try {
    const lab = await ready;
    const gen = lab.manualSeed(seed);
    const module = lab.create(className, config, { generator: gen });
    const r = module.forward(x, { training, generator: gen, trace: true });
    const buffers = new Set([r.output.data.buffer, ...r.trace.map((s) => s.data.buffer)]);
    self.postMessage({ id, ok: true, output: r.output, trace: r.trace }, [...buffers]);
  } catch (err) {
    self.postMessage({ id, ok: false, error: { code: err?.code ?? "error", slot: err?.slot ?? "", message: err?.message ?? String(err), hint: err?.hint ?? "" } });
  }
});
