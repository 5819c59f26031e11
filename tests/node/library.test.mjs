// The library API contract (web/lib/attention-lab.d.ts): classes and slots, parseCall, create and
// forward with the book's numbers, describe and check, the trace, copyWeights, seeds and tokens.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab, AttentionError } from "attention-lab";
import { round4, stackTwo } from "./helpers.mjs";

const lab = await loadAttentionLab();
const gpt2Small = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };
const batch = () => ({ shape: [2, 6, 3], data: new Float32Array([...lab.bookTokens().data, ...lab.bookTokens().data]) });

function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail("expected an AttentionError");
}

test("lab.classes lists the book's five classes in order, its chapter 3 bonus ways to write multi-head attention, then its chapter 4 bonus classes, then its chapter 5 bonus class", () => {
  assert.deepEqual(lab.classes, ["SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention", "MultiHeadAttentionCombinedQKV", "MHAEinsum", "MHAPyTorchScaledDotProduct", "MHAPyTorchSDPAWithoutFlash", "MHAPyTorchFlexAttention", "MHAPyTorchClass", "PyTorchMultiHeadAttention", "GroupedQueryAttention", "MultiHeadLatentAttention", "MultiHeadAttentionWithSWA", "GatedMultiHeadAttention", "MultiHeadAttention@ch05/07_gpt_to_llama"]);
});

test("lab.slots gives name, position, type, default and doc; default undefined when required", () => {
  const slots = lab.slots("MultiHeadAttention");
  assert.deepEqual(slots.map((s) => [s.name, s.position, s.type]), [
    ["d_in", 1, "int"], ["d_out", 2, "int"], ["context_length", 3, "int"], ["dropout", 4, "float"], ["num_heads", 5, "int"], ["qkv_bias", 6, "bool"],
  ]);
  assert.equal(slots[0].default, undefined);
  assert.equal(slots[5].default, false);
  assert.match(slots[1].doc, /TOTAL/);
  assert.match(lab.slots("MultiHeadAttentionWrapper")[1].doc, /EACH head/);
  assert.equal(thrown(() => lab.slots("Nope")).code, "unknown_class");
});

test("parseCall names each positional value left to right", () => {
  const p = lab.parseCall("MultiHeadAttention(768, 768, 1024, 0.0, 12)");
  assert.equal(p.className, "MultiHeadAttention");
  assert.deepEqual(p.slots.map((s) => [s.position, s.name, s.value, s.source]), [
    [1, "d_in", 768, "positional"], [2, "d_out", 768, "positional"], [3, "context_length", 1024, "positional"],
    [4, "dropout", 0, "positional"], [5, "num_heads", 12, "positional"], [6, "qkv_bias", false, "default"],
  ]);
  assert.deepEqual(p.config, gpt2Small);
  // No error or warning; one note: d_in == d_out makes the weights square (a missing .T would still fit).
  assert.deepEqual(p.diagnostics.map((d) => [d.severity, d.code]), [["info", "square_weights"]]);
});

test("torch.manual_seed(123); SelfAttention_v1(3, 2) on the six book tokens gives the book's context vectors", () => {
  const m = lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 }, { generator: lab.manualSeed(123) });
  const { output } = m.forward(lab.bookTokens());
  assert.deepEqual(output.shape, [6, 2]);
  const expected = [[0.2996, 0.8053], [0.3061, 0.821], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.299, 0.804]];
  assert.deepEqual(Array.from(output.data, round4), expected.flat());
});

test("torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, 2) on two stacked copies gives the book's context vectors", () => {
  const m = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, { generator: lab.manualSeed(123) });
  const { output } = m.forward(stackTwo(lab.bookTokens()));
  assert.deepEqual(output.shape, [2, 6, 2]);
  assert.deepEqual(Array.from(output.data.slice(0, 2), round4), [0.319, 0.4858]);
  assert.deepEqual(Array.from(output.data.slice(22, 24), round4), [0.2575, 0.4028]);
});

