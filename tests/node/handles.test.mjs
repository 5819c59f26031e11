// Modules and generators live in WASM memory under handles; the facade hands the core plain values
// only, so no user code (a getter, an iterator) runs while a WASM call is under way.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab, AttentionError } from "attention-lab";
import { stackTwo, sameBits } from "./helpers.mjs";

const lab = await loadAttentionLab();
const book = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };

/** Wraps every function of the raw core so that `inside` is true while a WASM call runs. */
function watchCore() {
  const core = lab._core;
  const state = { inside: false, calls: 0 };
  const originals = {};
  for (const name of ["check", "describe", "create", "forward", "setParameter", "fromParameters", "estimateBytes"]) {
    originals[name] = core[name];
    core[name] = (...args) => {
      state.inside = true;
      state.calls++;
      try {
        return originals[name](...args);
      } finally {
        state.inside = false;
      }
    };
  }
  state.restore = () => Object.assign(core, originals);
  return state;
}

test("getters of a config, a shape and tensor data run before the WASM call, never inside it", () => {
  const watch = watchCore();
  const readInside = [];
  const spy = (name, value) => ({
    get() {
      readInside.push([name, watch.inside]);
      return value;
    },
    enumerable: true,
  });
  try {
    const config = Object.defineProperties({}, Object.fromEntries(Object.entries(book).map(([k, v]) => [k, spy(k, v)])));
    const m = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(123) });
    const x = stackTwo(lab.bookTokens());
    const watched = Object.defineProperties({}, { shape: spy("shape", x.shape), data: spy("data", x.data) });
    const { output } = m.forward(watched, { training: false });
    const plain = lab.create("MultiHeadAttention", book, { generator: lab.manualSeed(123) }).forward(x, { training: false }).output;
    assert.ok(sameBits(output.data, plain.data), "the same result as with a plain config and tensor");
    m.setParameter("out_proj.bias", Object.defineProperties({}, { shape: spy("bias.shape", [2]), data: spy("bias.data", [0.5, -0.5]) }));
    assert.ok(watch.calls >= 4);
    assert.ok(readInside.length >= 9, "every getter was read");
    assert.deepEqual(readInside.filter(([, inside]) => inside), [], "no getter ran inside a WASM call");
  } finally {
    watch.restore();
  }
});

test("a config key named __proto__ reaches the core as a slot it can name", () => {
  const config = JSON.parse('{"d_in": 3, "d_out": 2, "__proto__": 5}');
  const d = lab.check("SelfAttention_v1", config).find((x) => x.code === "unknown_slot");
  assert.ok(d, "the unknown slot is reported");
  assert.deepEqual(d.slots, ["__proto__"]);
});

test("tensor sizes are checked before anything is read or copied", () => {
  let read = false;
  const huge = {
    length: 2 ** 27,
    [Symbol.iterator]() {
      read = true;
      return [][Symbol.iterator]();
    },
  };
  const m = lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 });
  const e = (() => {
    try {
      m.forward({ shape: [1, 3], data: huge });
    } catch (err) {
      return err;
    }
  })();
  assert.ok(e instanceof AttentionError);
  assert.equal(e.code, "tensor_size");
  assert.equal(e.slot, "x");
  assert.match(e.message, /\(1, 3\) \(3 values\) but data holds 134217728/);
  assert.equal(read, false, "the data was never iterated");
  const bad = (() => {
    try {
      m.forward({ shape: [1, "3"], data: [1, 2, 3] });
    } catch (err) {
      return err;
    }
  })();
  assert.equal(bad.code, "tensor_shape");
});

test("a generator lives in WASM memory: its stream goes on across calls, and dispose() ends it", () => {
  const a = lab.manualSeed(42);
  const b = lab.manualSeed(42);
  const first = a.rand([2, 3]);
  const second = a.rand([2, 3]);
  const both = b.rand([4, 3]);
  assert.ok(sameBits(new Float32Array([...first.data, ...second.data]), both.data), "two draws of 6 = one draw of 12 from the same seed");
  assert.equal(a._state.length, 625);
  const handles = lab.handlesInUse();
  a.dispose();
  assert.equal(lab.handlesInUse(), handles - 1);
  assert.throws(() => a.rand([1]), (e) => e instanceof AttentionError && e.code === "disposed" && e.slot === "generator");
  const m = lab.create("MultiHeadAttention", { ...book, dropout: 0.5 }, { generator: b });
  b.dispose();
  // the module shares its generator's state: training-mode dropout goes on drawing from it (options.test.mjs checks the bits)
  assert.deepEqual(m.forward(stackTwo(lab.bookTokens())).output.shape, [2, 6, 2]);
  assert.deepEqual(m.forward(stackTwo(lab.bookTokens()), { training: false }).output.shape, [2, 6, 2]);
});

test("copyWeights changes the target in WASM memory, and a refused copy leaves it as it was", () => {
  const v2 = lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 }, { generator: lab.manualSeed(789) });
  const v1 = lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 }, { generator: lab.manualSeed(123) });
  const before = v1.parameters();
  assert.throws(() => lab.copyWeights(v2, v1, { W_query: { copy: true, transpose: true }, W_key: true }), (e) => e.code === "copy_plan" && e.slot === "W_key");
  assert.deepEqual(v1.parameters(), before);
  const report = lab.copyWeights(v2, v1, { W_query: { copy: true, transpose: true }, W_key: { copy: true, transpose: true }, W_value: { copy: true, transpose: true } }, { tokens: lab.bookTokens() });
  assert.equal(report.agree, true);
  const x = lab.bookTokens();
  assert.ok(sameBits(v1.forward(x).output.data, v2.forward(x).output.data) || report.maxAbsDiff <= 1e-6);
  // v1's W_query is now v2's W_query.weight transposed
  const w2 = v2.parameters()[0];
  const w1 = v1.parameters()[0];
  assert.deepEqual(w1.shape, [3, 2]);
  for (let i = 0; i < 3; i++) for (let j = 0; j < 2; j++) assert.equal(w1.data[i * 2 + j], w2.data[j * 3 + i]);
});
