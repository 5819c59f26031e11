// GPT-2 safetensors checkpoints through the public API (Blob, File, ArrayBuffer sources).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab, AttentionError } from "attention-lab";
import { tensor, maxAbsDiff, sameBits } from "./helpers.mjs";
import { gpt2Tensors, layer0Shapes, safetensors, safetensorsFile, safetensorsHeader } from "../safetensors.mjs";

const lab = await loadAttentionLab();
const dir = new URL("../fixtures/checkpoints/", import.meta.url);
const bytes = (name) => readFileSync(new URL(name, dir));
const expected = JSON.parse(readFileSync(new URL("expected.json", dir), "utf8"));

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof AttentionError, `not an AttentionError: ${e}`);
    return e;
  }
  assert.fail("expected a rejection");
}

for (const c of expected.cases) {
  test(`${c.file} layer ${c.layer}: loads into MultiHeadAttention and matches PyTorch within 1e-6`, async () => {
    const file = new File([bytes(c.file)], c.file);
    const { module, report } = await lab.loadCheckpoint(file, { layer: c.layer, num_heads: c.num_heads });
    assert.equal(module.className, "MultiHeadAttention");
    assert.deepEqual(module.config, { d_in: c.d, d_out: c.d, context_length: c.context_length, dropout: 0, num_heads: c.num_heads, qkv_bias: true });
    module.parameters().forEach((p, i) => {
      assert.equal(p.name, c.parameters[i].name);
      assert.ok(sameBits(p.data, tensor(c.parameters[i]).data), p.name);
    });
    const { output } = module.forward(tensor(c.input), { training: false });
    assert.ok(maxAbsDiff(output, tensor(c.output)) <= 1e-6);
    // A split with the heads before q/k/v (the wrong order) gives another output: not what the loader does.
    assert.ok(maxAbsDiff(output, tensor(c.wrong_split_output)) > 1e-3);
    const base = `${c.prefix}h.${c.layer}.attn.`;
    assert.deepEqual(report.used, [`${base}c_attn.weight`, `${base}c_attn.bias`, `${base}c_proj.weight`, `${base}c_proj.bias`]);
    assert.deepEqual(report.transposed, [`${base}c_attn.weight`, `${base}c_proj.weight`]);
    const ignoredMask = report.ignored.find((i) => i.key === `${base}bias`);
    assert.match(ignoredMask.reason, /causal mask buffer.*not the q\/k\/v bias/);
    assert.ok(report.ignored.some((i) => i.key === `${base}masked_bias`));
    assert.match(report.sources.context_length, /wpe\.weight rows/);
    assert.equal(report.sources.layers, "layers 0 to 1 (2 layers)");
    assert.equal(report.maxLayer, 1);
    assert.equal(report.ignoredCount, report.ignored.length, "a small file lists every ignored key");
    assert.match(report.sources.vocab, /wte\.weight rows \((10|12) tokens\)/);
    assert.equal(report.gpt2Vocab, false, "10 or 12 tokens: not GPT-2's vocabulary");
  });
}

test("report.gpt2Vocab: wte.weight with GPT-2's 50,257 rows (the page then tokenizes the sentence with GPT-2's BPE); other counts or no wte: false", async () => {
  const rows = async (vocab) => {
    const shapes = { ...layer0Shapes(4) };
    if (vocab === null) delete shapes["wte.weight"];
    else shapes["wte.weight"] = [vocab, 4];
    return (await lab.loadCheckpoint(safetensors(shapes), { num_heads: 2 })).report.gpt2Vocab;
  };
  assert.equal(await rows(50257), true);
  assert.equal(await rows(50256), false);
  assert.equal(await rows(null), false);
});

