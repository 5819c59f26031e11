// One process per thread count for tests/node/threads.test.mjs (the core loads once per realm):
// argv[2] is {threads, gpt2}. Loads the core with {threads} and prints {threads, kernel, hashes}: a
// SHA-256 of the exact bits of a GPT-2-small attention forward on 256 tokens (eval, and traced in
// training with dropout), and with gpt2 of the GPT-2-small-shaped fixture model's whole run and a
// cached and an uncached greedy generation. The process must exit by itself: no dispose() here.
import { createHash } from "node:crypto";
import { loadAttentionLab } from "attention-lab";
import { GPT2_FIXTURES, gpt2File } from "../../gpt2-files.mjs";

const job = JSON.parse(process.argv[2]);
const lab = await loadAttentionLab(job.threads === undefined ? undefined : { threads: job.threads });
const bits = (...arrays) => {
  const h = createHash("sha256");
  for (const a of arrays) h.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return h.digest("hex");
};
const MHA = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.1, num_heads: 12 };
const x = { shape: [1, 256, 768], data: lab.seededTokens(256, 768, 5).data };
const mha = lab.create("MultiHeadAttention", MHA, { generator: lab.manualSeed(123) });
const hashes = { eval: bits(mha.forward(x, { training: false }).output.data) };
const traced = mha.forward(x, { training: true, generator: lab.manualSeed(9), trace: true });
hashes.trainTraced = bits(traced.output.data, ...traced.trace.map((s) => s.data));
if (job.gpt2) {
  const c = GPT2_FIXTURES.cases.find((k) => k.name === "small_2blocks");
  const model = await lab.loadGPT2(gpt2File(lab, c));
  const r = await model.run(c.token_ids);
  hashes.gpt2 = bits(r.lastLogits, ...r.layers.flatMap((l) => [l.input.data, l.attnWeights.data]));
  const prompt = c.token_ids.slice(0, 6);
  const generated = async (cache) => {
    const g = await model.generate(prompt, { maxNewTokens: 3, cache });
    return JSON.stringify({ ids: g.tokenIds, steps: g.steps.map((s) => [s.token, s.prob, s.top]) });  // probabilities as exact doubles
  };
  hashes.cached = await generated(true);
  hashes.uncached = await generated(false);
}
console.log(JSON.stringify({ threads: lab.threads, kernel: lab.kernel, hashes }));
