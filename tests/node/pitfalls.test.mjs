// The facade against the pitfalls that real reports of silent or confusing attention bugs describe
// (../shared/cases/pitfalls.md): one test per row, marked with the row's id, each with the row's
// right value. Rows covered in depth elsewhere say where.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";
import { stackTwo, round4 } from "./helpers.mjs";

const lab = await loadAttentionLab();
const book2 = stackTwo(lab.bookTokens());
const ckpt = (name) => readFileSync(new URL(`../fixtures/checkpoints/${name}`, import.meta.url));
const stage = (trace, id) => trace.find((s) => s.id === id);
const rows = (t) => Array.from({ length: t.shape.at(-2) }, (_, i) => Array.from(t.data.slice(i * t.shape.at(-1), (i + 1) * t.shape.at(-1))));

/** CausalAttention(1, 1, T, 0.0) with W_query = [[wq]], W_key = [[wk]], W_value = [[1]]: scores[i][j] = wq*x_i * wk*x_j. */
function scalarCausal(T, wq, wk) {
  const m = lab.create("CausalAttention", { d_in: 1, d_out: 1, context_length: T, dropout: 0.0 });
  m.setParameter("W_query.weight", { shape: [1, 1], data: [wq] });
  m.setParameter("W_key.weight", { shape: [1, 1], data: [wk] });
  m.setParameter("W_value.weight", { shape: [1, 1], data: [1] });
  return m;
}

// pitfalls.md B1
test("GPT-2 XL with its 48 layers typed as num_heads is refused: 1600 % 48 = 16, XL has 25 heads", () => {
  const d = lab.check("MultiHeadAttention", { d_in: 1600, d_out: 1600, context_length: 1024, dropout: 0.0, num_heads: 48 })[0];
  assert.equal(d.code, "heads_divisibility");
  assert.match(d.message, /1600 % 48 = 16/);
  assert.match(d.hint, /48 is GPT-2 XL's number of layers .* 25 heads/);
  for (const [width, layers, heads] of [[1024, 24, 16], [1280, 36, 20]]) {
    assert.match(lab.check("MultiHeadAttention", { d_in: width, d_out: width, context_length: 1024, dropout: 0.0, num_heads: layers })[0].hint, new RegExp(`${heads} heads`));
  }
});

// pitfalls.md B2
test("on (2, 6, 3) the wrapper gives (2, 6, 4) and MHA (2, 6, 2) with head_dim 1", () => {
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };
  const w = lab.create("MultiHeadAttentionWrapper", config);
  const m = lab.create("MultiHeadAttention", config);
  assert.deepEqual(w.forward(book2).output.shape, [2, 6, 4]);
  assert.deepEqual(m.forward(book2).output.shape, [2, 6, 2]);
  assert.equal(m.headDim, 1);
  assert.equal(w.outputWidthRule, "num_heads x d_out = 2 x 2 = 4");
  assert.equal(m.outputWidthRule, "d_out = 2, shared by 2 heads of 1");
});

// pitfalls.md B3
test("Wrapper(768, 768, 1024, 0.0, 12) is 9216 wide; the wrapper matching MHA(768 -> 768, 12) needs d_out = 64; ex. 3.2 gives (2, 6, 2)", () => {
  assert.equal(lab.describe("MultiHeadAttentionWrapper", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }).outputWidth, 9216);
  assert.equal(lab.equivalentConfig("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }).config.d_out, 64);
  const ex32 = lab.create("MultiHeadAttentionWrapper", { d_in: 3, d_out: 1, context_length: 6, dropout: 0.0, num_heads: 2 });
  assert.deepEqual(ex32.forward(book2).output.shape, [2, 6, 2]);
});

// pitfalls.md B4
test("out_proj is (d_out, d_out) + (d_out) even when d_in != d_out; exercise 3.3 counts 2,360,064", () => {
  const m = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 });
  const shapes = Object.fromEntries(m.parameters().map((p) => [p.name, p.shape]));
  assert.deepEqual(shapes["out_proj.weight"], [2, 2]);
  assert.deepEqual(shapes["out_proj.bias"], [2]);
  assert.deepEqual(m.forward(book2).output.shape, [2, 6, 2]);
  assert.equal(lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }).parameterCount, 2360064);
});