test("each source kind (ArrayBuffer, Uint8Array, Blob) loads the same weights, and only the needed slices are read", async () => {
  const raw = bytes("gpt2_d4_h2.safetensors");
  const fromBuffer = await lab.loadCheckpoint(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length), { num_heads: 2 });
  const fromView = await lab.loadCheckpoint(new Uint8Array(raw), { num_heads: 2 });
  let read = 0;
  const blob = new Blob([raw]);
  const spy = new Proxy(blob, {
    get(target, prop) {
      if (prop === "slice") return (b, e) => { read += e - b; return target.slice(b, e); };
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  Object.setPrototypeOf(spy, Blob.prototype);
  const fromBlob = await lab.loadCheckpoint(spy, { num_heads: 2 });
  const a = fromBuffer.module.parameters()[0].data;
  assert.ok(sameBits(a, fromView.module.parameters()[0].data));
  assert.ok(sameBits(a, fromBlob.module.parameters()[0].data));
  const info = expected.files["gpt2_d4_h2.safetensors"];
  // 8 + header + c_attn (4x12) + bias (12) + c_proj (4x4) + bias (4), float32
  assert.equal(read, 8 + info.header_length + 4 * (48 + 12 + 16 + 4));
  assert.ok(read < raw.length);
});

test("loading into a module with qkv_bias=False is a clear error naming the bias keys", async () => {
  const target = lab.create("MultiHeadAttention", { d_in: 8, d_out: 8, context_length: 16, dropout: 0.0, num_heads: 4 });
  const before = target.parameters()[0].data;
  const e = await rejection(lab.loadCheckpoint(new Blob([bytes("gpt2_d8_h4_prefix.safetensors")]), { layer: 1, into: target }));
  assert.equal(e.code, "checkpoint_config_mismatch");
  assert.equal(e.slot, "qkv_bias");
  assert.match(e.message, /transformer\.h\.1\.attn\.c_attn\.bias/);
  assert.match(e.hint, /qkv_bias=True/);
  assert.ok(sameBits(target.parameters()[0].data, before), "no partial load");
  const withBias = lab.create("MultiHeadAttention", { d_in: 8, d_out: 8, context_length: 16, dropout: 0.0, num_heads: 4, qkv_bias: true });
  const { module, report } = await lab.loadCheckpoint(new Blob([bytes("gpt2_d8_h4_prefix.safetensors")]), { layer: 1, into: withBias });
  assert.equal(module, withBias);
  assert.match(report.sources.num_heads, /target module/);
  const c = expected.cases.find((c) => c.file === "gpt2_d8_h4_prefix.safetensors");
  assert.ok(sameBits(withBias.parameters()[0].data, tensor(c.parameters[0]).data));
  const wrongWidth = lab.create("MultiHeadAttention", { d_in: 4, d_out: 4, context_length: 16, dropout: 0.0, num_heads: 4, qkv_bias: true });
  assert.equal((await rejection(lab.loadCheckpoint(bytes("gpt2_d8_h4_prefix.safetensors"), { layer: 1, into: wrongWidth }))).code, "checkpoint_config_mismatch");
});

test("truncated, lying and non-safetensors files are clear errors; the library keeps working", async () => {
  assert.equal((await rejection(lab.loadCheckpoint(new Blob([bytes("truncated.safetensors")]), { num_heads: 4 }))).code, "checkpoint_truncated");
  assert.equal((await rejection(lab.loadCheckpoint(new Blob([bytes("lying_offsets.safetensors")]), { num_heads: 2 }))).code, "checkpoint_bad_offsets");
  assert.equal((await rejection(lab.loadCheckpoint(new Blob([bytes("bad_header.safetensors")])))).code, "checkpoint_bad_header");
  assert.equal((await rejection(lab.loadCheckpoint(new Blob([bytes("not_json.safetensors")])))).code, "checkpoint_bad_header");
  assert.equal((await rejection(lab.loadCheckpoint(new Blob([new Uint8Array(3)])))).code, "checkpoint_truncated");
  assert.equal((await rejection(lab.loadCheckpoint("model.safetensors"))).code, "checkpoint_source");
  assert.equal((await rejection(lab.loadCheckpoint(bytes("gpt2_d4_h2.safetensors")))).code, "checkpoint_num_heads");
  assert.equal((await rejection(lab.loadCheckpoint(bytes("gpt2_d4_h2.safetensors"), { num_heads: 2, layer: 5 }))).code, "checkpoint_layer");
  const after = await lab.loadCheckpoint(bytes("gpt2_d4_h2.safetensors"), { num_heads: 2 });
  assert.equal(after.module.outputWidth, 4);
});

test("context_length from the option when the file has neither wpe nor a mask buffer", async () => {
  const raw = bytes("gpt2_d8_nowpe_nomask.safetensors");
  assert.equal((await rejection(lab.loadCheckpoint(raw, { num_heads: 4 }))).code, "checkpoint_context_length");
  const { module, report } = await lab.loadCheckpoint(raw, { num_heads: 4, context_length: 32 });
  assert.equal(module.config.context_length, 32);
  assert.match(report.sources.context_length, /option/);
});

test("checkpointInput: layer 0's input ln_1(wte[ids] + wpe[:T]) matches PyTorch from a file of attention layers alone; a later layer needs the whole model", async () => {
  for (const c of expected.block_inputs) {
    const file = new Blob([bytes(c.file)]);
    const x = await lab.checkpointInput(file, { tokenIds: c.token_ids, layer: c.layer });
    assert.ok(maxAbsDiff(x, tensor(c.output)) <= 1e-6, c.file);
  }
  const raw = bytes("gpt2_d4_h2.safetensors");
  const x = await lab.checkpointInput(raw, { tokenIds: [3, 1, 4] });
  const { module } = await lab.loadCheckpoint(raw, { num_heads: 2 });
  assert.deepEqual(module.forward(x, { training: false }).output.shape, [1, 3, 4]);
  // layer 1's real input is what block 0 leaves: this file has no MLP, so it cannot say (tests/node/gpt2.test.mjs has whole models)
  const e = await rejection(lab.checkpointInput(raw, { tokenIds: [3, 1, 4], layer: 1, num_heads: 2 }));
  assert.equal(e.code, "checkpoint_missing_key");
  assert.match(e.message, /h\.0\.ln_2\.weight, which the whole model needs/);
  assert.equal((await rejection(lab.checkpointInput(raw, { tokenIds: [10] }))).code, "checkpoint_token");
  assert.equal((await rejection(lab.checkpointInput(raw, { tokenIds: [] }))).code, "input_empty");
  assert.equal((await rejection(lab.checkpointInput(raw, { tokenIds: [1.5] }))).code, "checkpoint_token");
  // each id that is no id gets its own true message (none of them "token id -1 is outside the vocabulary")
  const refusal = async (tokenIds) => {
    const e = await rejection(lab.checkpointInput(raw, { tokenIds }));
    return `${e.code}: ${e.message}`;
  };
  assert.equal(await refusal([3, 1.5]), "checkpoint_token: token 1 is 1.5, not a whole number");
  assert.equal(await refusal([NaN]), "checkpoint_token: token 0 is NaN, not a number");
  assert.equal(await refusal([3, "1"]), "checkpoint_token: token 1 is \"1\", not a number");
  assert.equal(await refusal(new Array(100001).fill(1)), "too_large: more than 100,000 token ids");
  assert.equal(await refusal([10]), "checkpoint_token: token id 10 is outside the vocabulary (0 to 9)");
});

test("the bad-file table: each file the format refuses (duplicate keys, NUL padding, holes, ...) is a coded AttentionError naming the key or byte", async () => {
  assert.ok(Object.keys(expected.bad_files).length >= 12);
  for (const [name, row] of Object.entries(expected.bad_files)) {
    for (const source of [new Blob([bytes(name)]), bytes(name)]) {
      const e = await rejection(lab.loadCheckpoint(source, row.options));
      assert.equal(e.code, row.code, `${name}: ${e.message}`);
      for (const m of row.mentions) assert.ok(e.message.includes(m), `${name}: '${m}' not in "${e.message}"`);
    }
  }
  // checkpointInput reads the same header and refuses the same files
  assert.equal((await rejection(lab.checkpointInput(bytes("duplicate_key.safetensors"), { tokenIds: [1, 2] }))).code, "checkpoint_duplicate_key");
  // tab, CR and LF padding loads exactly as the space-padded file
  const a = (await lab.loadCheckpoint(bytes("whitespace_padded.safetensors"), { num_heads: 2 })).module.parameters();
  const b = (await lab.loadCheckpoint(bytes("gpt2_d4_h2.safetensors"), { num_heads: 2 })).module.parameters();
  a.forEach((p, i) => assert.ok(sameBits(p.data, b[i].data), p.name));
});

test("a sparse 0.8 GB BF16 checkpoint of width 10048 is refused (too_large) before any tensor is read; WASM heap stays small", async () => {
  const { mkdtemp, open, rm } = await import("node:fs/promises");
  const { openAsBlob } = await import("node:fs");
  const os = await import("node:os");
  const path = await import("node:path");
  const w = 10048;
  const { head, dataBytes } = safetensorsHeader([["h.0.attn.c_attn.weight", "BF16", [w, 3 * w]], ["h.0.attn.c_attn.bias", "BF16", [3 * w]], ["h.0.attn.c_proj.weight", "BF16", [w, w]], ["h.0.attn.c_proj.bias", "BF16", [w]], ["wpe.weight", "BF16", [1024, w]]]);
  const dir = await mkdtemp(path.join(os.tmpdir(), "attention-lab-sparse-"));
  const file = path.join(dir, "wide.safetensors");
  const fh = await open(file, "w");
  await fh.write(head, 0, head.length, 0);
  await fh.truncate(head.length + dataBytes); // sparse: nothing of the 0.8 GB is written
  await fh.close();
  try {
    const blob = await openAsBlob(file);
    assert.ok(blob.size > 800e6);
    const before = lab.heapPeak();
    const e = await rejection(lab.loadCheckpoint(blob, { num_heads: 16 }));
    assert.equal(e.code, "too_large");
    assert.match(e.message, /MiB/);
    assert.ok(lab.heapPeak() - before < 16 * 1048576, `WASM heap grew by ${lab.heapPeak() - before} bytes`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("wpe.weight of shape [2**40, 0] would give context_length 2**40: refused as create refuses it, naming where it came from", async () => {
  const tensors = [["h.0.attn.c_attn.weight", "F32", [4, 12]], ["h.0.attn.c_attn.bias", "F32", [12]], ["h.0.attn.c_proj.weight", "F32", [4, 4]], ["h.0.attn.c_proj.bias", "F32", [4]], ["wpe.weight", "F32", [2 ** 40, 0]]];
  const { head, dataBytes } = safetensorsHeader(tensors);
  const file = Buffer.concat([head, Buffer.alloc(dataBytes)]);
  const e = await rejection(lab.loadCheckpoint(file, { num_heads: 2 }));
  assert.equal(e.code, "too_large");
  assert.equal(e.slot, "context_length");
  assert.match(e.message, /wpe\.weight rows \(1099511627776\)/);
  assert.equal(lab.check("MultiHeadAttention", { d_in: 4, d_out: 4, context_length: 2 ** 40, dropout: 0, num_heads: 2, qkv_bias: true })[0].code, "too_large");
});

test("a report lists the first 200 ignored keys in the header's order and counts the rest", async () => {
  const { report } = await lab.loadCheckpoint(new Uint8Array(safetensors(layer0Shapes(4), { extraKeys: 300, extraName: (i) => `extra.${String(i).padStart(3, "0")}` })), { num_heads: 2 });
  // ln_1 (2), wpe, wte and the 300 extra keys are ignored; ln_1's two and wte/wpe sort after "extra.".
  assert.equal(report.ignoredCount, 304);
  assert.equal(report.ignored.length, 200);
  assert.deepEqual(report.ignored.slice(0, 2).map((i) => i.key), ["extra.000", "extra.001"]);
  assert.equal(report.ignored.at(-1).key, "extra.199");
  assert.equal(report.ignored[0].reason, "not part of attention");
  assert.equal(report.maxLayer, 0);
});

test("checkpointInput at layer 0 refuses what run refuses: NaN in a row read, F64 weights; an aborted signal reads nothing", async () => {
  const tensors = gpt2Tensors({ d: 8, layers: 1, vocab: 16, nCtx: 12 });
  const nan = safetensorsFile(tensors, { fill: (key, v) => key === "wte.weight" && (v[3 * 8 + 5] = NaN), metadata: { n_head: "2" } });
  const e0 = await rejection(lab.checkpointInput(nan, { tokenIds: [3, 1], layer: 0 }));
  assert.equal(e0.code, "non_finite_parameter");
  assert.match(e0.message, /wte\.weight\[3\]/);
  // the whole model says the same of the same file
  const model = await lab.loadGPT2(nan);
  assert.equal((await rejection(model.run([3, 1]))).code, "non_finite_parameter");
  model.dispose();
  // a row that is fine is fine: the NaN is only where it is
  assert.deepEqual((await lab.checkpointInput(nan, { tokenIds: [1, 2], layer: 0 })).shape, [1, 2, 8]);
  // F64: refused by layer 0 as by the whole model (checkpoint_dtype)
  const f64 = safetensorsFile(tensors.map(([key, , shape]) => [key, "F64", shape]), { metadata: { n_head: "2" } });
  assert.equal((await rejection(lab.checkpointInput(f64, { tokenIds: [3], layer: 0 }))).code, "checkpoint_dtype");
  assert.equal((await rejection(lab.loadGPT2(f64))).code, "checkpoint_dtype");
  // an already-aborted signal: cancelled before any tensor is read
  let reads = 0;
  const counted = new (class extends Blob {
    slice(begin, end) {
      if (begin >= 8) reads++;
      return super.slice(begin, end);
    }
  })([nan]);
  assert.equal((await rejection(lab.checkpointInput(counted, { tokenIds: [1], layer: 0, signal: AbortSignal.abort() }))).code, "cancelled");
  assert.equal(reads, 0);
  const file = await lab.openCheckpoint(nan);
  assert.equal((await rejection(lab.checkpointInput(file, { tokenIds: [1], layer: 0, signal: AbortSignal.abort() }))).code, "cancelled");
  file.dispose();
});

test("loadCheckpoint reads __metadata__ n_head as loadGPT2 does (one rule in the core), and says where it came from", async () => {
  const tensors = gpt2Tensors({ d: 8, layers: 1, vocab: 16, nCtx: 12 });
  const file = safetensorsFile(tensors, { metadata: { n_head: "4" } });
  const { module, report } = await lab.loadCheckpoint(file);
  assert.equal(module.config.num_heads, 4);
  assert.match(report.sources.num_heads, /__metadata__ n_head \(4\)/);
  const model = await lab.loadGPT2(file);
  assert.equal(model.config.n_head, module.config.num_heads);
  model.dispose();
  // the option wins over the file, for both
  assert.equal((await lab.loadCheckpoint(file, { num_heads: 2 })).module.config.num_heads, 2);
  // a metadata value that is not a whole number is refused by both, naming it
  const bad = safetensorsFile(tensors, { metadata: { n_head: "four" } });
  for (const p of [lab.loadCheckpoint(bad), lab.loadGPT2(bad)]) {
    const e = await rejection(p);
    assert.equal(e.code, "checkpoint_num_heads");
    assert.match(e.message, /__metadata__ n_head is "four"/);
  }
});
