// The whole GPT-2 forward (lab.loadGPT2, model.run) against the book's GPTModel in PyTorch
// with weights put in as chapter 5 loads a GPT-2 file (tests/fixtures/generate_gpt2.py). The files are
// rebuilt here from their seeds with the library's own torch.manual_seed generator, byte for byte.
// Tolerances: every layer's attention weights within 1e-5, the logits within 1e-4 of
// the largest |logit|, the residual stream within 1e-5 of its largest |value|.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab } from "attention-lab";
import { GPT2_FIXTURES, gpt2File, sha256, f16Bits, bf16Bits } from "../gpt2-files.mjs";
import { gpt2BlockShapes, gpt2Tensors, safetensorsFile, safetensorsHeader } from "../safetensors.mjs";
import { readFileSync } from "node:fs";

const lab = await loadAttentionLab();
const files = new Map();
/** The case's file, built once (the GPT-2-small-shaped one is 214 MB). */
function fileOf(c) {
  if (!files.has(c.name)) files.set(c.name, gpt2File(lab, c));
  return files.get(c.name);
}
const options = (c) => (c.n_embd % 64 === 0 ? undefined : { num_heads: c.n_head });

function maxAbs(values) {
  let m = 0;
  for (const v of values) m = Math.max(m, Math.abs(v));
  return m;
}

function assertClose(actual, expected, tol, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs(actual[i] - expected[i]);
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  assert.ok(worst <= tol, `${what}: |diff| ${worst} at ${at} > ${tol}`);
}

test("the half and bfloat16 conversions used to build the files round to nearest even", () => {
  assert.equal(f16Bits(1), 0x3c00);
  assert.equal(f16Bits(-2), 0xc000);
  assert.equal(f16Bits(65504), 0x7bff);
  assert.equal(f16Bits(65520), 0x7c00); // rounds up to inf
  assert.equal(f16Bits(1 + 2 ** -11), 0x3c00); // a tie: to even
  assert.equal(f16Bits(1 + 3 * 2 ** -11), 0x3c02);
  assert.equal(f16Bits(2 ** -24), 0x0001); // the smallest subnormal
  assert.equal(bf16Bits(1), 0x3f80);
  assert.equal(bf16Bits(1 + 2 ** -8), 0x3f80); // a tie: to even
  assert.equal(bf16Bits(1 + 3 * 2 ** -8), 0x3f82);
});

for (const c of GPT2_FIXTURES.cases) {
  test(`${c.name}: ${c.n_layer} blocks of width ${c.n_embd} (${c.dtype}), every layer and the next token as the book's GPTModel`, async () => {
    const file = fileOf(c);
    assert.equal(file.length, c.bytes);
    assert.equal(sha256(file), c.sha256, "the file is the one PyTorch ran");
    const model = await lab.loadGPT2(file, options(c));
    const { mapping, ...config } = model.config;  // mapping: tests/node/layouts.test.mjs
    assert.deepEqual(config, {
      n_embd: c.n_embd, n_head: c.n_head, n_layer: c.n_layer, n_ctx: c.n_ctx, vocab_size: c.vocab_size, dtype: c.dtype, size: "",
      layout: "huggingface", layoutName: "Hugging Face GPT-2", format: "safetensors", qkv_bias: true, n_out: c.vocab_size,
    });
    assert.equal(mapping.length, 12 + 5, "block 0's 12 tensors, wte, wpe, ln_f and the tied head");
    const steps = [];
    const r = await model.run(c.token_ids, { onProgress: (p) => steps.push(`${p.step}${p.layer ?? ""} ${p.done}/${p.total}`) });
    assert.deepEqual(steps, ["embedding 1/" + (c.n_layer + 2), ...Array.from({ length: c.n_layer }, (_, i) => `block${i} ${i + 2}/${c.n_layer + 2}`), `logits ${c.n_layer + 2}/${c.n_layer + 2}`]);
    const T = c.token_ids.length;
    assert.equal(r.layers.length, c.n_layer);
    r.layers.forEach((layer, i) => {
      const e = c.layers[i];
      assert.deepEqual(layer.input.shape, [1, T, c.n_embd]);
      assert.deepEqual(layer.attnWeights.shape, [1, c.n_head, T, T]);
      assertClose(layer.input.data, e.input, 1e-5 * Math.max(1, maxAbs(e.input)), `layer ${i} input`);
      assertClose(layer.attnWeights.data, e.attn_weights, 1e-5, `layer ${i} attention weights`);
    });
    assert.equal(r.lastLogits.length, c.vocab_size);
    const expected = c.last_logits;
    assertClose(expected.ids.map((id) => r.lastLogits[id]), expected.values, 1e-4 * expected.max_abs, "last logits");
    assert.ok(Math.abs(maxAbs(r.lastLogits) - expected.max_abs) <= 1e-4 * expected.max_abs);
    assert.deepEqual(r.nextTokens.map((t) => t.id), c.next_tokens.map((t) => t.id));
    r.nextTokens.forEach((t, i) => assert.ok(Math.abs(t.prob - c.next_tokens[i].prob) <= 1e-4 * c.next_tokens[i].prob, `p(${t.id})`));
    // the same file, run again: the same numbers (nothing left over from the last run)
    const again = await model.run(c.token_ids);
    assert.deepEqual(again.lastLogits, r.lastLogits);
    model.dispose();
  });
}

