// The KV cache through the library: module.newCache() and forward(chunk, {cache}) (the book's
// ch04/03_kv-cache): chunked cached forwards equal the uncached forward, the trace shows the cache,
// refusals are coded and leave the cache as it was, and a cache lives in WASM memory under a handle.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab, AttentionError } from "attention-lab";

const lab = await loadAttentionLab();
const gpt2Like = { d_in: 8, d_out: 8, context_length: 12, dropout: 0.0, num_heads: 2 };

/** Rows first .. first + count - 1 of a (b, T, d) tensor. */
function rows(t, first, count) {
  const [b, T, d] = t.shape;
  const data = new Float32Array(b * count * d);
  for (let i = 0; i < b; i++) data.set(t.data.subarray((i * T + first) * d, (i * T + first + count) * d), i * count * d);
  return { shape: [b, count, d], data };
}
function maxDiff(a, b) {
  assert.deepEqual(a.shape, b.shape);
  return a.data.reduce((m, v, i) => Math.max(m, Math.abs(v - b.data[i])), 0);
}
const FIXTURES = JSON.parse(readFileSync(new URL("../fixtures/kv_cache_fixtures.json", import.meta.url), "utf8"));

const code = (f) => {
  try {
    f();
  } catch (err) {
    assert.ok(err instanceof AttentionError, String(err));
    return err.code;
  }
  return "";
};

test("MultiHeadAttention decoding token by token with a cache gives the uncached rows within 1e-6; the cache counts tokens and bytes", () => {
  const m = lab.create("MultiHeadAttention", gpt2Like, { generator: lab.manualSeed(123) });
  const x = { shape: [2, 12, 8], data: lab.seededTokens(24, 8, 5).data };
  const whole = m.forward(x, { training: false }).output;
  const cache = m.newCache();
  assert.deepEqual([cache.window, cache.position, cache.tokens, cache.bytes, cache.bytesMha], [0, 0, 0, 0, 0]);
  const prefill = m.forward(rows(x, 0, 5), { training: false, cache }).output;
  assert.ok(maxDiff(prefill, rows(whole, 0, 5)) <= 1e-6);
  for (let t = 5; t < 12; t++) {
    const y = m.forward(rows(x, t, 1), { training: false, cache }).output;
    assert.ok(maxDiff(y, rows(whole, t, 1)) <= 1e-6, `token ${t}`);
  }
  // keys and values of 12 tokens, 2 heads of 4, batch 2, float32
  assert.deepEqual([cache.position, cache.tokens, cache.bytes, cache.bytesMha], [12, 12, 2 * 2 * 2 * 12 * 4 * 4, 2 * 2 * 2 * 12 * 4 * 4]);
  // a 13th position is past the mask buffer: refused, naming both numbers; the cache is unchanged
  assert.throws(() => m.forward(rows(x, 0, 1), { training: false, cache }), (e) => e.code === "cache_full" && e.slot === "context_length" && /13 positions, past context_length = 12/.test(e.message));
  assert.equal(cache.position, 12);
  cache.reset();
  assert.deepEqual([cache.position, cache.tokens], [0, 0]);
  assert.ok(maxDiff(m.forward(rows(x, 0, 3), { training: false, cache }).output, rows(whole, 0, 3)) <= 1e-6, "after reset the cache starts at position 0");
});

test("a cached step's trace: scores (T_new, T_past + T_new), cache_k / cache_v per key/value head, the mask rows of its positions", () => {
  const m = lab.create("GroupedQueryAttention", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 4, num_kv_groups: 2 }, { generator: lab.manualSeed(123) });
  const x = { shape: [1, 6, 8], data: lab.seededTokens(6, 8, 9).data };
  const cache = m.newCache();
  m.forward(rows(x, 0, 4), { training: false, cache });
  const { trace } = m.forward(rows(x, 4, 2), { training: false, cache, trace: true });
  const stage = (id) => trace.find((s) => s.id === id);
  assert.deepEqual(stage("attn_scores").shape, [1, 4, 2, 6]);
  assert.deepEqual(stage("keys").shape, [1, 2, 2, 2]);
  assert.deepEqual(stage("cache_k").shape, [1, 2, 6, 2], "two key/value heads, cached before repeat_interleave");
  assert.deepEqual(stage("cache_v").shape, [1, 2, 6, 2]);
  assert.deepEqual(stage("cache_k").axes, ["b", "num_kv_groups", "key", "head_dim"]);
  assert.deepEqual([...stage("mask").data], [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(trace.map((s) => s.id).slice(0, 6), ["input", "queries", "keys", "values", "cache_k", "cache_v"]);
  assert.equal(cache.tokens, 6);
});

test("MultiHeadAttentionWithSWA keeps its last sliding_window_size entries, and chunked prefill equals the uncached forward", () => {
  const m = lab.create("MultiHeadAttentionWithSWA", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 2, sliding_window_size: 4 }, { generator: lab.manualSeed(1) });
  const x = { shape: [1, 10, 8], data: lab.seededTokens(10, 8, 2).data };
  const whole = m.forward(x, { training: false }).output;
  const cache = m.newCache();
  let at = 0;
  for (const n of [3, 1, 4, 2]) {
    assert.ok(maxDiff(m.forward(rows(x, at, n), { training: false, cache }).output, rows(whole, at, n)) <= 1e-6);
    at += n;
  }
  assert.equal(cache.tokens, 4, "the book's SWA test: the cache keeps 4 entries");
  assert.equal(cache.position, 10);
});