test("a module and describe give the output width with its rule, head_dim and the parameter count", () => {
  const ex32 = lab.create("MultiHeadAttentionWrapper", { d_in: 3, d_out: 1, context_length: 6, dropout: 0.0, num_heads: 2 });
  assert.equal(ex32.outputWidth, 2);
  assert.equal(ex32.outputWidthRule, "num_heads x d_out = 2 x 1 = 2");
  assert.equal(ex32.headDim, 1);
  const d = lab.describe("MultiHeadAttention", gpt2Small);
  assert.equal(d.ok, true);
  assert.equal(d.headDim, 64);
  assert.equal(d.outputWidth, 768);
  assert.equal(d.parameterCount, 2360064);
  assert.equal(d.maskBytes, 1024 * 1024 * 4);
  assert.equal(d.outputWidthRule, "d_out = 768, shared by 12 heads of 64");
  const m = lab.create("MultiHeadAttention", gpt2Small);
  assert.equal(m.headDim, 64);
  assert.equal(m.outputWidth, 768);
  assert.equal(m.parameterCount, 2360064);
  assert.deepEqual(m.parameters().map((p) => p.name), ["W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight", "out_proj.bias"]);
});

test("bad setups give clear errors naming the slots and values", () => {
  const a = thrown(() => lab.create("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0.0, num_heads: 2 }));
  assert.ok(a instanceof AttentionError);
  assert.equal(a.code, "heads_divisibility");
  assert.equal(a.slot, "d_out");
  assert.match(a.message, /d_out = 3 .*num_heads = 2 \(3 % 2 = 1\)/);
  assert.ok(a.hint.length > 0);

  const causal = lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0 });
  const b = thrown(() => causal.forward({ shape: [1, 7, 3], data: new Float32Array(21) }));
  assert.equal(b.code, "context_too_short");
  assert.equal(b.slot, "context_length");
  assert.match(b.message, /num_tokens 7 > context_length 6/);

  const p = lab.parseCall("MultiHeadAttention(768, 768, 1024, 12, 0.0)");
  const swapped = p.diagnostics.find((d) => d.code === "slots_swapped");
  assert.deepEqual(swapped.slots, ["dropout", "num_heads"]);
  assert.match(swapped.message, /dropout = 12 and num_heads = 0\.0 look swapped/);
  const c = thrown(() => lab.create(p.className, p.config));
  assert.ok(["dropout_range", "slots_swapped", "wrong_type", "non_positive"].includes(c.code));
  assert.ok(c.diagnostics.some((d) => d.code === "slots_swapped"));
});

test("check never throws and returns every diagnostic at once", () => {
  assert.deepEqual(lab.check("MultiHeadAttention", gpt2Small).map((d) => d.code), ["square_weights"]);
  const ds = lab.check("MultiHeadAttention", { d_in: "768.0", d_out: 1600, n_heads: 48, dropout: 2 });
  const codes = ds.map((d) => d.code).sort();
  assert.deepEqual(codes, ["dropout_range", "missing_slot", "missing_slot", "unknown_slot", "wrong_type"]);
  assert.ok(ds.every((d) => typeof d.message === "string" && typeof d.hint === "string" && Array.isArray(d.slots)));
  assert.equal(lab.check("Bogus", null)[0].code, "unknown_class");
  assert.equal(lab.check(undefined, undefined)[0].code, "unknown_class");
  const widths = lab.check("SelfAttention_v2", { d_in: 2, d_out: 3 }, { inputShape: [6, 3] });
  assert.equal(widths[0].code, "input_width");
  assert.match(widths[0].hint, /d_in and d_out look swapped/);
  assert.equal(lab.check("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0 }, { inputShape: [6, 3] })[0].code, "input_rank");
});

test("inputs of the wrong rank or width are AttentionErrors whose hint says how to reshape", () => {
  const mha = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 });
  const e = thrown(() => mha.forward(lab.bookTokens()));
  assert.equal(e.code, "input_rank");
  assert.match(e.hint, /unsqueeze\(0\) gives \(1, 6, 3\)/);
  const v1 = lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 });
  assert.match(thrown(() => v1.forward(stackTwo(lab.bookTokens()))).hint, /no batch axis/);
  assert.equal(thrown(() => v1.forward({ shape: [6, 3], data: new Float32Array(17) })).code, "tensor_size");
  assert.equal(thrown(() => v1.forward({ shape: [6, 3], data: new Float32Array(18).fill(NaN) })).code, "non_finite_input");
  assert.equal(thrown(() => v1.forward("tokens")).code, "tensor_shape");
});