// pitfalls.md B5
test("kept values are scaled by 1/(1-p): 1.1111, 1.25, 2.0; dropped are 0", () => {
  for (const [p, kept] of [[0.1, 1.1111], [0.2, 1.25], [0.5, 2.0]]) {
    const out = lab.manualSeed(123).dropout({ shape: [6, 6], data: new Float32Array(36).fill(1) }, p).data;
    assert.ok(out.some((v) => v === 0));
    for (const v of out) if (v !== 0) assert.equal(round4(v), kept);
  }
});

// pitfalls.md B6
test("seed 123, Dropout(0.5) on ones(6, 6) gives PyTorch's default-CPU pattern (the book's), scaled by 2", () => {
  const out = lab.manualSeed(123).dropout({ shape: [6, 6], data: new Float32Array(36).fill(1) }, 0.5);
  assert.deepEqual(rows(out), [
    [2, 2, 0, 2, 2, 0], [0, 0, 0, 2, 0, 2], [2, 2, 2, 2, 0, 2],
    [0, 2, 2, 0, 0, 2], [0, 2, 0, 2, 0, 2], [0, 2, 2, 2, 2, 0],
  ]);
});

// pitfalls.md B7
test("eval mode turns dropout off: repeated runs are identical and equal to dropout = 0", () => {
  const x = book2;
  const m = lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.1 }, { generator: lab.manualSeed(1) });
  const a = m.forward(x, { training: false }).output.data;
  const b = m.forward(x, { training: false }).output.data;
  const zero = lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0 }, { generator: lab.manualSeed(1) }).forward(x).output.data;
  assert.deepEqual(Array.from(a), Array.from(b));
  assert.deepEqual(Array.from(a), Array.from(zero));
  assert.notDeepEqual(Array.from(m.forward(x, { training: true }).output.data), Array.from(a));
});

// pitfalls.md B9
test("the causal mask is boolean (-inf fill), not added: zero scores give [1, 0, 0] and [0.5, 0.5, 0]", () => {
  const m = scalarCausal(3, 0, 0);  // every score 0
  const { trace } = m.forward({ shape: [1, 3, 1], data: [1, 2, 3] }, { trace: true });
  const w = rows(stage(trace, "attn_weights"));
  assert.deepEqual(w[0], [1, 0, 0]);
  assert.deepEqual(w[1], [0.5, 0.5, 0]);
  assert.deepEqual(Array.from(stage(trace, "mask").data), [0, 1, 1, 0, 0, 1, 0, 0, 0]);
});

// pitfalls.md B10
test("the mask is really applied (in place): uniform scores still give row 0 = [1, 0, 0]", () => {
  const m = scalarCausal(3, 1, 1);
  const { trace } = m.forward({ shape: [1, 3, 1], data: [1, 1, 1] }, { trace: true });  // scores all 1
  assert.deepEqual(rows(stage(trace, "attn_weights"))[0], [1, 0, 0]);
  const masked = rows(stage(trace, "attn_scores_masked"));
  assert.deepEqual(masked[0], [1, -Infinity, -Infinity]);
});

// pitfalls.md B11
test("masked scores are -inf (not -1e-12, not +inf): row [2, 1, 3] with keys 1, 2 masked gives exactly [1, 0, 0]", () => {
  const m = scalarCausal(3, 1, 2);
  const { trace } = m.forward({ shape: [1, 3, 1], data: [1, 0.5, 1.5] }, { trace: true });
  assert.deepEqual(rows(stage(trace, "attn_scores"))[0], [2, 1, 3]);
  assert.deepEqual(rows(stage(trace, "attn_weights"))[0], [1, 0, 0]);
  assert.ok(!Array.from(stage(trace, "attn_weights").data).some(Number.isNaN));
});

