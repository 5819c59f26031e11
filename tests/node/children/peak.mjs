// One measurement for tests/node/memory-estimate.test.mjs, in a fresh process (so the WASM heap's
// high-water mark starts low): argv[2] is {className, config, inputShape, trace, training}. Prints
// {estimate, peak, heap, results}: the core's estimate; how much the heap's footprint grew over
// create + forward (heap) and the bytes of the JS copies the forward handed back (results: the output
// and every traced stage's data); peak = heap + results, what the run holds at once.
import { loadAttentionLab } from "attention-lab";

const job = JSON.parse(process.argv[2]);
const lab = await loadAttentionLab();
const estimate = lab.estimateBytes(job.className, job.config, job.inputShape, { trace: job.trace }).bytes;
const numel = job.inputShape.reduce((a, b) => a * b, 1);
const x = { shape: job.inputShape, data: lab.seededTokens(1, numel, 7).data };
const before = lab.heapPeak();
const m = lab.create(job.className, job.config, { generator: lab.manualSeed(1) });
const r = m.forward(x, { training: job.training, trace: job.trace });
const heap = lab.heapPeak() - before;
const results = r.output.data.byteLength + (r.trace ?? []).reduce((sum, s) => sum + s.data.byteLength, 0);
console.log(JSON.stringify({ estimate, peak: heap + results, heap, results }));
