// One measurement for tests/node/memory-estimate.test.mjs, in a fresh process (so the WASM heap's
// high-water mark starts low): argv[2] is {className, config, inputShape, trace, training}. Prints
// {estimate, peak}: the core's estimate, and how much the heap's footprint grew over create + forward.
import { loadAttentionLab } from "attention-lab";

const job = JSON.parse(process.argv[2]);
const lab = await loadAttentionLab();
const estimate = lab.estimateBytes(job.className, job.config, job.inputShape, { trace: job.trace }).bytes;
const numel = job.inputShape.reduce((a, b) => a * b, 1);
const x = { shape: job.inputShape, data: lab.seededTokens(1, numel, 7).data };
const before = lab.heapPeak();
const m = lab.create(job.className, job.config, { generator: lab.manualSeed(1) });
m.forward(x, { training: job.training, trace: job.trace });
console.log(JSON.stringify({ estimate, peak: lab.heapPeak() - before }));
