// The lazy trace (trace: "lazy"): a traced forward whose stages stay in WASM memory, asked for what a
// page draws. Every value it gives is checked against the eager trace (trace: true) of the same run,
// computed here independently: the max-pooled heatmap, a table's window and its row sums, the
// summaries' counts. Then its lifetime (dispose -> "disposed", the memory given back) and its estimate
// (lab.estimateBytes(..., {trace: "lazy"}) bounds the real peak, measured in a fresh process).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
const child = fileURLToPath(new URL("./children/peak.mjs", import.meta.url));

// GPT-2's layout at a small size: 4 heads, 40 tokens, 2 batch items
const config = { d_in: 16, d_out: 16, context_length: 64, dropout: 0.0, num_heads: 4 };
const x = { shape: [2, 40, 16], data: lab.seededTokens(80, 16, 5).data };
const eager = lab.run("MultiHeadAttention", config, x, { seed: 123, training: false, trace: true });
const byId = Object.fromEntries(eager.trace.map((s) => [s.id, s]));

/** The eager stage's (batch, head) slice max-pooled to (height, width) as the core's rule says, in JS. */
function maxPool(stage, batch, head, height, width) {
  const nd = stage.shape.length;
  const rows = stage.shape[nd - 2], cols = stage.shape[nd - 1];
  const offset = (batch * (nd === 4 ? stage.shape[1] : 1) + head) * rows * cols;
  const out = new Float32Array(height * width);
  for (let y = 0; y < height; y++) {
    const r0 = Math.floor((y * rows) / height), r1 = Math.max(r0 + 1, Math.floor(((y + 1) * rows) / height));
    for (let c = 0; c < width; c++) {
      const c0 = Math.floor((c * cols) / width), c1 = Math.max(c0 + 1, Math.floor(((c + 1) * cols) / width));
      let best = -Infinity;
      for (let r = r0; r < r1; r++) for (let k = c0; k < c1; k++) best = Math.max(best, Number.isNaN(stage.data[offset + r * cols + k]) ? -Infinity : stage.data[offset + r * cols + k]);
      out[y * width + c] = best;
    }
  }
  return out;
}

test("a lazy run has the eager run's output bits and each stage's facts at once, and its data() is the eager trace", () => {
  const lazy = lab.run("MultiHeadAttention", config, x, { seed: 123, training: false, trace: "lazy" });
  assert.deepEqual(lazy.output.data, eager.output.data);
  assert.equal(lazy.pythonCall, eager.pythonCall);
  assert.deepEqual(lazy.trace.stages.map((s) => s.id), eager.trace.map((s) => s.id));
  for (const s of lazy.trace.stages) {
    const e = byId[s.id];
    assert.deepEqual([s.title, s.formula, s.axes, s.shape], [e.title, e.formula, e.axes, e.shape], s.id);
    assert.deepEqual(s.summary, e.summary, s.id);
    assert.deepEqual(s.sliceSummaries, e.sliceSummaries, s.id);
    assert.ok(Object.is(s.first, e.data[0]), s.id);
    assert.ok(!("data" in s), `${s.id} carries no values`);
  }
  // the masked scores and the eval dropout stage stay views of the scores and the weights: no bytes of their own
  const views = ["attn_scores_masked", "attn_weights_dropout"];
  assert.equal(lazy.trace.bytes, eager.trace.filter((s) => !views.includes(s.id)).reduce((sum, s) => sum + s.data.byteLength, 0));
  for (const id of views) assert.deepEqual(lazy.trace.data(id), { shape: byId[id].shape, data: byId[id].data }, id);
  assert.deepEqual(lazy.trace.data("attn_weights"), { shape: byId.attn_weights.shape, data: byId.attn_weights.data });
  assert.deepEqual(lazy.trace.data(), eager.trace);
  lazy.trace.dispose();
});

