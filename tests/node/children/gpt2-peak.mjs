// One measurement for tests/node/gpt2-memory.test.mjs, in a fresh process (the WASM heap's high-water
// mark starts low): argv[2] is {path, numTokens, numHeads, attention}. Opens the file as a Blob (read by
// slices, never whole), runs the model, and prints {estimate, peak, resultBytes, nextTokens, layers,
// size} (resultBytes is what the result holds in JS, every layer's tensors, which the estimate counts),
// or {estimate, code, peak} when the run rejects.
import { openAsBlob } from "node:fs";
import { loadAttentionLab } from "attention-lab";

const job = JSON.parse(process.argv[2]);
const lab = await loadAttentionLab();
const model = await lab.loadGPT2(await openAsBlob(job.path), job.numHeads ? { num_heads: job.numHeads } : undefined);
const ids = Array.from({ length: job.numTokens }, (_, i) => (i * 977) % model.config.vocab_size);
const estimate = model.estimateBytes(ids.length, { attention: job.attention });
const before = lab.heapPeak();
let r;
try {
  r = await model.run(ids, { attention: job.attention });
} catch (e) {
  // a refusal (too_large before anything is read) or a failure (out_of_memory late): its code and when
  console.log(JSON.stringify({ estimate, code: e.code, peak: lab.heapPeak() - before }));
  process.exit(0);
}
const peak = lab.heapPeak() - before;
let resultBytes = r.lastLogits.byteLength;
for (const layer of r.layers) for (const t of Object.values(layer)) resultBytes += t.data.byteLength;
model.dispose();
console.log(JSON.stringify({ estimate, peak, resultBytes, size: model.config.size, layers: r.layers.length, nextTokens: r.nextTokens }));
