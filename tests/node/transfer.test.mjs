// Weight transfer through the public API (copyWeights, convert, compare, equivalentConfig, copyCode):
// per-stage comparison, PyTorch code, wrapper <-> fused MHA.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab } from "attention-lab";
import { stackTwo } from "./helpers.mjs";

const lab = await loadAttentionLab();
const x = stackTwo(lab.bookTokens());

test("v2 -> v1 with all transposes agrees; skipping W_key's with d=3 names it and differs > 1e-3", () => {
  const t = { copy: true, transpose: true };
  const v2 = lab.create("SelfAttention_v2", { d_in: 3, d_out: 3 }, { generator: lab.manualSeed(789) });
  const good = lab.copyWeights(v2, lab.create("SelfAttention_v1", { d_in: 3, d_out: 3 }), { W_query: t, W_key: t, W_value: t });
  assert.ok(good.maxAbsDiff <= 1e-6);
  assert.ok(good.stages.every((s) => s.maxAbsDiff <= 1e-6));
  const bad = lab.copyWeights(v2, lab.create("SelfAttention_v1", { d_in: 3, d_out: 3 }), { W_query: t, W_key: { copy: true, transpose: false }, W_value: t });
  assert.ok(bad.maxAbsDiff > 1e-3);
  assert.equal(bad.matrices[1].action, "copied");
  assert.match(bad.matrices[1].hint, /W_key lands transposed/);
  assert.equal(bad.stages.find((s) => s.id === "queries").maxAbsDiff, 0);
  assert.ok(bad.stages.find((s) => s.id === "keys").maxAbsDiff > 1e-3);
  assert.equal(bad.code.split("\n")[1], "sa_v1.W_key = torch.nn.Parameter(sa_v2.W_key.weight)");
  assert.equal(bad.code.split("\n")[0], "sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)");
});

test("Wrapper(3, 1, 6, 0.0, 2) -> equivalent MHA(3, 2, 6, 0.0, 2) with identity out_proj agrees within 1e-6", () => {
  const wrapper = lab.create("MultiHeadAttentionWrapper", { d_in: 3, d_out: 1, context_length: 6, dropout: 0.0, num_heads: 2 }, { generator: lab.manualSeed(123) });
  const { module: fused, code } = lab.convert(wrapper);
  assert.equal(fused.className, "MultiHeadAttention");
  assert.deepEqual(fused.config, { d_in: 3, d_out: 2, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false });
  const out = fused.parameters().find((p) => p.name === "out_proj.weight");
  assert.deepEqual(Array.from(out.data), [1, 0, 0, 1]);
  const a = wrapper.forward(x, { training: false }).output.data;
  const b = fused.forward(x, { training: false }).output.data;
  a.forEach((v, i) => assert.ok(Math.abs(v - b[i]) <= 1e-6));
  const cmp = lab.compare(wrapper, fused, x);
  assert.equal(cmp.agree, true);
  assert.ok(cmp.stages.length >= 10);
  assert.match(code, /torch\.cat\(\[h\.W_query\.weight for h in wrapper\.heads\], dim=0\)/);
  assert.match(code, /torch\.eye\(2\)/);
});

test("a head-merge-order mistake (interleaved) shows up in the comparison", () => {
  const wrapper = lab.create("MultiHeadAttentionWrapper", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 });
  const { module: wrong } = lab.convert(wrapper, { layout: "interleaved" });
  const cmp = lab.compare(wrapper, wrong, x);
  assert.equal(cmp.agree, false);
  assert.ok(cmp.stages.find((s) => s.id === "queries").maxAbsDiff > 1e-3);
});

// pitfalls.md B3
test("equivalentConfig converts the wrapper's per-head d_out and the fused total", () => {
  const e = lab.equivalentConfig("MultiHeadAttentionWrapper", { d_in: 768, d_out: 64, context_length: 1024, dropout: 0.0, num_heads: 12 });
  assert.equal(e.pythonCall, "MultiHeadAttention(768, 768, 1024, 0.0, 12)");
  const back = lab.equivalentConfig("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 });
  assert.equal(back.config.d_out, 64);
  assert.throws(() => lab.equivalentConfig("SelfAttention_v1", { d_in: 3, d_out: 2 }), (e) => e.code === "convert_unsupported");
  // B3: Wrapper(768, 768, 1024, 0.0, 12) on (8, 1024, 768) would be 12x too wide: 9216.
  const w = lab.describe("MultiHeadAttentionWrapper", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 });
  assert.equal(w.outputWidth, 9216);
  assert.ok(w.diagnostics.some((d) => d.code === "wrapper_total_width" && /d_out = 64/.test(d.hint)));
});

test("copyCode gives report.code's lines before anything is built, and refuses other classes", () => {
  const plan = { W_query: { copy: true, transpose: true }, W_key: { copy: true, transpose: false } };
  const v2 = lab.create("SelfAttention_v2", { d_in: 3, d_out: 3 });
  const v1 = lab.create("SelfAttention_v1", { d_in: 3, d_out: 3 });
  assert.equal(lab.copyCode("SelfAttention_v2", "SelfAttention_v1", plan), lab.copyWeights(v2, v1, plan).code);
  assert.equal(lab.copyCode("SelfAttention_v1", "SelfAttention_v2", plan).split("\n")[0], "sa_v2.W_query.weight = torch.nn.Parameter(sa_v1.W_query.T)");
  assert.equal(lab.copyCode("SelfAttention_v1", "SelfAttention_v2", plan).split("\n")[2], "# sa_v2.W_value.weight keeps its own initial values");
  assert.throws(() => lab.copyCode("CausalAttention", "SelfAttention_v1", plan), (e) => e.code === "copy_unsupported");
  assert.throws(() => lab.copyCode("SelfAttention_v2", "SelfAttention_v1", { W_query: null }), (e) => e.code === "copy_plan");
});