test("a window cache runs past context_length, the oldest keys shifting out; refusals are coded", () => {
  const m = lab.create("MultiHeadAttention", gpt2Like, { generator: lab.manualSeed(123) });
  const cache = m.newCache({ window: 4 });
  const x = { shape: [1, 20, 8], data: lab.seededTokens(20, 8, 3).data };
  for (let t = 0; t < 20; t++) m.forward(rows(x, t, 1), { training: false, cache });
  assert.deepEqual([cache.window, cache.position, cache.tokens], [4, 20, 4]);
  assert.equal(code(() => m.forward(rows(x, 0, 5), { training: false, cache })), "cache_window");
  assert.equal(code(() => m.newCache({ window: 0 })), "cache_window");
  assert.equal(code(() => m.newCache({ window: "4" })), "cache_window");
  assert.equal(code(() => m.forward({ shape: [2, 1, 8], data: new Float32Array(16) }, { training: false, cache })), "cache_batch");
  const other = lab.create("MultiHeadAttention", gpt2Like);
  assert.equal(code(() => other.forward(rows(x, 0, 1), { training: false, cache })), "cache_module");
  assert.equal(code(() => m.forward(rows(x, 0, 1), { training: false, cache: {} })), "cache_module");
  const v2 = lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 });
  assert.equal(code(() => v2.newCache()), "cache_unsupported");
});

test("a cache lives under a handle: dispose frees it, a disposed cache is refused", () => {
  const m = lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0 });
  const before = lab.handlesInUse();
  const cache = m.newCache();
  assert.equal(lab.handlesInUse(), before + 1);
  cache.dispose();
  cache.dispose();
  assert.equal(lab.handlesInUse(), before);
  const x = { shape: [1, 1, 3], data: new Float32Array([0.1, 0.2, 0.3]) };
  assert.throws(() => m.forward(x, { training: false, cache }), (e) => e.code === "disposed" && e.slot === "cache");
});

test("MultiHeadLatentAttention's cache holds the latent c_kv alone: latent_dim x 4 bytes per token, keys and values re-projected from it at every step", () => {
  const config = { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 2, latent_dim: 3 };
  const m = lab.create("MultiHeadLatentAttention", config, { generator: lab.manualSeed(123) });
  const x = { shape: [1, 6, 8], data: lab.seededTokens(6, 8, 4).data };
  const whole = m.forward(x, { training: false, trace: true });
  const latent = whole.trace.find((s) => s.id === "c_kv");
  const cache = m.newCache();
  for (let t = 0; t < 6; t++) {
    const { output, trace } = m.forward(rows(x, t, 1), { training: false, cache, trace: true });
    assert.ok(maxDiff(output, rows(whole.output, t, 1)) <= 1e-6, `token ${t}`);
    // 3 floats per token; MultiHeadAttention of width 8 would hold 2 x 8
    assert.deepEqual([cache.tokens, cache.bytes, cache.bytesMha], [t + 1, 3 * 4 * (t + 1), 2 * 8 * 4 * (t + 1)]);
    const held = trace.find((s) => s.id === "cache_c_kv");
    assert.deepEqual(held.shape, [1, t + 1, 3]);
    assert.deepEqual(held.axes, ["b", "key", "latent_dim"]);
    assert.ok(maxDiff(held, rows(latent, 0, t + 1)) <= 1e-6, "the cached latent is the uncached run's c_kv rows");
    assert.deepEqual(trace.find((s) => s.id === "keys").shape, [1, 2, t + 1, 4], "every key re-projected from the cached latent");
    assert.match(trace.find((s) => s.id === "keys").formula, /^keys = W_UK\(cache_c_kv\)/);
    assert.ok(!trace.some((s) => s.id === "cache_k" || s.id === "cache_v"));
    assert.deepEqual(trace.map((s) => s.id).slice(0, 6), ["input", "queries", "c_kv", "cache_c_kv", "keys", "values"]);
  }
  // the facade's numbers are the core's facts per token: kvCacheBytesPerToken x tokens
  const d = lab.describe("MultiHeadLatentAttention", config);
  assert.equal(cache.bytes, 6 * d.kvCacheBytesPerToken);
  assert.equal(cache.bytesMha, 6 * d.kvCacheBytesPerTokenMha);
  // a window keeps the last latent rows
  const w = m.newCache({ window: 2 });
  for (let t = 0; t < 6; t++) m.forward(rows(x, t, 1), { training: false, cache: w });
  assert.deepEqual([w.tokens, w.bytes], [2, 2 * 3 * 4]);
});

test("PyTorch's cached forwards (the book's ch04/03, ch04/04, ch04/05 and ch04/06 caches, generate_cache_fixtures.py): every chunk within 1e-6, the same entries held", () => {
  assert.ok(FIXTURES.cases.length >= 6);
  for (const c of FIXTURES.cases) {
    const m = lab.create(c.class, c.config, { generator: lab.manualSeed(c.seed) });
    const cache = m.newCache(c.window === null ? {} : { window: c.window });
    const x = { shape: c.input.shape, data: Float32Array.from(c.input.data) };
    let at = 0;
    c.chunks.forEach((n, i) => {
      const y = m.forward(rows(x, at, n), { training: false, cache }).output;
      assert.ok(maxDiff(y, { shape: c.outputs[i].shape, data: Float32Array.from(c.outputs[i].data) }) <= 1e-6, `${c.name}: chunk ${i}`);
      at += n;
    });
    assert.equal(cache.tokens, c.cache_tokens, c.name);
    assert.equal(cache.position, c.cache_position, c.name);
    assert.equal(cache.bytes, c.cache_floats * 4, `${c.name}: the bytes of what PyTorch's cache holds (float32)`);
  }
});