test("checkpointInput gives layer L's real input: ln_1 of the stream after blocks 0 .. L-1", async () => {
  const c = GPT2_FIXTURES.cases.find((x) => x.name === "tiny_f32");
  const file = fileOf(c);
  for (const layer of [0, 1]) {
    const x = await lab.checkpointInput(file, { tokenIds: c.token_ids, layer, num_heads: c.n_head });
    assert.deepEqual(x.shape, [1, c.token_ids.length, c.n_embd]);
    assertClose(x.data, c.layers[layer].attention_input, 1e-5 * Math.max(1, maxAbs(c.layers[layer].attention_input)), `layer ${layer}`);
  }
  // the model's own method says the same
  const model = await lab.loadGPT2(file, { num_heads: c.n_head });
  const x1 = await model.attentionInput(c.token_ids, 1);
  assertClose(x1.data, c.layers[1].attention_input, 1e-5 * Math.max(1, maxAbs(c.layers[1].attention_input)), "attentionInput(1)");
  await assert.rejects(model.attentionInput(c.token_ids, 2), { code: "checkpoint_layer" });
  model.dispose();
});

test("progress, cancelling through a signal, one run at a time, and dispose", async () => {
  const c = GPT2_FIXTURES.cases.find((x) => x.name === "tiny_bf16");
  const model = await lab.loadGPT2(fileOf(c), { num_heads: c.n_head });
  const before = lab.handlesInUse();
  const controller = new AbortController();
  const seen = [];
  const cancelled = model.run(c.token_ids, {
    signal: controller.signal,
    onProgress: (p) => {
      seen.push(p.step);
      if (p.step === "block") controller.abort();
    },
  });
  await assert.rejects(model.run(c.token_ids), { code: "busy" });
  await assert.rejects(cancelled, { code: "cancelled" });
  assert.deepEqual(seen, ["embedding", "block"]);
  // a progress callback that throws stops the run with a coded error, and the model stays usable
  await assert.rejects(model.run(c.token_ids, { onProgress: () => { throw new Error("mine"); } }), (e) => e.code === "callback" && e.slot === "onProgress");
  // the model is fine afterwards, and its result the same as ever
  const r = await model.run(c.token_ids);
  assert.deepEqual(r.nextTokens.map((t) => t.id), c.next_tokens.map((t) => t.id));
  assert.equal(lab.handlesInUse(), before);
  model.dispose();
  assert.equal(lab.handlesInUse(), before - 1);
  await assert.rejects(model.run(c.token_ids), { code: "disposed" });
  assert.throws(() => model.estimateBytes(4), { code: "disposed" });
});