// pitfalls.md B12
test("a causal mask always leaves the diagonal, so no softmax row is all -inf and nothing is NaN; NaN tokens are refused", () => {
  const m = lab.create("MultiHeadAttention", { d_in: 3, d_out: 4, context_length: 6, dropout: 0.0, num_heads: 2 });
  const { trace } = m.forward(book2, { trace: true });
  const masked = stage(trace, "attn_scores_masked");
  const T = 6;
  for (let r = 0; r < masked.data.length / T; r++) assert.ok(Number.isFinite(masked.data[r * T + (r % T)]), `row ${r} keeps its diagonal`);
  assert.ok(trace.every((s) => !Array.from(s.data).some(Number.isNaN)));
  assert.throws(() => m.forward({ shape: [1, 2, 3], data: [0, 0, 0, NaN, 0, 0] }), (e) => e.code === "non_finite_input");
});

// pitfalls.md B13
test("mask -> softmax -> dropout: training rows no longer sum to 1 (survivors x 1/(1-p)), eval rows do", () => {
  const out = lab.manualSeed(123).dropout({ shape: [1, 3], data: [0.4, 0.6, 0] }, 0.2).data;
  for (const [i, v] of [[0, 0.5], [1, 0.75]]) if (out[i] !== 0) assert.equal(round4(out[i]), v);
  const m = lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.5 }, { generator: lab.manualSeed(123) });
  const ids = m.forward(book2, { trace: true }).trace.map((s) => s.id);
  assert.ok(ids.indexOf("attn_scores_masked") < ids.indexOf("attn_weights") && ids.indexOf("attn_weights") < ids.indexOf("attn_weights_dropout"));
  const train = rows(stage(m.forward(book2, { trace: true }).trace, "attn_weights_dropout"));
  assert.ok(train.some((r) => Math.abs(r.reduce((a, b) => a + b) - 1) > 1e-3));
  const evalRows = rows(stage(m.forward(book2, { training: false, trace: true }).trace, "attn_weights_dropout"));
  for (const r of evalRows) assert.ok(Math.abs(r.reduce((a, b) => a + b) - 1) < 1e-6);
});

// pitfalls.md B15
test("one head hides split/merge bugs: a warning; the fixtures use >= 2 heads and >= 2 tokens", () => {
  assert.ok(lab.check("MultiHeadAttention", { d_in: 4, d_out: 4, context_length: 4, dropout: 0, num_heads: 1 }).some((d) => d.code === "one_head"));
  const fixtures = JSON.parse(readFileSync(new URL("../fixtures/attention_fixtures.json", import.meta.url), "utf8"));
  assert.ok(fixtures.cases.filter((c) => c.config.num_heads >= 2 && c.input.shape.at(-2) >= 2).length >= 10);
});

// pitfalls.md B16
test("MHA(3, 4, 6, 0.0, 2) on (2, 6, 3) merges heads to (2, 6, 4): column h*head_dim + j, equal to the wrapper-equivalent", () => {
  const m = lab.create("MultiHeadAttention", { d_in: 3, d_out: 4, context_length: 6, dropout: 0.0, num_heads: 2 });
  const { trace, output } = m.forward(book2, { trace: true });
  assert.deepEqual(output.shape, [2, 6, 4]);
  const ctx = stage(trace, "context_vec");  // (b, H, T, head_dim)
  const merged = stage(trace, "heads_concat");  // (b, T, d_out)
  for (const [b, t, h, j] of [[0, 0, 1, 0], [1, 5, 0, 1], [1, 3, 1, 1]]) {
    assert.equal(merged.data[(b * 6 + t) * 4 + h * 2 + j], ctx.data[((b * 2 + h) * 6 + t) * 2 + j]);
  }
  const { module: wrapper } = lab.convert(m);
  const cmp = lab.compare(m, wrapper, book2);
  assert.ok(cmp.stages.find((s) => s.id === "heads_concat").maxAbsDiff <= 1e-6);
});

