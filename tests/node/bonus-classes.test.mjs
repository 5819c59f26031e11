// Issue 10: the book's chapter 4 bonus classes, GroupedQueryAttention and MultiHeadAttentionWithSWA
// (without the KV cache), added as data: their slots, checks, facts and trace come from the core.
// Bit-exactness against PyTorch is in the fixtures (tests/node/fixtures.test.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
const batch = () => ({ shape: [2, 6, 3], data: new Float32Array([...lab.bookTokens().data, ...lab.bookTokens().data]) });

test("the slot-order trap: MultiHeadAttention's order pasted into a bonus class is named as such, once, with the fix", () => {
  for (const [call, fixed] of [
    ["GroupedQueryAttention(768, 768, 1024, 0.0, 12)", "GroupedQueryAttention(768, 768, 0.0, 12, num_kv_groups)"],
    ["MultiHeadAttentionWithSWA(768, 768, 1024, 0.0, 12)", "MultiHeadAttentionWithSWA(768, 768, 0.0, 12)"],
  ]) {
    const p = lab.parseCall(call);
    const diagnostics = lab.check(p.className, p.config);
    assert.deepEqual(diagnostics.map((d) => d.code), ["mha_slot_order"], call);
    const [d] = diagnostics;
    assert.match(d.message, new RegExp(`^slot 3 of ${p.className} is dropout; 1024, 0.0, 12 looks like MultiHeadAttention's order`));
    assert.ok(d.hint.includes(fixed), d.hint);
    assert.equal(d.pytorch, "ZeroDivisionError: float modulo");
    assert.deepEqual(d.fixes, [{ slot: "dropout", value: "0.0" }, { slot: "num_heads", value: "12" }]);
  }
});

test("GroupedQueryAttention: the checks of its slots, its call, and what it saves", () => {
  const codes = (config) => lab.check("GroupedQueryAttention", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 4, ...config }).map((d) => d.code);
  const groups = lab.check("GroupedQueryAttention", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 4, num_kv_groups: 3 });
  assert.equal(groups[0].code, "kv_groups_divisibility");
  assert.deepEqual(groups[0].fixes.map((f) => f.value), ["1", "2", "4"]);
  assert.equal(groups[0].pytorch, "AssertionError: num_heads must be divisible by num_kv_groups");
  assert.ok(codes({ num_kv_groups: 2, d_out: 10 }).includes("heads_divisibility"));
  assert.deepEqual(codes({ num_kv_groups: 2, dtype: "torch.bfloat16" }), ["dtype"]);
  assert.ok(!codes({ num_kv_groups: 2, dtype: "torch.float32" }).includes("dtype"));
  assert.ok(codes({}).includes("missing_slot"));
  assert.ok(codes({ num_kv_groups: 2, context_length: 6 }).includes("unknown_slot"), "no context_length slot");
  const d = lab.describe("GroupedQueryAttention", { d_in: 768, d_out: 768, dropout: 0.0, num_heads: 12, num_kv_groups: 4, qkv_bias: true });
  assert.equal(d.pythonCall, "GroupedQueryAttention(768, 768, 0.0, 12, 4, qkv_bias=True)");
  assert.equal(d.headDim, 64);
  assert.equal(d.keyValueHeads, 4);
  assert.equal(d.kvCacheBytesPerToken, 2 * 4 * 64 * 4);
  assert.equal(d.kvCacheBytesPerTokenMha, 2 * 768 * 4);
  // W_key and W_value are (num_kv_groups * head_dim, d_in); out_proj has no bias
  assert.deepEqual(d.parameters.map((p) => [p.name, p.shape]), [
    ["W_key.weight", [256, 768]], ["W_key.bias", [256]], ["W_value.weight", [256, 768]], ["W_value.bias", [256]],
    ["W_query.weight", [768, 768]], ["W_query.bias", [768]], ["out_proj.weight", [768, 768]],
  ]);
  assert.equal(lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0, num_heads: 12 }).kvCacheBytesPerToken, d.kvCacheBytesPerTokenMha);
});

test("GroupedQueryAttention's trace: keys and values per key/value head, shared by query heads in order", () => {
  const m = lab.create("GroupedQueryAttention", { d_in: 3, d_out: 4, dropout: 0.0, num_heads: 4, num_kv_groups: 2 });
  const { trace } = m.forward(batch(), { training: false, trace: true });
  const stage = (id) => trace.find((s) => s.id === id);
  assert.deepEqual(stage("keys").shape, [2, 2, 6, 1]);
  assert.deepEqual(stage("keys").axes, ["b", "num_kv_groups", "num_tokens", "head_dim"]);
  assert.deepEqual(stage("queries").shape, [2, 4, 6, 1]);
  assert.match(stage("attn_scores").formula, /repeat_interleave\(2, dim=1\)/);
  // query heads 0 and 1 read key head 0: scores = q * k with head_dim 1, so score / q is key head 0's values
  const q = stage("queries").data;
  const k = stage("keys").data;
  const s = stage("attn_scores").data;
  for (const h of [0, 1, 2, 3]) {
    const kv = Math.floor(h / 2);
    for (let i = 0; i < 6; i++) {
      for (let j = 0; j < 6; j++) assert.equal(s[(h * 6 + i) * 6 + j], Math.fround(q[h * 6 + i] * k[kv * 6 + j]), `head ${h} row ${i} key ${j}`);
    }
  }
  assert.equal(stage("out_proj").title, "Output projection (no bias)");
});

test("MultiHeadAttentionWithSWA: key j is hidden from query i when j > i or i - j >= sliding_window_size; None is plain causal", () => {
  const weightsOf = (window) => {
    const m = lab.create("MultiHeadAttentionWithSWA", { d_in: 3, d_out: 2, dropout: 0.0, num_heads: 2, sliding_window_size: window });
    const { trace } = m.forward(batch(), { training: false, trace: true });
    return { mask: trace.find((s) => s.id === "mask"), weights: trace.find((s) => s.id === "attn_weights").data };
  };
  const { mask, weights } = weightsOf(3);
  assert.match(mask.title, /Sliding-window causal mask: each query sees itself and at most 2 keys before it \(sliding_window_size = 3\)/);
  for (let i = 0; i < 6; i++) {
    for (let j = 0; j < 6; j++) {
      const hidden = j > i || i - j >= 3;
      assert.equal(mask.data[i * 6 + j], hidden ? 1 : 0, `mask ${i},${j}`);
      if (hidden) assert.equal(weights[i * 6 + j], 0);
      else assert.ok(weights[i * 6 + j] > 0);
    }
  }
  const causal = weightsOf(null);
  for (let i = 0; i < 6; i++) for (let j = 0; j < 6; j++) assert.equal(causal.mask.data[i * 6 + j], j > i ? 1 : 0);
  assert.match(causal.mask.title, /Causal mask for the 6 tokens given/);
  assert.equal(lab.describe("MultiHeadAttentionWithSWA", { d_in: 3, d_out: 2, dropout: 0, num_heads: 2, sliding_window_size: 3 }).pythonCall, "MultiHeadAttentionWithSWA(3, 2, 0.0, 2, sliding_window_size=3)");
  assert.equal(lab.check("MultiHeadAttentionWithSWA", { d_in: 3, d_out: 2, dropout: 0, num_heads: 2, sliding_window_size: 0 })[0].code, "non_positive");
  // a window as wide as the tokens is plain causal, to the bit
  assert.deepEqual(Array.from(weightsOf(6).weights), Array.from(causal.weights));
});