test("bad files and bad tokens: a coded error that names what is wrong", async () => {
  const c = GPT2_FIXTURES.cases.find((x) => x.name === "tiny_f32");
  const file = fileOf(c);
  await assert.rejects(lab.loadGPT2(file), (e) => e.code === "checkpoint_num_heads" && /width 8/.test(e.message) && /num_heads/.test(e.hint));
  await assert.rejects(lab.loadGPT2(file, { num_heads: 3 }), (e) => e.code === "checkpoint_num_heads" && /does not divide n_embd 8/.test(e.message));
  const model = await lab.loadGPT2(file, { num_heads: 2 });
  await assert.rejects(model.run([15496, 50257]), (e) => e.code === "checkpoint_token" && /50257 is outside the vocabulary \(0 to 50256\)/.test(e.message));
  await assert.rejects(model.run([]), { code: "input_empty" });
  await assert.rejects(model.run(new Array(1025).fill(11)), (e) => e.code === "context_too_short" && /1025 > n_ctx 1024/.test(e.message));
  await assert.rejects(model.run(["a"]), { code: "checkpoint_token" });
  model.dispose();
  // one attention layer's file is not a whole model: the first key the model needs and lacks is named
  const layerOnly = readFileSync(new URL("../fixtures/checkpoints/gpt2_d4_h2.safetensors", import.meta.url));
  await assert.rejects(lab.loadGPT2(layerOnly, { num_heads: 2 }), (e) => e.code === "checkpoint_missing_key" && /h\.0\.ln_2\.weight/.test(e.message));
  await assert.rejects(lab.loadGPT2("model.safetensors"), { code: "checkpoint_source" });
  // a c_fc of the wrong shape is named with both shapes
  const wrongFc = (d) => gpt2BlockShapes(d).map(([key, shape]) => [key, key === "mlp.c_fc.weight" ? [d, 3 * d] : shape]);
  const { head, dataBytes } = safetensorsHeader(gpt2Tensors({ d: 8, layers: 1, vocab: 16, nCtx: 8, block: wrongFc }));
  const bad = Buffer.concat([head, Buffer.alloc(dataBytes)]);
  await assert.rejects(lab.loadGPT2(bad, { num_heads: 2 }), (e) => e.code === "checkpoint_shape" && /h\.0\.mlp\.c_fc\.weight is \(8, 24\) but the model needs \(8, 32\)/.test(e.message));
});

