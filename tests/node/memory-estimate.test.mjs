// The memory estimate (lab.estimateBytes, the core's plan) is honest. Over random setups of every class (traced and not, eval
// and training), the real peak a create + forward takes, JS results included (the growth of the WASM
// heap plus the bytes of the output and trace copied out of it), is measured in a fresh process and
// compared with the core's estimate (the number it refuses runs by, against its one budget):
// estimate >= peak, and not more than 1.5x it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { loadAttentionLab } from "attention-lab";
import { random } from "./helpers.mjs";

const lab = await loadAttentionLab();
const child = fileURLToPath(new URL("./children/peak.mjs", import.meta.url));

function setups(count) {
  const pick = random(2026);
  const out = [];
  while (out.length < count) {
    const className = lab.classes[out.length % lab.classes.length];
    const facts = lab.describe(className).class;
    const num_heads = 1 + pick(8);
    const d_out = facts.heads === "fused" ? num_heads * (1 + pick(40)) : 1 + pick(160);
    const d_in = facts.needsSquare ? d_out : 8 + pick(200);  // classes whose forward works on x's own width
    const T = 16 + pick(900);
    // every slot the class has, from its facts
    const values = { d_in, d_out, context_length: T + pick(64), dropout: pick(2) ? 0.1 : 0.0, num_heads, num_kv_groups: [1, num_heads][pick(2)], sliding_window_size: pick(2) ? null : 1 + pick(T), qkv_bias: pick(2) === 1 };
    const config = Object.fromEntries(facts.slots.filter((s) => s.name in values).map((s) => [s.name, values[s.name]]));
    if (!lab.describe(className, config).ok) continue;  // e.g. an odd head_dim where RoPE needs an even one
    const inputShape = lab.inputShape(className, T, d_in, 1 + pick(2));
    const trace = pick(3) > 0, training = pick(2) === 1;
    // Big enough that the allocator's fixed costs do not dominate; small enough for a quick test (the
    // estimate of the run as it will be made: an untraced one of these sizes is seldom over 16 MiB).
    const bytes = lab.estimateBytes(className, config, inputShape, { trace }).bytes;
    if (bytes < (trace ? 24 : 8) * 1048576 || bytes > 400 * 1048576) continue;
    out.push({ className, config, inputShape, trace, training });
  }
  return out;
}

test("the estimate bounds the real peak (WASM heap plus the JS results), within 1.5x, over 21 random setups of every class", (t) => {
  const rows = [];
  for (const job of setups(21)) {
    const { estimate, peak, heap, results } = JSON.parse(execFileSync(process.execPath, ["--max-old-space-size=2048", child, JSON.stringify(job)], { encoding: "utf8" }));
    rows.push({ ...job, estimate, peak, heap, results, ratio: estimate / peak });
  }
  const ratios = rows.map((r) => r.ratio);
  t.diagnostic(`estimate / peak: ${Math.min(...ratios).toFixed(3)} to ${Math.max(...ratios).toFixed(3)} (${rows.filter((r) => !r.trace).length} of ${rows.length} untraced)`);
  const seen = new Set(rows.map((r) => r.className));
  assert.equal(seen.size, lab.classes.length, "every class was measured");
  assert.ok(rows.some((r) => r.trace) && rows.some((r) => !r.trace));
  for (const r of rows) {
    const what = `${r.className}(${JSON.stringify(r.config)}) on (${r.inputShape}) trace=${r.trace}: estimate ${(r.estimate / 1048576).toFixed(1)} MiB, peak ${(r.peak / 1048576).toFixed(1)} MiB (heap ${(r.heap / 1048576).toFixed(1)} + results ${(r.results / 1048576).toFixed(1)})`;
    assert.ok(r.heap > 0 && r.results > 0, what);
    assert.ok(r.estimate >= r.peak, `under: ${what}`);
    assert.ok(r.estimate <= 1.5 * r.peak, `over 1.5x: ${what}`);
  }
});

test("traced MultiHeadAttention(8, 8, 10000, 0.0, 2) one token past the budget is refused before allocating; on (1, 4000, 8) the estimate bounds the peak", () => {
  const config = { d_in: 8, d_out: 8, context_length: 10000, dropout: 0.0, num_heads: 2 };
  const at = (n) => lab.estimateBytes("MultiHeadAttention", config, [1, n, 8]);
  const { budget } = at(1);
  let fits = 1;  // the most tokens whose traced run fits the budget
  for (let hi = 10000; fits < hi;) {
    const mid = Math.ceil((fits + hi) / 2);
    if (at(mid).bytes <= budget) fits = mid;
    else hi = mid - 1;
  }
  const m = lab.create("MultiHeadAttention", config);
  const before = lab.heapPeak();
  const x = { shape: [1, fits + 1, 8], data: lab.seededTokens(fits + 1, 8, 1).data };
  assert.throws(() => m.forward(x, { training: false, trace: true }), (e) => e.code === "too_large" && new RegExp(`over the ${Math.round(budget / 1048576).toLocaleString("en-US")} MiB budget`).test(e.message));
  assert.ok(lab.heapPeak() - before < 4 * 1048576, "nothing big was allocated");
  const job = { className: "MultiHeadAttention", config, inputShape: [1, 4000, 8], trace: true, training: false };
  const { estimate, peak, heap, results } = JSON.parse(execFileSync(process.execPath, ["--max-old-space-size=2048", child, JSON.stringify(job)], { encoding: "utf8" }));
  assert.ok(peak > 900 * 1048576 && results > 400 * 1048576, `peak ${peak} (heap ${heap}, results ${results})`);
  assert.ok(estimate >= peak && estimate <= 1.5 * peak, `estimate ${estimate}, peak ${peak}`);
});

test("reserveMemory takes a run's estimate from the heap ahead of it, and the run then grows the heap by almost nothing; over the budget it is refused before allocating", () => {
  const config = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };
  const job = { className: "MultiHeadAttention", config, inputShape: [1, 512, 768], trace: "lazy", training: false, reserve: true };
  const { estimate, heap, reserved, reserveGrowth } = JSON.parse(execFileSync(process.execPath, ["--max-old-space-size=2048", child, JSON.stringify(job)], { encoding: "utf8" }));
  assert.equal(reserved, estimate);  // the lazy run's estimate (estimateBytes(..., {trace: "lazy"}))
  assert.ok(reserveGrowth >= 0.95 * estimate, `the reserve grew the heap by ${reserveGrowth} of ${estimate}`);
  assert.ok(heap < 0.05 * estimate, `the run after it grew the heap by ${heap} (estimate ${estimate})`);
  // a run past the budget: too_large, naming the input shape, and nothing taken
  const big = { ...config, context_length: 100000 };
  const before = lab.heapPeak();
  assert.throws(() => lab.reserveMemory("MultiHeadAttention", big, [1, 60000, 768], { trace: "lazy" }), (e) => e.code === "too_large" && e.slot === "inputShape" && /over the memory budget/.test(e.message));
  assert.ok(lab.heapPeak() - before < 4 * 1048576, "nothing big was allocated");
  assert.throws(() => lab.reserveMemory("MultiHeadAttention", { ...config, num_heads: 5 }, [1, 8, 768]), (e) => e.code === "heads_divisibility");
});