test("setParameter: unknown names and wrong shapes are AttentionErrors with .code", () => {
  const m = lab.create("SelfAttention_v2", { d_in: 3, d_out: 2, qkv_bias: true });
  assert.deepEqual(m.parameters().map((p) => p.name), ["W_query.weight", "W_query.bias", "W_key.weight", "W_key.bias", "W_value.weight", "W_value.bias"]);
  assert.equal(thrown(() => m.setParameter("W_query", { shape: [2, 3], data: new Float32Array(6) })).code, "unknown_parameter");
  const e = thrown(() => m.setParameter("W_query.weight", { shape: [3, 2], data: new Float32Array(6) }));
  assert.equal(e.code, "parameter_shape");
  assert.match(e.hint, /looks transposed/);
  m.setParameter("W_query.weight", { shape: [2, 3], data: [1, 0, 0, 0, 1, 0] });
  assert.deepEqual(Array.from(m.parameters()[0].data), [1, 0, 0, 0, 1, 0]);
  // parameters() returns copies: changing them does not change the module.
  m.parameters()[0].data.fill(9);
  assert.equal(m.parameters()[0].data[0], 1);
});

// pitfalls.md B7
test("training is the default; eval mode skips dropout and equals dropout 0", () => {
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.5, num_heads: 2 };
  const x = stackTwo(lab.bookTokens());
  const train = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(7) }).forward(x, { trace: true });
  const evalA = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(7) }).forward(x, { training: false, trace: true });
  const evalB = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(7) }).forward(x, { training: false });
  const noDrop = lab.create("MultiHeadAttention", { ...config, dropout: 0.0 }, { generator: lab.manualSeed(7) }).forward(x);
  assert.notDeepEqual(Array.from(train.output.data), Array.from(evalA.output.data));
  assert.deepEqual(Array.from(evalA.output.data), Array.from(evalB.output.data));
  assert.deepEqual(Array.from(evalA.output.data), Array.from(noDrop.output.data));
  const stage = evalA.trace.find((s) => s.id === "attn_weights_dropout");
  assert.match(stage.title, /eval: dropout skipped/);
  assert.deepEqual(Array.from(stage.data), Array.from(evalA.trace.find((s) => s.id === "attn_weights").data));
});

