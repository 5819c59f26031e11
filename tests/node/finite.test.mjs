// Non-finite numbers and PyTorch's line between accepted and refused: NaN or infinity in parameters
// and checkpoints, dropout = 1.0, whole state_dicts with mask buffers, and a word when numbers go bad.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab, AttentionError } from "attention-lab";
import { sameBits } from "./helpers.mjs";
import { safetensorsHeader } from "../safetensors.mjs";

const lab = await loadAttentionLab();
const MHA = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };

function thrown(f) {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof AttentionError, String(e));
    return e;
  }
  assert.fail("expected an AttentionError");
}

/** torch.triu(torch.ones(n, n), diagonal=1), row-major. */
function causalMask(n) {
  return { shape: [n, n], data: Float32Array.from({ length: n * n }, (_, k) => (k % n > Math.floor(k / n) ? 1 : 0)) };
}

test("non-finite parameters are refused (non_finite_parameter) naming the parameter and the first index; the module keeps its values", () => {
  const m = lab.create("MultiHeadAttention", MHA);
  const before = m.parameters();
  const w = { shape: [2, 3], data: new Float32Array([0.1, 0.2, 0.3, 0.4, NaN, Infinity]) };
  const e = thrown(() => m.setParameter("W_key.weight", w));
  assert.equal(e.code, "non_finite_parameter");
  assert.equal(e.slot, "W_key.weight");
  assert.match(e.message, /W_key\.weight\[1, 1\] is nan/);
  m.parameters().forEach((p, i) => assert.ok(sameBits(p.data, before[i].data), p.name));
  const params = before.map((p) => (p.name === "out_proj.bias" ? { ...p, data: new Float32Array([1, -Infinity]) } : p));
  const e2 = thrown(() => lab.fromParameters("MultiHeadAttention", MHA, params));
  assert.equal(e2.code, "non_finite_parameter");
  assert.match(e2.message, /out_proj\.bias\[1\] is -inf/);
});

test("an F16 checkpoint whose overflow became inf is refused naming the file key and the first index", async () => {
  // a d = 4 layer: c_attn (4, 12), c_attn.bias, c_proj (4, 4), c_proj.bias, wpe (8, 4), all F16
  const shapes = { "h.0.attn.c_attn.weight": [4, 12], "h.0.attn.c_attn.bias": [12], "h.0.attn.c_proj.weight": [4, 4], "h.0.attn.c_proj.bias": [4], "wpe.weight": [8, 4] };
  const { head, dataBytes } = safetensorsHeader(Object.entries(shapes).map(([key, shape]) => [key, "F16", shape]));
  const file = Buffer.concat([head, Buffer.alloc(dataBytes)]);
  const data = head.length;
  for (let i = data; i < file.length; i += 2) file.writeUInt16LE(0x2e66, i); // 0.1 in float16
  file.writeUInt16LE(0x7c00, data + 2 * (12 + 5)); // c_attn.weight[1, 5] = inf
  const e = await lab.loadCheckpoint(file, { num_heads: 2 }).then(() => assert.fail("loaded"), (err) => err);
  assert.ok(e instanceof AttentionError);
  assert.equal(e.code, "non_finite_parameter");
  assert.match(e.message, /h\.0\.attn\.c_attn\.weight\[1, 5\] is inf \(F16\)/);
  assert.match(e.hint, /65504/);
});

test("finite tokens that overflow: forward says which stage turned non-finite first, and where (b, head, row)", () => {
  const m = lab.create("MultiHeadAttention", MHA);
  const x = { shape: [1, 6, 3], data: lab.bookTokens().data.map((v) => v * 1e20) };
  for (const trace of [false, true]) {
    const r = m.forward(x, { training: false, trace });
    assert.ok(r.output.data.some((v) => !Number.isFinite(v)));
    assert.equal(r.warnings.length, 1);
    const [w] = r.warnings;
    assert.equal(w.code, "non_finite_stage");
    assert.equal(w.severity, "warning");
    assert.deepEqual(w.slots, ["attn_scores"]);
    assert.match(w.message, /attn_scores is the first stage to turn non-finite from finite inputs: inf at b 0, \S+ 0, \S+ 0/);
    if (trace) {
      // the named stage is really the first with a non-finite value
      const first = r.trace.find((s) => s.data.some((v) => !Number.isFinite(v) && !(s.id === "attn_scores_masked" && v === -Infinity)));
      assert.equal(first.id, "attn_scores");
    }
  }
  // finite results carry no warnings; a dropout run keeps its stream (the rerun uses a copy of the generator)
  assert.equal(m.forward(lab.bookTokens().data.length ? { shape: [1, 6, 3], data: lab.bookTokens().data } : null, { training: false }).warnings, undefined);
  const g1 = lab.manualSeed(5);
  const g2 = lab.manualSeed(5);
  const drop = lab.create("MultiHeadAttention", { ...MHA, dropout: 0.5 }, { generator: lab.manualSeed(1) });
  drop.forward(x, { generator: g1 });
  drop.forward({ shape: [1, 6, 3], data: lab.bookTokens().data }, { generator: g2 });
  assert.deepEqual(Array.from(g1._state), Array.from(g2._state));
});

