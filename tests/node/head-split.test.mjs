// A forward split by heads (issue 21.2: what plain Workers run on a page that is not cross-origin
// isolated): module.headShares (the core's rule), forwardShare and projectHeads through the facade, on
// the WebAssembly SIMD kernel (Node's default lab: the threaded core, whose pool projectHeads uses),
// give module.forward's bits; refusals name the slot; module.revision follows every write of the
// parameters. In Node there is no Worker: createHeadSplit runs every forward whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab } from "attention-lab";
import { createHeadSplit } from "attention-lab/head-split";

const GPT2 = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.1, num_heads: 12 };
const sameBits = (a, b) => Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
/** The code and slot of what f throws. */
const refusal = (f) => {
  try {
    f();
  } catch (e) {
    return [e.code, e.slot];
  }
  return null;
};

test("GPT-2-small attention on 150 tokens: the shares' parts joined by projectHeads are forward's output bit for bit, over 2, 3 and 12 shares", async () => {
  const lab = await loadAttentionLab();
  const m = lab.create("MultiHeadAttention", GPT2);
  const x = { shape: [2, 150, 768], data: lab.seededTokens(300, 768, 5).data };
  const whole = m.forward(x, { training: false }).output;
  assert.deepEqual(m.headShares(2, { training: false }), [{ first: 0, count: 6 }, { first: 6, count: 6 }]);
  assert.deepEqual(m.headShares(2), [{ first: 0, count: 12 }], "training (the default) with dropout 0.1: one stream of draws, one share");
  for (const parts of [2, 3, 12]) {
    const shares = m.headShares(parts, { training: false });
    assert.equal(shares.length, parts);
    const pieces = shares.map((s) => m.forwardShare(x, s, { training: false }));
    assert.deepEqual(pieces.map((p) => p.shape), shares.map((s) => [2, 150, s.count * 64]));
    const joined = m.projectHeads(x, pieces, { training: false });
    assert.deepEqual(joined.output.shape, [2, 150, 768]);
    assert.ok(sameBits(joined.output.data, whole.data), `${parts} shares`);
    assert.equal(joined.warnings, undefined);
  }
});

test("GroupedQueryAttention shares whole key/value groups; the wrapper's join is heads_concat itself", async () => {
  const lab = await loadAttentionLab();
  const gqa = lab.create("GroupedQueryAttention", { d_in: 32, d_out: 32, dropout: 0.0, num_heads: 8, num_kv_groups: 2 });
  assert.deepEqual(gqa.headShares(3), [{ first: 0, count: 4 }, { first: 4, count: 4 }], "dropout 0: training splits too");
  const x = { shape: [1, 40, 32], data: lab.seededTokens(40, 32, 2).data };
  const parts = gqa.headShares(2).map((s) => gqa.forwardShare(x, s));
  assert.ok(sameBits(gqa.projectHeads(x, parts).output.data, gqa.forward(x).output.data));
  const wrapper = lab.create("MultiHeadAttentionWrapper", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 });
  const book = lab.bookTokens();
  const bx = { shape: [1, 6, 3], data: book.data };
  const wparts = wrapper.headShares(2).map((s) => wrapper.forwardShare(bx, s));
  assert.ok(sameBits(wrapper.projectHeads(bx, wparts).output.data, wrapper.forward(bx).output.data));
});

test("refusals name the slot: a broken group, dropout acting, a single-head class, parts of another shape, bad parts", async () => {
  const lab = await loadAttentionLab();
  const gqa = lab.create("GroupedQueryAttention", { d_in: 8, d_out: 8, dropout: 0.5, num_heads: 4, num_kv_groups: 2 });
  const x = { shape: [1, 5, 8], data: lab.seededTokens(5, 8, 1).data };
  assert.deepEqual(refusal(() => gqa.forwardShare(x, { first: 1, count: 2 }, { training: false })), ["head_share", "share"]);
  assert.deepEqual(refusal(() => gqa.forwardShare(x, { first: 0, count: 2.5 }, { training: false })), ["head_share", "share"]);
  assert.deepEqual(refusal(() => gqa.forwardShare(x, null, { training: false })), ["head_share", "share"]);
  assert.deepEqual(refusal(() => gqa.forwardShare(x, { first: 0, count: 2 })), ["head_share", "dropout"], "training with dropout 0.5");
  const part = gqa.forwardShare(x, { first: 0, count: 2 }, { training: false });
  assert.deepEqual(refusal(() => gqa.projectHeads(x, [part], { training: false })), ["head_share", "heads_concat"]);
  assert.deepEqual(refusal(() => gqa.projectHeads(x, "parts", { training: false })), ["head_share", "heads_concat"]);
  assert.deepEqual(refusal(() => gqa.projectHeads({ shape: [1, 4, 8], data: new Float32Array(32) }, [part, part], { training: false })), ["head_share", "heads_concat"]);
  for (const parts of [0, 65, 1.5, "2", Number.NaN]) assert.deepEqual(refusal(() => gqa.headShares(parts)), ["bad_options", "parts"], String(parts));
  const ca = lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0 });
  assert.deepEqual(ca.headShares(4), [{ first: 0, count: 1 }]);
  assert.deepEqual(refusal(() => ca.forwardShare({ shape: [1, 6, 3], data: lab.bookTokens().data }, { first: 0, count: 1 })), ["head_share", "share"]);
  ca.dispose();
  assert.deepEqual(refusal(() => ca.headShares(2)), ["disposed", "module"]);
});

test("module.revision changes with setParameter and copyWeights into the module, not with a forward", async () => {
  const lab = await loadAttentionLab();
  const a = lab.create("MultiHeadAttention", { d_in: 4, d_out: 4, context_length: 6, dropout: 0.0, num_heads: 2 });
  const c = lab.create("MultiHeadAttentionCombinedQKV", { d_in: 4, d_out: 4, num_heads: 2, context_length: 6 });
  const r0 = a.revision;
  a.forward({ shape: [1, 6, 4], data: new Float32Array(24) });
  assert.equal(a.revision, r0);
  a.setParameter("out_proj.bias", { shape: [4], data: new Float32Array([1, 2, 3, 4]) });
  const r1 = a.revision;
  assert.notEqual(r1, r0);
  const c0 = c.revision;
  lab.copyWeights(a, c);
  assert.notEqual(c.revision, c0);
  assert.equal(a.revision, r1, "a was only read");
});

test("in Node there is no Worker: createHeadSplit() has none and runs forward whole; asking for Workers is refused", async () => {
  const lab = await loadAttentionLab();
  const m = lab.create("MultiHeadAttention", { d_in: 8, d_out: 8, context_length: 6, dropout: 0.0, num_heads: 2 });
  const x = { shape: [1, 6, 8], data: lab.seededTokens(6, 8, 1).data };
  const split = createHeadSplit();
  assert.equal(split.workers, 0);
  assert.ok(sameBits((await split.forward(m, x, { training: false })).output.data, m.forward(x, { training: false }).output.data));
  split.dispose();
  await assert.rejects(split.forward(m, x), (e) => e.code === "disposed" && e.slot === "workers");
  assert.throws(() => createHeadSplit({ workers: 1 }), (e) => e.code === "bad_options" && e.slot === "workers");
  assert.throws(() => createHeadSplit({ workers: -1 }), (e) => e.code === "bad_options" && e.slot === "workers");
});
