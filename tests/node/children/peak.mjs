// One measurement for tests/node/memory-estimate.test.mjs, in a fresh process (so the WASM heap's
// high-water mark starts low): argv[2] is {className, config, inputShape, trace, training, reserve} (trace: true, false or "lazy"). Prints
// {estimate, peak, heap, results, reserved, reserveGrowth}: the core's estimate; how much the heap's footprint grew over
// create + forward (heap) and the bytes of the JS copies the forward handed back (results: the output
// and every traced stage's data); peak = heap + results, what the run holds at once.
import { loadAttentionLab } from "attention-lab";

const job = JSON.parse(process.argv[2]);
const lab = await loadAttentionLab();
const estimate = lab.estimateBytes(job.className, job.config, job.inputShape, { trace: job.trace }).bytes;
const numel = job.inputShape.reduce((a, b) => a * b, 1);
const x = { shape: job.inputShape, data: lab.seededTokens(1, numel, 7).data };
// job.reserve: lab.reserveMemory of the run first (the heap it took: reserveGrowth), then the run
let reserved = 0, reserveGrowth = 0;
if (job.reserve) {
  const start = lab.heapPeak();
  reserved = lab.reserveMemory(job.className, job.config, job.inputShape, { trace: job.trace }).bytes;
  reserveGrowth = lab.heapPeak() - start;
}
const before = lab.heapPeak();
const m = lab.create(job.className, job.config, { generator: lab.manualSeed(1) });
const r = m.forward(x, { training: job.training, trace: job.trace });
let exported = 0;
if (job.trace === "lazy") {
  // a lazy trace: what the page asks of it (a heatmap of every stage's first slice, a table), then an
  // export of its largest stage, copied out whole (a JS copy the results count)
  for (const s of r.trace.stages) if (s.shape.length >= 2) r.trace.heatmap(s.id, { width: 512, height: 512 });
  const largest = r.trace.stages.reduce((a, s) => (s.summary.count > a.summary.count ? s : a));
  exported = r.trace.data(largest.id).data.byteLength;
}
const heap = lab.heapPeak() - before;
const stages = Array.isArray(r.trace) ? r.trace : [];
const results = r.output.data.byteLength + exported + stages.reduce((sum, s) => sum + s.data.byteLength, 0);
console.log(JSON.stringify({ estimate, peak: heap + results, heap, results, reserved, reserveGrowth }));