test("dropout = 1.0 is accepted as in PyTorch: a dropout_all warning; training output is out_proj.bias on every row; nothing drawn", () => {
  const config = { ...MHA, dropout: 1.0 };
  const diagnostics = lab.check("MultiHeadAttention", config);
  assert.deepEqual(diagnostics.map((d) => [d.code, d.severity]), [["dropout_all", "warning"]]);
  assert.equal(lab.check("MultiHeadAttention", { ...MHA, dropout: 1.5 })[0].code, "dropout_range");
  const gen = lab.manualSeed(123);
  const m = lab.create("MultiHeadAttention", config, { generator: gen });
  const state = Array.from(gen._state);
  const { output, trace } = m.forward({ shape: [1, 6, 3], data: lab.bookTokens().data }, { generator: gen, trace: true });
  assert.deepEqual(Array.from(gen._state), state, "no random number was drawn");
  const bias = m.parameters().find((p) => p.name === "out_proj.bias").data;
  for (let r = 0; r < 6; r++) assert.deepEqual(Array.from(output.data.slice(2 * r, 2 * r + 2)), Array.from(bias));
  assert.ok(trace.find((s) => s.id === "attn_weights_dropout").data.every((v) => v === 0));
  const dropped = lab.manualSeed(1).dropout({ shape: [3], data: new Float32Array([0.5, -2, 3]) }, 1.0);
  assert.deepEqual(Array.from(dropped.data, (v) => Object.is(v, -0) ? "-0" : v), [0, "-0", 0]);
});

test("a whole state_dict with the mask buffer is accepted (checked against the causal mask and reported); another mask is refused", () => {
  const source = lab.create("MultiHeadAttention", MHA);
  const stateDict = [...source.parameters(), { name: "mask", ...causalMask(6) }];
  const m = lab.fromParameters("MultiHeadAttention", MHA, stateDict);
  assert.equal(m.notes.length, 1);
  assert.match(m.notes[0], /mask: the causal mask buffer \(6, 6\), checked equal to torch\.triu\(torch\.ones\(6, 6\), diagonal=1\)/);
  m.parameters().forEach((p, i) => assert.ok(sameBits(p.data, source.parameters()[i].data)));
  assert.deepEqual(lab.create("MultiHeadAttention", MHA).notes, []);
  // CausalAttention and the wrapper's per-head buffers
  const causal = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0 };
  const c = lab.create("CausalAttention", causal);
  assert.equal(lab.fromParameters("CausalAttention", causal, [...c.parameters(), { name: "mask", ...causalMask(6) }]).notes.length, 1);
  const wrapperConfig = { ...causal, num_heads: 2 };
  const w = lab.create("MultiHeadAttentionWrapper", wrapperConfig);
  const withMasks = [...w.parameters(), { name: "heads.0.mask", ...causalMask(6) }, { name: "heads.1.mask", ...causalMask(6) }];
  assert.equal(lab.fromParameters("MultiHeadAttentionWrapper", wrapperConfig, withMasks).notes.length, 2);
  // a mask that differs, or of another context_length, is refused naming the entry
  const wrong = causalMask(6);
  wrong.data[2 * 6 + 4] = 0;
  const e = thrown(() => lab.fromParameters("MultiHeadAttention", MHA, [...source.parameters(), { name: "mask", ...wrong }]));
  assert.equal(e.code, "mask_buffer");
  assert.equal(e.slot, "mask");
  assert.match(e.message, /mask\[2, 4\] is 0, but the causal mask .* has 1 there/);
  assert.equal(thrown(() => lab.fromParameters("MultiHeadAttention", MHA, [...source.parameters(), { name: "mask", ...causalMask(5) }])).code, "mask_buffer");
  // SelfAttention_v2 has no buffer: a "mask" is still an unknown name
  const v2 = lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 });
  assert.equal(thrown(() => lab.fromParameters("SelfAttention_v2", { d_in: 3, d_out: 2 }, [...v2.parameters(), { name: "mask", ...causalMask(6) }])).code, "unknown_parameter");
});
