// Objects returned to JS need no .delete(): the WASM heap stays flat over many create+forward cycles.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab } from "attention-lab";
import { stackTwo } from "./helpers.mjs";

const lab = await loadAttentionLab();

test("1,000 create+forward cycles leave the WASM heap flat", () => {
  const x = stackTwo(lab.bookTokens());
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.5, num_heads: 2 };
  const cycle = () => {
    const m = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(1) });
    m.forward(x, { trace: true });
  };
  for (let i = 0; i < 20; i++) cycle();  // warm-up: the allocator reaches its steady state
  const before = lab.heapInUse();
  for (let i = 0; i < 1000; i++) cycle();
  const after = lab.heapInUse();
  assert.ok(before > 0);
  assert.equal(after, before, `heap in use grew from ${before} to ${after} bytes`);
});

test("errors leave the heap flat too", () => {
  const before = lab.heapInUse();
  for (let i = 0; i < 200; i++) {
    try {
      lab.create("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2 });
    } catch {}
    try {
      lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0 }).forward({ shape: [1, 7, 3], data: new Float32Array(21) });
    } catch {}
  }
  assert.equal(lab.heapInUse(), before);
});