test("heatmap: the core's max pool of one (batch, head) slice equals the pool of the eager data; masked cells stay -inf", () => {
  const lazy = lab.run("MultiHeadAttention", config, x, { seed: 123, training: false, trace: "lazy" });
  for (const [id, batch, head, height, width] of [["attn_weights", 1, 3, 16, 16], ["attn_weights", 0, 2, 7, 5], ["attn_scores_masked", 1, 0, 9, 40], ["attn_scores", 0, 1, 40, 40]]) {
    const hm = lazy.trace.heatmap(id, { batch, head, height, width });
    assert.deepEqual([hm.stage, hm.rows, hm.cols, hm.height, hm.width], [id, 40, 40, height, width]);
    assert.deepEqual(hm.values, maxPool(byId[id], batch, head, height, width), `${id} (${batch}, ${head}) at ${height} x ${width}`);
  }
  // the strict upper triangle of the masked scores is -inf: the top-right cell of a 4 x 4 pool is all masked
  const masked = lazy.trace.heatmap("attn_scores_masked", { height: 4, width: 4 });
  assert.equal(masked.values[3], -Infinity);
  assert.ok(Number.isFinite(masked.values[12]));
  // a side larger than the slice gives the slice: (40, 40) for the default 512
  const whole = lazy.trace.heatmap("attn_weights", { batch: 1, head: 1 });
  assert.deepEqual([whole.height, whole.width, whole.values.length], [40, 40, 1600]);
  // a rank-2 stage (the (T, T) mask) takes no batch or head; a rank-3 one a batch
  assert.deepEqual(lazy.trace.heatmap("mask", { height: 2, width: 2 }).values, Float32Array.from([1, 1, 0, 1]));
  assert.equal(lazy.trace.heatmap("output", { batch: 1, height: 40, width: 16 }).values[0], byId.output.data[40 * 16]);
  lazy.trace.dispose();
});

test("slice: a table's window and each row's sum over the whole last axis, equal to the eager data", () => {
  const lazy = lab.run("MultiHeadAttention", config, x, { seed: 123, training: false, trace: "lazy" });
  const w = byId.attn_weights;  // (2, 4, 40, 40)
  const s = lazy.trace.slice("attn_weights", { offsets: [1, 2, 3, 0], sizes: [1, 1, 12, 12] });
  assert.deepEqual(s.shape, [1, 1, 12, 12]);
  const base = (1 * 4 + 2) * 1600;
  const want = new Float32Array(144);
  const sums = [];
  for (let r = 0; r < 12; r++) {
    for (let c = 0; c < 12; c++) want[r * 12 + c] = w.data[base + (3 + r) * 40 + c];
    let sum = 0;
    for (let c = 0; c < 40; c++) sum += w.data[base + (3 + r) * 40 + c];
    sums.push(sum);
  }
  assert.deepEqual(s.data, want);
  assert.deepEqual(s.rowSums, sums);
  // the causal mask's zeros: row 3 sees keys 0..3, so its window holds 8 exact zeros
  assert.equal(Array.from(s.data.subarray(0, 12)).filter((v) => v === 0).length, 8);
  lazy.trace.dispose();
});

test("summaries count the non-finite values and the NaN rows (the inverted mask's last query sees no key)", () => {
  const className = lab.classes.find((c) => lab.describe(c).class.mask === "inverted_buffer");
  const facts = lab.describe(className).class;
  const values = { d_in: 4, d_out: 4, context_length: 6, dropout: 0.0, num_heads: 2, qkv_bias: false };
  const cfg = Object.fromEntries(facts.slots.filter((s) => s.name in values).map((s) => [s.name, values[s.name]]));
  const input = { shape: lab.inputShape(className, 6, 4, 1), data: lab.seededTokens(6, 4, 3).data };
  const e = lab.run(className, cfg, input, { training: false, trace: true });
  const lazy = lab.run(className, cfg, input, { training: false, trace: "lazy" });
  const eagerWeights = e.trace.find((s) => s.id === "attn_weights");
  const weights = lazy.trace.stages.find((s) => s.id === "attn_weights");
  const cols = weights.shape.at(-1);
  let nanRows = 0;
  for (let i = 0; i < eagerWeights.data.length; i += cols) if (Number.isNaN(eagerWeights.data[i])) nanRows++;
  assert.ok(nanRows > 0);
  assert.equal(weights.summary.nanRows, nanRows);
  assert.equal(weights.summary.nonFinite, eagerWeights.data.filter((v) => !Number.isFinite(v)).length);
  assert.equal(weights.sliceSummaries[0].nanRows, eagerWeights.sliceSummaries[0].nanRows);
  lazy.trace.dispose();
});