test("trace stages carry ids, titles, formulas, named axes and the whole batch", () => {
  const m = lab.create("MultiHeadAttentionWrapper", { d_in: 3, d_out: 1, context_length: 6, dropout: 0.0, num_heads: 2 });
  const { trace } = m.forward(stackTwo(lab.bookTokens()), { trace: true });
  const byId = Object.fromEntries(trace.map((s) => [s.id, s]));
  assert.deepEqual(byId.queries.axes, ["b", "num_heads", "num_tokens", "d_out"]);
  assert.deepEqual(byId.queries.shape, [2, 2, 6, 1]);
  assert.deepEqual(byId.mask.shape, [6, 6]);
  assert.equal(byId.mask.data[1], 1);  // key 1 is masked for query 0
  assert.equal(byId.mask.data[6], 0);
  assert.deepEqual(byId.attn_weights.shape, [2, 2, 6, 6]);
  assert.deepEqual(byId.output.shape, [2, 6, 2]);
  assert.match(byId.attn_weights.formula, /d_k = 1/);
  assert.ok(trace.every((s) => s.data instanceof Float32Array && s.title && s.formula));
  // each stage's whole-tensor summary, from the core: 2 items x 2 heads x 15 masked keys of a (6, 6) slab
  assert.equal(byId.attn_scores_masked.summary.negInf, 60);
  assert.equal(byId.attn_weights.summary.zeros, 60);
  assert.equal(byId.attn_weights.summary.max, 1);  // query 0 sees only key 0
  assert.equal(byId.attn_weights.summary.count, 144);
  // and one summary per (batch item, head) slice: 15 masked keys in each (6, 6) slice
  assert.deepEqual(byId.attn_weights.sliceSummaries.map((x) => [x.zeros, x.count]), [[15, 36], [15, 36], [15, 36], [15, 36]]);
  assert.equal(byId.output.sliceSummaries.length, 2);
  for (const s of trace) {
    const finite = Array.from(s.data).filter(Number.isFinite);
    assert.equal(s.summary.min, Math.min(...finite), s.id);
    assert.ok(Math.abs(s.summary.mean - finite.reduce((a, v) => a + v, 0) / finite.length) < 1e-6, s.id);
  }
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
  // one key, not "1 keys"
  assert.match(weightsOf(2).mask.title, /each query sees itself and at most 1 key before it \(sliding_window_size = 2\)/);
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

test("copyWeights from SelfAttention_v2 to SelfAttention_v1 with all three transposes agrees within 1e-6", () => {
  const v2 = lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 }, { generator: lab.manualSeed(789) });
  const v1 = lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 }, { generator: lab.manualSeed(123) });
  const all = { copy: true, transpose: true };
  const report = lab.copyWeights(v2, v1, { W_query: all, W_key: all, W_value: all });
  assert.deepEqual(report.matrices.map((m) => [m.name, m.action]), [["W_query", "transposed"], ["W_key", "transposed"], ["W_value", "transposed"]]);
  assert.deepEqual(report.matrices[0].fromShape, [2, 3]);
  assert.deepEqual(report.matrices[0].toShape, [3, 2]);
  assert.ok(report.maxAbsDiff <= 1e-6);
  assert.equal(report.agree, true);
  // v1 now really holds v2's weights, transposed.
  const w2 = v2.parameters()[0].data;
  const w1 = v1.parameters()[0].data;
  assert.equal(w1[1 * 2 + 0], w2[0 * 3 + 1]);
  // and v1's outputs are v2's on the book tokens
  const a = v1.forward(lab.bookTokens()).output.data;
  const b = v2.forward(lab.bookTokens()).output.data;
  a.forEach((v, i) => assert.ok(Math.abs(v - b[i]) <= 1e-6));
});

test("copyWeights with d_in == d_out and the key transpose skipped copies, but the report names W_key and a difference", () => {
  const v2 = lab.create("SelfAttention_v2", { d_in: 3, d_out: 3 }, { generator: lab.manualSeed(789) });
  const v1 = lab.create("SelfAttention_v1", { d_in: 3, d_out: 3 }, { generator: lab.manualSeed(123) });
  const t = { copy: true, transpose: true };
  const report = lab.copyWeights(v2, v1, { W_query: t, W_key: { copy: true, transpose: false }, W_value: t });
  assert.equal(report.matrices[1].name, "W_key");
  assert.equal(report.matrices[1].action, "copied");
  assert.match(report.matrices[1].hint, /lands transposed/);
  assert.ok(report.maxAbsDiff > 1e-3, `maxAbsDiff ${report.maxAbsDiff}`);
  assert.equal(report.agree, false);
  assert.ok(report.notes.some((n) => n.includes("W_key")));
});

test("copyWeights: a matrix missing from the plan is not copied; mismatches give both shapes", () => {
  const v2 = lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 }, { generator: lab.manualSeed(789) });
  const v1 = lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 }, { generator: lab.manualSeed(123) });
  const report = lab.copyWeights(v2, v1, { W_query: { copy: true, transpose: false } });
  assert.equal(report.matrices[0].action, "shape_mismatch");
  assert.match(report.matrices[0].hint, /\(2, 3\) into \(3, 2\).*looks transposed/);
  assert.equal(report.matrices[1].action, "not_copied");
  assert.equal(report.agree, false);
  assert.deepEqual(report.tokens.shape, [6, 3]);
});

test("manualSeed rejects non-integers with an AttentionError", () => {
  assert.equal(thrown(() => lab.manualSeed(1.5)).code, "seed");
  assert.equal(thrown(() => lab.manualSeed("123")).code, "seed");
});

