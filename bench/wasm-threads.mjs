// Our Node rows of bench/run.mjs, each in its own process (the core loads once per realm): the
// library's default in Node, the threaded binary on a pool of the machine's cores (at most 4), or with
// --threads 1 the single-thread one; the same module (seed 123) and inputs (seededTokens(T, 768, 1))
// as the other WASM rows. Prints {ready, threads, kernel}, then answers each stdin line "T reps"
// with {samples_ms, checksum} (bench/timing.mjs's loop); "quit" ends it.
import readline from "node:readline";
import { loadAttentionLab } from "attention-lab";
import { timeForwards } from "./timing.mjs";

const CONFIG = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };
const at = process.argv.indexOf("--threads");
const lab = await loadAttentionLab(at > 0 ? { threads: Number(process.argv[at + 1]) } : undefined);
const m = lab.create("MultiHeadAttention", CONFIG);
const inputs = new Map();
const input = (T) => {
  if (!inputs.has(T)) inputs.set(T, { shape: [1, T, 768], data: lab.seededTokens(T, 768, 1).data });
  return inputs.get(T);
};
console.log(JSON.stringify({ ready: true, threads: lab.threads, kernel: lab.kernel, node: process.version }));
for await (const line of readline.createInterface({ input: process.stdin })) {
  if (line.trim() === "quit") break;
  const [T, reps] = line.trim().split(/\s+/).map(Number);
  try {
    const r = timeForwards(m, input(T), reps);
    console.log(JSON.stringify({ samples_ms: r.samples, checksum: r.checksum }));
  } catch (e) {
    console.log(JSON.stringify({ error: String(e?.message ?? e) }));
  }
}
