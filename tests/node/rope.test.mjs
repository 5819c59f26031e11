// RoPE through the library, proven by Llama 2's MultiHeadAttention (ch05/07_gpt_to_llama), whose class
// id carries its book folder: its trace shows the tables and the rotated queries and keys, its
// refusals are coded, and a cache continues its positions. (Its PyTorch cases run in fixtures.test.mjs
// and kv-cache.test.mjs with every other class.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab, AttentionError } from "attention-lab";

const lab = await loadAttentionLab();
const LLAMA = "MultiHeadAttention@ch05/07_gpt_to_llama";

function rows(t, first, count) {
  const [b, T, d] = t.shape;
  const data = new Float32Array(b * count * d);
  for (let i = 0; i < b; i++) data.set(t.data.subarray((i * T + first) * d, (i * T + first + count) * d), i * count * d);
  return { shape: [b, count, d], data };
}
const maxDiff = (a, b) => a.data.reduce((m, v, i) => Math.max(m, Math.abs(v - b.data[i])), 0);

test("the trace shows cos and sin (the tables' rows at the tokens' positions) and the rotated queries and keys after the head split", () => {
  const m = lab.create(LLAMA, { d_in: 4, d_out: 4, context_length: 6, num_heads: 2 }, { generator: lab.manualSeed(123) });
  const x = { shape: [1, 6, 4], data: lab.seededTokens(6, 4, 1).data };
  const { trace } = m.forward(x, { trace: true });
  assert.deepEqual(trace.map((s) => s.id), ["input", "queries", "keys", "values", "cos", "sin", "queries_rope", "keys_rope", "attn_scores", "mask", "attn_scores_masked",
    "attn_weights", "context_vec", "heads_concat", "out_proj", "output"]);
  const cos = trace.find((s) => s.id === "cos"), sin = trace.find((s) => s.id === "sin");
  assert.deepEqual([cos.shape, cos.axes], [[6, 2], ["position", "head_dim"]]);
  // head_dim 2: one frequency, 10,000^0 = 1, so row p is cos(p), cos(p) (float32)
  for (let p = 0; p < 6; p++) {
    assert.equal(cos.data[2 * p], Math.fround(Math.cos(p)));
    assert.equal(sin.data[2 * p + 1], Math.fround(Math.sin(p)));
  }
  // position 0 is not turned: the first query row is the same before and after RoPE
  const q = trace.find((s) => s.id === "queries"), qr = trace.find((s) => s.id === "queries_rope");
  assert.deepEqual(Array.from(qr.data.subarray(0, 2)), Array.from(q.data.subarray(0, 2)));
  assert.notDeepEqual(Array.from(qr.data.subarray(2, 4)), Array.from(q.data.subarray(2, 4)));
});

test("an odd head_dim is refused as rope_head_dim with its fixes; dtype other than None as dtype; a bare name is the chapter's class", () => {
  const d = lab.describe(LLAMA, { d_in: 4, d_out: 6, context_length: 6, num_heads: 2 });
  assert.equal(d.ok, false);
  assert.equal(d.diagnostics[0].code, "rope_head_dim");
  assert.match(d.diagnostics[0].message, /head_dim = d_out \/ num_heads = 6 \/ 2 = 3 is odd/);
  assert.deepEqual(d.diagnostics[0].fixes.map((f) => [f.slot, f.value]), [["num_heads", "1"], ["d_out", "8"]]);
  assert.throws(() => lab.create(LLAMA, { d_in: 4, d_out: 6, context_length: 6, num_heads: 2 }), (e) => e instanceof AttentionError && e.code === "rope_head_dim");
  assert.equal(lab.check(LLAMA, { d_in: 4, d_out: 4, context_length: 6, num_heads: 2, dtype: "torch.bfloat16" })[0].code, "dtype");
  assert.equal(lab.describe(LLAMA, { d_in: 4, d_out: 4, context_length: 6, num_heads: 2, dtype: null }).ok, true);
  assert.equal(lab.describe("MultiHeadAttention").class.book.folder, "ch03/01_main-chapter-code");
});

test("a cache continues RoPE's positions: one token at a time equals the uncached forward; past the tables a window cache is refused", () => {
  const m = lab.create(LLAMA, { d_in: 8, d_out: 8, context_length: 12, num_heads: 2 }, { generator: lab.manualSeed(7) });
  const x = { shape: [2, 12, 8], data: lab.seededTokens(24, 8, 3).data };
  const whole = m.forward(x, { training: false }).output;
  const cache = m.newCache();
  m.forward(rows(x, 0, 4), { training: false, cache });
  for (let t = 4; t < 12; t++) assert.ok(maxDiff(m.forward(rows(x, t, 1), { training: false, cache }).output, rows(whole, t, 1)) <= 1e-6, `token ${t}`);
  const window = m.newCache({ window: 4 });
  for (let t = 0; t < 12; t++) m.forward(rows(x, t, 1), { training: false, cache: window });
  assert.throws(() => m.forward(rows(x, 0, 1), { training: false, cache: window }),
    (e) => e.code === "cache_full" && e.slot === "context_length" && /past the 12 rows of RoPE's cos and sin tables/.test(e.message));
});