test("seeded tokens are torch.rand(num_tokens, d_in) from their own generator", () => {
  const t = lab.seededTokens(4, 5, 123);
  assert.deepEqual(t.shape, [4, 5]);
  assert.deepEqual(Array.from(t.data), Array.from(lab.manualSeed(123).rand([4, 5]).data));
});

test("form-field strings are read as Python literals, so '3.0' in an int slot is caught like in a call", () => {
  assert.deepEqual(lab.check("SelfAttention_v1", { d_in: "3", d_out: "2" }), []);
  const ds = lab.check("SelfAttention_v1", { d_in: "3.0", d_out: "2" });
  assert.equal(ds[0].code, "wrong_type");
  assert.deepEqual(ds[0].slots, ["d_in"]);
  assert.equal(lab.check("SelfAttention_v2", { d_in: "3", d_out: "2", qkv_bias: "True" }).length, 0);
  assert.equal(lab.check("SelfAttention_v1", { d_in: "cfg['emb_dim']", d_out: 2 })[0].code, "not_a_literal");
  // parseCall keeps the float text of an int slot, so creating from its config fails the same way.
  const p = lab.parseCall("SelfAttention_v1(3.0, 2)");
  assert.equal(p.diagnostics[0].code, "wrong_type");
  assert.equal(p.config.d_in, "3.0");
  assert.throws(() => lab.create(p.className, p.config), (e) => e.code === "wrong_type" && e.slot === "d_in");
});

test("describe still gives the sizes when only dropout is wrong", () => {
  const d = lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 1.5, num_heads: 12 });
  assert.equal(d.ok, false);
  assert.equal(d.diagnostics[0].code, "dropout_range");
  assert.equal(d.parameterCount, 2360064);
  assert.equal(d.headDim, 64);
  const bad = lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0, num_heads: 7 });
  assert.equal(bad.ok, false);
  assert.equal(bad.parameterCount, undefined);
});

test("the dropout_eval warning appears only for eval mode with dropout > 0", () => {
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.5 };
  assert.ok(lab.check("CausalAttention", config, { training: false }).some((d) => d.code === "dropout_eval" && d.severity === "warning"));
  assert.ok(!lab.check("CausalAttention", config, { training: true }).some((d) => d.code === "dropout_eval"));
  assert.ok(!lab.check("CausalAttention", { ...config, dropout: 0.0 }, { training: false }).some((d) => d.code === "dropout_eval"));
});

test("sentenceTokens: repeated words share their embedding", () => {
  const x = lab.sentenceTokens(["a", "b", "a"], 3, 7);
  assert.deepEqual(x.shape, [3, 3]);
  assert.deepEqual(Array.from(x.data.slice(0, 3)), Array.from(x.data.slice(6, 9)));
  assert.deepEqual(Array.from(x.data.slice(0, 6)), Array.from(lab.seededTokens(2, 3, 7).data));
  assert.throws(() => lab.sentenceTokens([], 3, 7), (e) => e.code === "tensor_shape");
});

test("fromParameters rebuilds a module from plain data (e.g. in a Web Worker) with the same outputs", () => {
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };
  const m = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(123) });
  const copy = lab.fromParameters(m.className, m.config, structuredClone(m.parameters()));
  const x = stackTwo(lab.bookTokens());
  assert.deepEqual(Array.from(copy.forward(x).output.data), Array.from(m.forward(x).output.data));
  const partial = m.parameters().slice(1);
  assert.throws(() => lab.fromParameters(m.className, m.config, partial), (e) => e.code === "missing_parameter" && e.slot === "W_query.weight");
  const wrong = m.parameters();
  wrong[0].shape = [3, 2];
  assert.throws(() => lab.fromParameters(m.className, m.config, wrong), (e) => e.code === "parameter_shape");
});

test("estimateBytes gives the core's own estimate and budget", () => {
  const { bytes, budget } = lab.estimateBytes("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0, num_heads: 12 });
  assert.equal(bytes, 2360064 * 4);
  assert.ok(budget >= 1024 ** 3);
  const traced = lab.estimateBytes("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0, num_heads: 12 }, [1, 1024, 768]).bytes;
  assert.ok(traced > bytes + 4 * 12 * 1024 * 1024 * 4);  // four (b, num_heads, T, T) score/weight stages at least
});