/** The core's summary rule over one slice, in JS: four float32 lanes counted from the first value, their
 * finite values summed in float32 for 4096 values at a time, each partial sum added lane by lane to a
 * double; a last piece that fills no vector added one value at a time. min, max, mean and the counts. */
function summaryOf(data, offset, n) {
  const lanes = [0, 0, 0, 0];
  let sum = 0, inBlock = 0, finite = 0, negInf = 0, zeros = 0, min = Infinity, max = -Infinity;
  const whole = n - (n % 4);
  for (let i = 0; i < n; i++) {
    const v = data[offset + i];
    if (v === -Infinity) negInf++;
    if (!Number.isFinite(v)) continue;
    finite++;
    if (v === 0) zeros++;
    min = Math.min(min, v);
    max = Math.max(max, v);
  }
  for (let i = 0; i < whole; i += 4) {
    for (let l = 0; l < 4; l++) {
      const v = data[offset + i + l];
      if (Number.isFinite(v)) lanes[l] = Math.fround(lanes[l] + v);
    }
    inBlock += 4;
    if (inBlock === 4096) {
      for (let l = 0; l < 4; l++) sum += lanes[l];
      lanes.fill(0);
      inBlock = 0;
    }
  }
  if (inBlock > 0) for (let l = 0; l < 4; l++) sum += lanes[l];
  for (let i = whole; i < n; i++) if (Number.isFinite(data[offset + i])) sum += data[offset + i];
  return { min, max, mean: sum / finite, negInf, zeros, count: n };
}

test("a long stage's slice summaries, streamed in row blocks by the traced forward, have the bits of the summary rule over the slice", () => {
  // 600 tokens: the forward takes each (600, 600) slab through its stages 108 rows at a time, so the
  // pieces end inside the 4096-value partial sums; 360,000 values per slice leave a partial one at the end.
  const cfg = { d_in: 4, d_out: 4, context_length: 600, dropout: 0.0, num_heads: 2 };
  const input = { shape: [1, 600, 4], data: lab.seededTokens(600, 4, 7).data };
  const e = lab.run("MultiHeadAttention", cfg, input, { seed: 123, training: false, trace: true });
  for (const id of ["attn_scores", "attn_scores_masked", "attn_weights"]) {
    const stage = e.trace.find((s) => s.id === id);
    const n = stage.shape.at(-1) * stage.shape.at(-2);
    assert.equal(stage.sliceSummaries.length, 2, id);
    stage.sliceSummaries.forEach((got, k) => {
      const want = summaryOf(stage.data, k * n, n);
      for (const key of Object.keys(want)) assert.ok(Object.is(got[key], want[key]), `${id} slice ${k} ${key}: ${got[key]} vs ${want[key]}`);
    });
  }
  assert.ok(e.trace.find((s) => s.id === "attn_scores_masked").sliceSummaries[0].negInf > 0);
});

