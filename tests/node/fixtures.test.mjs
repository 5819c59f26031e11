// Every fixture case over the real WASM module, through the public API only.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab } from "attention-lab";
import { fixtures, tensor, maxAbsDiff, sameBits } from "./helpers.mjs";

const lab = await loadAttentionLab();

test("the fixtures cover at least 35 seeded configs, and every class of lab.classes", () => {
  assert.ok(fixtures.cases.length >= 35);
  assert.deepEqual(new Set(fixtures.cases.map((c) => c.class)), new Set(lab.classes));
});

test("MHAEinsum with d_in != d_out and MHAPyTorchFlexAttention past context_length run, as the book's current code does", () => {
  // MHAEinsum's W_* are (d_in, d_out), used as einsum("bnd,do->bno", x, W); FlexAttention's block mask
  // is built for num_tokens in each forward. Both were refused before (d_in_d_out_differ, context_too_short).
  for (const [name, shapes] of [
    ["einsum_book_3to2_2heads_eval", [[3, 2], [3, 2], [3, 2], [2, 2], [2]]],
    ["einsum_4to8_2heads_bias_drop05_train", [[4, 8], [4, 8], [4, 8], [8], [8], [8], [8, 8], [8]]],
    ["flex_4to4_T8_past_ctx6_eval", [[12, 4], [4, 4], [4]]],
  ]) {
    const c = fixtures.cases.find((k) => k.name === name);
    const x = tensor(c.input);
    const setup = lab.setup(c.class, c.config, { inputShape: x.shape, training: c.training });
    assert.deepEqual(setup.diagnostics.filter((d) => d.severity === "error").map((d) => d.code), [], name);
    assert.deepEqual(setup.description.parameters.map((p) => p.shape), shapes, name);
    const { output } = lab.run(c.class, c.config, x, { seed: c.seed, training: c.training, trace: false });
    assert.deepEqual(output.shape, c.output.shape, name);
    const diff = maxAbsDiff(output, tensor(c.output));
    assert.ok(diff <= 1e-6, `${name}: max abs diff ${diff}`);
  }
  assert.equal(fixtures.accepts.length, 3);
});

for (const c of fixtures.cases) {
  test(`${c.name}: initial parameters bit-identical, every stage within 1e-6 of PyTorch`, () => {
    const gen = lab.manualSeed(c.seed);
    const m = lab.create(c.class, c.config, { generator: gen });
    const params = m.parameters();
    assert.deepEqual(params.map((p) => p.name), c.parameters.map((p) => p.name));
    c.parameters.forEach((p, i) => {
      assert.deepEqual(params[i].shape, p.shape);
      // normal_ on 16 or more values (nn.MultiheadAttention's bias_k/bias_v for d_out >= 16) is
      // PyTorch's vectorised Box-Muller, whose log/sin/cos differ by CPU kernel (AVX2 vs default: up
      // to 2.2e-7 measured): those within 3e-7, every other parameter bit for bit.
      if (p.shape.length === 3 && p.data.length >= 16) assert.ok(maxAbsDiff(params[i], tensor(p)) <= 3e-7, `${p.name} within 3e-7`);
      else assert.ok(sameBits(params[i].data, tensor(p).data), `${p.name} bits`);
    });
    const { output, trace } = m.forward(tensor(c.input), { training: c.training, trace: true });
    assert.deepEqual(trace.map((s) => s.id), c.stages.map((s) => s.id));
    c.stages.forEach((s, i) => {
      assert.equal(trace[i].axes.length, trace[i].shape.length, `${s.id} axes`);
      const diff = maxAbsDiff(trace[i], tensor(s));
      assert.ok(diff <= 1e-6, `${s.id}: max abs diff ${diff} (float32, tolerance 1e-6)`);
    });
    assert.ok(maxAbsDiff(output, tensor(c.output)) <= 1e-6);
    // the stream where the forward leaves it: the next torch.rand(4), bit for bit
    assert.ok(sameBits(gen.rand([4]).data, tensor(c.rand_after).data), "torch.rand(4) after the forward");
  });
}

test("torch.rand after manual_seed is bit-identical (seed 2**32 + 5 counts as 5)", () => {
  const entries = fixtures.rng.filter((e) => e.op === "rand");
  assert.ok(entries.length >= 6);
  for (const e of entries) {
    const got = lab.manualSeed(e.seed).rand(e.shape);
    assert.ok(sameBits(got.data, Float32Array.from(e.data)), `seed ${e.seed} shape ${e.shape}`);
  }
});

test("nn.Dropout(p) in training reproduces PyTorch's CPU mask bit for bit", () => {
  const entries = fixtures.rng.filter((e) => e.op === "dropout");
  assert.ok(entries.length >= 4);
  for (const e of entries) {
    const got = lab.manualSeed(e.seed).dropout(tensor(e.input), e.p);
    assert.ok(sameBits(got.data, tensor(e.output).data), `p = ${e.p}`);
  }
});

test("a module keeps drawing dropout from its generator, continuing the stream like torch's default generator", () => {
  const c = fixtures.cases.find((c) => c.name === "book_causal_dropout05_seed123");
  const m = lab.create(c.class, c.config, { generator: lab.manualSeed(c.seed) });
  const first = m.forward(tensor(c.input)).output;
  assert.ok(maxAbsDiff(first, tensor(c.output)) <= 1e-6);
  const second = m.forward(tensor(c.input)).output;  // the stream has moved on: a new mask
  assert.ok(maxAbsDiff(first, second) > 1e-3);
});