// pitfalls.md B18
test("attention weights stay per head, (b, num_heads, T, T), never averaged", () => {
  const m = lab.create("MultiHeadAttention", { d_in: 3, d_out: 4, context_length: 6, dropout: 0.0, num_heads: 2 });
  const w = stage(m.forward(book2, { trace: true }).trace, "attn_weights");
  assert.deepEqual(w.shape, [2, 2, 6, 6]);
  assert.deepEqual(w.axes, ["b", "num_heads", "query", "key"]);
});

// pitfalls.md B19
test("the layout is (b, num_tokens, d_in): each sequence is processed on its own (swapping the batch swaps the outputs)", () => {
  const m = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 });
  const x = { shape: [2, 6, 3], data: Float32Array.from([...lab.seededTokens(6, 3, 1).data, ...lab.seededTokens(6, 3, 2).data]) };
  const swapped = { shape: [2, 6, 3], data: Float32Array.from([...x.data.slice(18), ...x.data.slice(0, 18)]) };
  const a = m.forward(x).output.data;
  const b = m.forward(swapped).output.data;
  for (let i = 0; i < 12; i++) {
    assert.ok(Math.abs(a[i] - b[i + 12]) <= 1e-6);
    assert.ok(Math.abs(a[i + 12] - b[i]) <= 1e-6);
  }
});

// pitfalls.md B20
test("GPT-2's Conv1D c_attn (d, 3d) is split on its last axis and transposed; a reversed shape is called transposed", async () => {
  const { report } = await lab.loadCheckpoint(ckpt("gpt2_d4_h2.safetensors"), { num_heads: 2 });
  assert.deepEqual(report.transposed, ["h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight"]);
  const m = lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 });
  assert.throws(() => m.setParameter("W_query.weight", { shape: [3, 2], data: new Float32Array(6) }), (e) => e.code === "parameter_shape" && /looks transposed/.test(e.hint));
  // (checkpoint.test.mjs checks every mapped value against PyTorch.)
});

// pitfalls.md B23
test("the mask buffers attn.bias / attn.masked_bias are ignored with a reason; c_attn.bias (3d) is used", async () => {
  const { report } = await lab.loadCheckpoint(ckpt("gpt2_d4_h2.safetensors"), { num_heads: 2 });
  assert.ok(report.used.includes("h.0.attn.c_attn.bias"));
  assert.match(report.ignored.find((i) => i.key === "h.0.attn.bias").reason, /causal mask buffer .*not the q\/k\/v bias/);
  assert.ok(report.ignored.some((i) => i.key === "h.0.attn.masked_bias"));
});

// pitfalls.md B24
test("loading GPT-2 weights into a module with qkv_bias=False fails loudly", async () => {
  const into = lab.create("MultiHeadAttention", { d_in: 4, d_out: 4, context_length: 8, dropout: 0.0, num_heads: 2 });
  await assert.rejects(lab.loadCheckpoint(ckpt("gpt2_d4_h2.safetensors"), { into }), (e) => e.code === "checkpoint_config_mismatch" && /h\.0\.attn\.c_attn\.bias/.test(e.message));
});

// pitfalls.md B25
test("7 tokens into CausalAttention(3, 2, 6, 0.0) is refused with both numbers; 4 tokens use the top-left 4 x 4 of the mask", () => {
  const m = lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0 });
  assert.throws(() => m.forward({ shape: [1, 7, 3], data: new Float32Array(21) }), (e) => e.code === "context_too_short" && /num_tokens 7 > context_length 6/.test(e.message));
  const { trace } = m.forward({ shape: [1, 4, 3], data: lab.seededTokens(4, 3, 1).data }, { trace: true });
  assert.deepEqual(stage(trace, "mask").shape, [4, 4]);
});

// pitfalls.md B26
test("asking for the trace never changes the output bits", () => {
  const config = { d_in: 3, d_out: 4, context_length: 6, dropout: 0.5, num_heads: 2 };
  const a = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(9) }).forward(book2, { trace: true }).output.data;
  const b = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(9) }).forward(book2).output.data;
  assert.deepEqual(new Uint32Array(a.buffer), new Uint32Array(b.buffer));
});