test("module.forward(x, {trace: 'lazy'}) gives the untraced output bits; bad queries are refused by code and slot", () => {
  const m = lab.create("MultiHeadAttention", config);
  const plain = m.forward(x, { training: false });
  const { output, trace } = m.forward(x, { training: false, trace: "lazy" });
  assert.deepEqual(output.data, plain.output.data);
  const refused = (f, code, slot) => assert.throws(f, (err) => err.code === code && err.slot === slot && err.hint.length > 0, `${code} ${slot}`);
  refused(() => trace.heatmap("attn_wieghts"), "trace_stage", "stage");
  assert.throws(() => trace.heatmap("attn_wieghts"), /no stage 'attn_wieghts'/);
  refused(() => trace.heatmap("attn_weights", { batch: 2 }), "trace_range", "batch");
  assert.throws(() => trace.heatmap("attn_weights", { head: 4 }), /head 4 is outside axis 1 \(num_heads\) of attn_weights, which has 4 entries/);
  refused(() => trace.heatmap("attn_weights", { head: 1.5 }), "trace_range", "head");
  refused(() => trace.heatmap("attn_weights", { width: 0 }), "trace_range", "width");
  refused(() => trace.heatmap("attn_weights", { height: "wide" }), "trace_range", "height");
  refused(() => trace.slice("attn_weights", { offsets: [0, 0, 30, 0], sizes: [1, 1, 12, 12] }), "trace_range", "offsets");
  refused(() => trace.slice("attn_weights", { offsets: [0, 0], sizes: [1, 1] }), "trace_range", "offsets");
  refused(() => trace.slice("attn_weights", { sizes: [1, 1, 1, 1] }), "trace_range", "offsets");
  trace.dispose();
  m.dispose();
});

test("dispose releases the trace: its handle, its bytes and its heap; later queries are 'disposed'", () => {
  const handles = lab.handlesInUse();
  const inUse = lab.heapInUse();
  const lazy = lab.run("MultiHeadAttention", config, x, { seed: 123, training: false, trace: "lazy" });
  assert.equal(lab.handlesInUse(), handles + 1);
  assert.equal(lab.traceBytesInUse(), lazy.trace.bytes);
  assert.ok(lab.heapInUse() - inUse >= lazy.trace.bytes, "the stages are in the heap");
  lazy.trace.dispose();
  assert.equal(lazy.trace.disposed, true);
  assert.equal(lab.handlesInUse(), handles);
  assert.equal(lab.traceBytesInUse(), 0);
  assert.ok(lab.heapInUse() - inUse < 64 * 1024, `heap given back: ${lab.heapInUse() - inUse} bytes still in use`);
  for (const f of [() => lazy.trace.heatmap("attn_weights"), () => lazy.trace.slice("output", { offsets: [0, 0, 0], sizes: [1, 1, 1] }), () => lazy.trace.data("output"), () => lazy.trace.data()]) {
    assert.throws(f, (err) => err.code === "disposed" && err.slot === "trace");
  }
  lazy.trace.dispose();  // twice is nothing
});

test("the lazy estimate bounds the real peak (heap growth over the run, its heatmaps and an export, plus the JS copies), and is under the eager estimate", (t) => {
  const jobs = [
    { className: "MultiHeadAttention", config: { d_in: 64, d_out: 64, context_length: 512, dropout: 0.0, num_heads: 4 }, inputShape: [1, 512, 64], trace: "lazy", training: false },
    { className: "MultiHeadAttention", config: { d_in: 96, d_out: 96, context_length: 400, dropout: 0.1, num_heads: 6 }, inputShape: [2, 300, 96], trace: "lazy", training: true },
    { className: "CausalAttention", config: { d_in: 48, d_out: 32, context_length: 700, dropout: 0.0 }, inputShape: [1, 700, 48], trace: "lazy", training: false },
  ];
  for (const job of jobs) {
    const { estimate, peak, heap, results } = JSON.parse(execFileSync(process.execPath, ["--max-old-space-size=2048", child, JSON.stringify(job)], { encoding: "utf8" }));
    const eagerEstimate = lab.estimateBytes(job.className, job.config, job.inputShape, { trace: true }).bytes;
    const what = `${job.className} on (${job.inputShape}): lazy estimate ${(estimate / 1048576).toFixed(1)} MiB, peak ${(peak / 1048576).toFixed(1)} MiB (heap ${(heap / 1048576).toFixed(1)} + results ${(results / 1048576).toFixed(1)}), eager estimate ${(eagerEstimate / 1048576).toFixed(1)} MiB`;
    t.diagnostic(what);
    assert.ok(estimate >= peak, `under: ${what}`);
    assert.ok(estimate <= 1.5 * peak, `over 1.5x: ${what}`);
    assert.ok(estimate < eagerEstimate, `not under the eager estimate: ${what}`);
  }
});
