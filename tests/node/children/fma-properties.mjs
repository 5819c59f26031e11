// Run by tests/node/kernel.test.mjs under `node --experimental-wasm-relaxed-simd --test`: with relaxed
// SIMD the library's default is attention_core_fma.wasm (issue 21.3). What must still hold there:
// the binary says it is the fused one, and a trace does not change the output's bits. (The PyTorch
// fixtures, run in the same child, check the parameters and dropout streams bit for bit and every
// stage within its tolerance.)
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
const MHA = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };

test("the default binary here is the fused multiply-add one", () => {
  assert.equal(lab.kernel, "relaxed_madd");
});

test("trace on or off: the same output bits (GPT-2 small's attention, 64 tokens, eval and training with dropout)", () => {
  const x = { shape: [1, 64, 768], data: lab.seededTokens(64, 768, 5).data };
  for (const [dropout, training] of [[0.0, false], [0.1, true]]) {
    const config = { ...MHA, dropout };
    const plain = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(123) });
    const traced = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(123) });
    const a = plain.forward(x, { training, generator: lab.manualSeed(9) }).output.data;
    const b = traced.forward(x, { training, generator: lab.manualSeed(9), trace: true }).output.data;
    assert.deepEqual(new Uint32Array(b.buffer, b.byteOffset, b.length), new Uint32Array(a.buffer, a.byteOffset, a.length), `dropout ${dropout}`);
  }
});