/** A Blob of `size` bytes holding `head` and then zeros, none of them stored (GPT-2 XL is 6.4 GB). */
class HeaderOnly extends Blob {
  #head;
  #size;
  constructor(head, size) {
    super([]);
    this.#head = head;
    this.#size = size;
  }
  get size() {
    return this.#size;
  }
  slice(begin = 0, end = this.#size) {
    const part = new Uint8Array(Math.max(0, Math.min(end, this.#size) - begin));
    if (begin < this.#head.length) part.set(this.#head.subarray(begin, Math.min(end, this.#head.length)));
    return new Blob([part]);
  }
}

test("attention \"thumbnails\": each head averaged into at most 64 x 64 cells and the first 48 tokens exact, from the same weights as \"full\"", async () => {
  const c = GPT2_FIXTURES.cases.find((x) => x.name === "tiny_f32");
  const model = await lab.loadGPT2(fileOf(c), { num_heads: c.n_head });
  const H = c.n_head;
  for (const T of [6, 100]) {
    const ids = Array.from({ length: T }, (_, i) => c.token_ids[i % c.token_ids.length]);
    const full = await model.run(ids);
    const small = await model.run(ids, { attention: "thumbnails" });
    assert.deepEqual(small.lastLogits, full.lastLogits, "the same forward");
    const S = Math.min(T, 64);
    const F = Math.min(T, 48);
    small.layers.forEach((l, layer) => {
      assert.deepEqual(Object.keys(l).sort(), ["firstTokens", "thumbnail"], "nothing T x T");
      assert.deepEqual(l.thumbnail.shape, [1, H, S, S]);
      assert.deepEqual(l.firstTokens.shape, [1, H, F, F]);
      const w = full.layers[layer].attnWeights.data;
      for (let h = 0; h < H; h++) {
        for (let a = 0; a < S; a++) {
          for (let b = 0; b < S; b++) {
            // the mean over queries floor(aT/S) .. floor((a+1)T/S) - 1 and keys likewise (in double here; 1e-7 for the float32 rounding)
            let sum = 0;
            let n = 0;
            for (let i = Math.floor((a * T) / S); i < Math.floor(((a + 1) * T) / S); i++) {
              for (let j = Math.floor((b * T) / S); j < Math.floor(((b + 1) * T) / S); j++) {
                sum += w[(h * T + i) * T + j];
                n++;
              }
            }
            const got = l.thumbnail.data[(h * S + a) * S + b];
            assert.ok(Math.abs(got - sum / n) <= 1e-7, `layer ${layer} head ${h} cell (${a}, ${b}): ${got} vs ${sum / n}`);
            if (b > a) assert.equal(got, 0, "a cell above the diagonal holds only masked pairs");
          }
        }
        for (let i = 0; i < F; i++) {
          for (let j = 0; j < F; j++) assert.equal(l.firstTokens.data[(h * F + i) * F + j], w[(h * T + i) * T + j], `first tokens (${i}, ${j})`);
        }
      }
      if (T === S) assert.deepEqual(l.thumbnail.data, full.layers[layer].attnWeights.data, "S = T: the weights themselves");
    });
  }
  await assert.rejects(model.run(c.token_ids, { attention: "weights" }), (e) => e.code === "run_option" && e.slot === "attention" && /"weights"/.test(e.message));
  assert.throws(() => model.estimateBytes(6, { attention: 3 }), { code: "run_option" });
  model.dispose();
});

test("the run's estimate counts what its result holds: GPT-2 XL on 1024 tokens is refused with full weights (4.7 GiB) and fits as thumbnails", async () => {
  const { head, dataBytes } = safetensorsHeader(gpt2Tensors({ d: 1600, layers: 48 }));
  const model = await lab.loadGPT2(new HeaderOnly(head, head.length + dataBytes));
  const ids = new Array(1024).fill(11);
  const full = model.estimateBytes(1024);
  const thumbnails = model.estimateBytes(1024, { attention: "thumbnails" });
  // 48 layers x 25 heads x 1024 x 1024 float32 weights, plus 48 x 1024 x 1600 inputs
  assert.ok(full - thumbnails >= 48 * 4 * (25 * 1024 * 1024 + 1024 * 1600) - 48 * 4 * 25 * (64 * 64 + 48 * 48), `${full} vs ${thumbnails}`);
  await assert.rejects(model.run(ids), (e) => e.code === "too_large" && /thumbnails/.test(e.hint));
  // as thumbnails it starts (cancelled after the embedding: the header-only file's weights are zeros)
  const controller = new AbortController();
  const steps = [];
  await assert.rejects(model.run(ids, { attention: "thumbnails", signal: controller.signal, onProgress: (p) => { steps.push(p.step); controller.abort(); } }), { code: "cancelled" });
  assert.deepEqual(steps, ["embedding"]);
  model.dispose();
});

test("GPT-2's four sizes are recognised from the shapes alone (header-only files)", async () => {
  const sizes = [["small", 768, 12, 12], ["medium", 1024, 24, 16], ["large", 1280, 36, 20], ["XL", 1600, 48, 25]];
  for (const [name, d, layers, heads] of sizes) {
    const { head, dataBytes } = safetensorsHeader(gpt2Tensors({ d, layers }));
    // a file of the real size whose data section is never read: only the header is, when it is opened
    const blob = new HeaderOnly(head, head.length + dataBytes);
    const model = await lab.loadGPT2(blob);
    const { mapping: _, ...config } = model.config;
    assert.deepEqual(config, {
      n_embd: d, n_head: heads, n_layer: layers, n_ctx: 1024, vocab_size: 50257, dtype: "F32", size: name,
      layout: "huggingface", layoutName: "Hugging Face GPT-2", format: "safetensors", qkv_bias: true, n_out: 50257,
    });
    // the estimate of a 64-token run: one block, the activations and the logits, never the whole file
    const bytes = model.estimateBytes(64);
    assert.ok(bytes < dataBytes / 4, `${name}: ${bytes} bytes for a ${dataBytes}-byte file`);
    model.dispose();
  }
});

/** A small whole GPT-2 (width 8, 2 heads by its __metadata__, 16 tokens, 12 positions) with seeded values; `fill(key, values)` may change them. */
const smallModel = ({ layers = 2, fill, tensors = gpt2Tensors({ d: 8, layers, vocab: 16, nCtx: 12 }) } = {}) => safetensorsFile(tensors, { fill, metadata: { n_head: "2" } });

test("finite weights that overflow float32 reject with non_finite_stage naming the block and stage, never NaN probabilities or token 0's input", async () => {
  const ok = await lab.loadGPT2(smallModel());
  const r = await ok.run([3, 1, 4]);
  assert.ok(r.nextTokens.every((t) => Number.isFinite(t.prob)) && r.lastLogits.every(Number.isFinite));
  ok.dispose();
  // wte at +-3e38 (finite, as a file may hold): the LayerNorms tame the stream, the tied head overflows
  const wte = await lab.loadGPT2(smallModel({ layers: 1, fill: (key, v) => key === "wte.weight" && v.forEach((_, i) => (v[i] = i % 2 ? -3e38 : 3e38)) }));
  await assert.rejects(wte.run([3, 1, 4]), (e) => e.code === "non_finite_stage" && e.slot === "logits" && /^logits = ln_f\(x\)\[-1\] @ wte\^T is the first stage/.test(e.message) && /token id 0/.test(e.message) && /scale them down/.test(e.hint));
  wte.dispose();
  // an overflow in block 0's MLP: named there, not as block 1's input "token 0"
  const mlp = await lab.loadGPT2(smallModel({ fill: (key, v) => (key === "h.0.mlp.c_proj.weight" ? v.fill(3e38) : key === "h.0.mlp.c_fc.bias" && v.fill(10)) }));
  await assert.rejects(mlp.run([3, 1, 4]), (e) => e.code === "non_finite_stage" && e.slot === "mlp_c_proj" && /block 0 \(h\.0\)/.test(e.message) && /token 0, column 0/.test(e.message));
  // a second run refuses the same way (nothing left half-done), and the code is documented for run
  await assert.rejects(mlp.run([3, 1, 4]), { code: "non_finite_stage" });
  mlp.dispose();
  const dts = readFileSync(new URL("../../web/lib/attention-lab.d.ts", import.meta.url), "utf8");
  const runDoc = dts.slice(dts.indexOf("The whole forward in eval mode"), dts.indexOf("run(tokenIds: ArrayLike<number>"));
  assert.match(runDoc, /non_finite_stage/);
});

test("a gap in the block numbers, a partial block or a second set of blocks is refused, naming the missing keys (never a shorter model)", async () => {
  const base = gpt2Tensors({ d: 8, layers: 1, vocab: 16, nCtx: 12 });
  const block = (prefix, L) => gpt2BlockShapes(8).map(([key, shape]) => [`${prefix}h.${L}.${key}`, "F32", shape]);
  const gap = [...base.slice(0, -2), ...block("", 7), ...base.slice(-2)];
  await assert.rejects(lab.loadGPT2(safetensorsFile(gap), { num_heads: 2 }), (e) => e.code === "checkpoint_missing_key" && /blocks 0, 7 but not 1, 2, 3, 4, 5, 6/.test(e.message) && /h\.1\.ln_1\.weight/.test(e.message));
  const partial = [...base.slice(0, -2), ...block("", 1).filter(([key]) => key.includes(".attn.")), ...base.slice(-2)];
  await assert.rejects(lab.loadGPT2(safetensorsFile(partial), { num_heads: 2 }), (e) => e.code === "checkpoint_missing_key" && /no h\.1\.ln_1\.weight, which the whole model needs, nor h\.1\.ln_1\.bias, h\.1\.ln_2\.weight/.test(e.message));
  const both = [...base, ...block("transformer.", 0), ...block("transformer.", 1)];
  await assert.rejects(lab.loadGPT2(safetensorsFile(both), { num_heads: 2 }), (e) => e.code === "checkpoint_bad_header" && /transformer\.h\.0, 1 beside h\.0 \(the blocks of wte\.weight's model\)/.test(e.message));
  // the same files through checkpointInput at a later layer: the same refusal
  await assert.rejects(lab.checkpointInput(safetensorsFile(gap), { tokenIds: [1], layer: 7, num_heads: 2 }), { code: "checkpoint_missing_key" });
});

/** A Blob whose reads past `from` never settle (a network drive that stopped answering). */
class Stalling extends Blob {
  #bytes;
  #from;
  constructor(bytes, from) {
    super([bytes]);
    this.#bytes = bytes;
    this.#from = from;
  }
  slice(begin, end) {
    if (begin < this.#from) return new Blob([this.#bytes.subarray(begin, end)]);
    return { arrayBuffer: () => new Promise(() => {}) };
  }
}

test("a read that never settles: aborting ends the run at once, and the next run is not busy", async () => {
  const bytes = smallModel();
  const headerEnd = 8 + Number(bytes.readBigUInt64LE(0));
  const model = await lab.loadGPT2(new Stalling(bytes, headerEnd), {});
  const controller = new AbortController();
  const running = model.run([3, 1], { signal: controller.signal });
  let settled = false;
  running.catch(() => {}).finally(() => (settled = true));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(settled, false, "the read is pending");
  controller.abort();
  await assert.rejects(running, { code: "cancelled" });
  const again = new AbortController();
  const next = model.run([3, 1], { signal: again.signal }); // reads again (and stalls again), but is not refused as busy
  again.abort();
  await assert.rejects(next, { code: "cancelled" });
  // generation reads through the same path
  const gen = new AbortController();
  const g = model.generate([3], { maxNewTokens: 1, signal: gen.signal });
  gen.abort();
  await assert.rejects(g, { code: "cancelled" });
  model.dispose();
});

test("a buffer detached after loadGPT2 rejects with checkpoint_source, not a raw TypeError", async () => {
  const copy = smallModel();
  const buffer = copy.buffer.slice(copy.byteOffset, copy.byteOffset + copy.length);
  for (const source of [buffer, new Uint8Array(buffer)]) {
    const own = source instanceof ArrayBuffer ? source.slice(0) : new Uint8Array(source.buffer.slice(0));
    const model = await lab.loadGPT2(own);
    structuredClone(own instanceof ArrayBuffer ? own : own.buffer, { transfer: [own instanceof ArrayBuffer ? own : own.buffer] });
    await assert.rejects(model.run([3, 1]), (e) => e.code === "checkpoint_source" && /detached/.test(e.message));
    model.dispose();
  }
});

test("model.run with bad options returns a rejected promise, as loadGPT2 and attentionInput do", async () => {
  const model = await lab.loadGPT2(smallModel());
  for (const options of [5, "fast", true, Symbol("s"), new Proxy({}, { ownKeys: () => { throw new Error("trap"); } })]) {
    let promise;
    assert.doesNotThrow(() => (promise = model.run([3, 1], options)));
    assert.ok(promise instanceof Promise);
    await assert.rejects(promise, (e) => e.code === "bad_options" || e.code === "unreadable_argument");
    await assert.rejects(model.attentionInput([3, 1], 0, options), (e) => e.code === "bad_options" || e.code === "unreadable_argument");
  }
  await assert.rejects(lab.loadGPT2(smallModel(), 5), { code: "bad_options" });
  model.dispose();
});
