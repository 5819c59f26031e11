// lab.checkModule(file): the .pt the page's snippet writes with torch.save (tests/fixtures/check_files,
// from tests/fixtures/generate_check_fixtures.py, the same tensors as the JSON cases of the same name)
// gives the verdict the in-memory call gives; a file without a key the check needs, or a safetensors
// file, is refused with check_file, naming the key and showing the snippet's line that writes it; a
// call is parsed as everywhere; a refused file has none of its tensors read.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab, AttentionError } from "attention-lab";

const lab = await loadAttentionLab();
const { cases } = JSON.parse(readFileSync(new URL("../fixtures/check_module_fixtures.json", import.meta.url), "utf8"));
const checkFile = (name) => readFileSync(new URL(`../fixtures/check_files/${name}`, import.meta.url));

const tensor = (t) => ({ shape: t.shape, data: Float32Array.from(t.data, (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v)) });
/** The JSON case as lab.checkModule's in-memory argument. */
function inMemory(name) {
  const c = cases.find((k) => k.name === name);
  const file = { call: c.call, stateDict: Object.fromEntries(c.state_dict.map((t) => [t.name, tensor(t)])), x: tensor(c.x), output: tensor(c.output) };
  if (c.stages) file.stages = Object.fromEntries(Object.entries(c.stages).map(([id, t]) => [id, tensor(t)]));
  if (c.seed !== undefined) file.seed = c.seed;
  return { c, file };
}
const explaining = (report) => report.causes.filter((c) => c.explains).map((c) => c.id);

/** The AttentionError the promise rejects with, as {code, slot, message, hint}. */
async function refusal(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof AttentionError, String(e));
    return { code: e.code, slot: e.slot, message: e.message, hint: e.hint };
  }
  return null;
}

const FILES = [
  ["mha_correct.pt", "MultiHeadAttention correct qkv_bias=False with stages"],
  ["mha_scale_d_out.pt", "MultiHeadAttention scale_d_out qkv_bias=False with stages"],
  ["mha_mask_discarded_no_stages.pt", "MultiHeadAttention mask_discarded qkv_bias=True"],
  ["mha_dropout_missing_seed.pt", "MultiHeadAttention dropout_missing seed=123 qkv_bias=False with stages"],
];

test("a check file gives the same verdict as the in-memory call on the same tensors", async () => {
  for (const [fileName, caseName] of FILES) {
    const { c, file } = inMemory(caseName);
    const fromFile = await lab.checkModule(checkFile(fileName));
    assert.deepEqual(fromFile, lab.checkModule(file), fileName);
    assert.equal(fromFile.agree, c.expect.agree, fileName);
    assert.equal(fromFile.firstStage, c.expect.first_stage, fileName);
    assert.deepEqual(explaining(fromFile), c.expect.explains === null ? [] : [c.expect.explains], fileName);
  }
});

test("the file's verdict names the mistake: scale_d_out at attn_weights (the scores are taken before the scaling), mask_discarded at the output without stages", async () => {
  const scaled = await lab.checkModule(checkFile("mha_scale_d_out.pt"));
  assert.deepEqual([scaled.agree, scaled.firstStage, explaining(scaled)], [false, "attn_weights", ["scale_d_out"]]);
  assert.ok(scaled.maxAbsDiff > 1e-5);
  const cause = scaled.causes.find((x) => x.id === "scale_d_out");
  assert.match(cause.fix, /keys\.shape\[-1\]\*\*0\.5/);
  const discarded = await lab.checkModule(checkFile("mha_mask_discarded_no_stages.pt"));
  assert.deepEqual([discarded.agree, discarded.firstStage, explaining(discarded)], [false, "output", ["mask_discarded"]]);
  const right = await lab.checkModule(checkFile("mha_correct.pt"));
  assert.deepEqual([right.agree, right.firstStage, explaining(right)], [true, null, []]);
  assert.ok(right.maxAbsDiff <= 1e-6, String(right.maxAbsDiff));
});

test("a file's \"seed\": 123 is the seed of the check: training mode, dropout_missing explains, at attn_weights", async () => {
  const r = await lab.checkModule(checkFile("mha_dropout_missing_seed.pt"));
  assert.deepEqual([r.agree, r.firstStage, explaining(r)], [false, "attn_weights", ["dropout_missing"]]);
  assert.deepEqual(r.notes, []);
  const { file } = inMemory("MultiHeadAttention dropout_missing seed=123 qkv_bias=False with stages");
  const { seed: _seed, ...unseeded } = file;
  assert.deepEqual(explaining(lab.checkModule(unseeded)), [], "without the seed no dropout entry is tried");
});

test("a seed saved as a string is refused with check_file naming \"seed\"; one outside lab.seedRange with the seed rule", async () => {
  const r = await refusal(lab.checkModule(checkFile("mha_seed_text.pt")));
  assert.deepEqual([r.code, r.slot], ["check_file", "seed"]);
  assert.equal(r.message, 'the check file\'s "seed" is a string, not an int');
  assert.match(r.hint, /"seed": 123 \(an int: the seed given to torch\.manual_seed right before mha\(batch\), in training mode\)/);
  const large = await refusal(lab.checkModule(checkFile("mha_seed_too_large.pt")));  // "seed": 2**60, outside lab.seedRange
  assert.deepEqual([large.code, large.slot], ["seed", "seed"]);
  assert.match(large.message, /from -9007199254740991 to 9007199254740991 \(2\*\*53 - 1\), got 1\.152921504606847e\+18/);
});

test("a Blob, an ArrayBuffer and an opened CheckpointFile give the same verdict", async () => {
  const bytes = checkFile("mha_scale_d_out.pt");
  const expected = await lab.checkModule(bytes);
  assert.deepEqual(await lab.checkModule(new Blob([bytes])), expected);
  assert.deepEqual(await lab.checkModule(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)), expected);
  const opened = await lab.openCheckpoint(bytes);
  assert.equal(opened.format, "torch");
  assert.deepEqual(await lab.checkModule(opened), expected);
  assert.deepEqual(await lab.checkModule(opened), expected, "the opened file stays usable");
  opened.dispose();
});

test("a missing output or call is refused with check_file, naming the key and showing the snippet's line", async () => {
  const noOutput = await refusal(lab.checkModule(checkFile("mha_no_output.pt")));
  assert.equal(noOutput.code, "check_file");
  assert.equal(noOutput.slot, "output");
  assert.match(noOutput.message, /no tensor "output"/);
  assert.match(noOutput.hint, /"output": context_vecs/);
  const noCall = await refusal(lab.checkModule(checkFile("mha_no_call.pt")));
  assert.equal(noCall.code, "check_file");
  assert.equal(noCall.slot, "call");
  assert.match(noCall.message, /no "call"/);
  assert.match(noCall.hint, /"call": "MultiHeadAttention\(768, 768, 1024, 0.0, 12\)"/);
});

test("a file that still holds the snippet's ... placeholders is refused with a hint to replace them", async () => {
  const r = await refusal(lab.checkModule(checkFile("mha_ellipsis.pt")));
  assert.equal(r.code, "checkpoint_pickle_global");
  assert.match(r.message, /holds a \.\.\. \(Ellipsis\) where a tensor belongs/);
  assert.match(r.hint, /^Replace each \.\.\. with your tensor, or delete that line/);
});

test("a call whose sizes do not fit x says the call is the reader's own to fix", () => {
  const { file } = inMemory("MultiHeadAttention correct qkv_bias=False with stages");
  let e = null;
  try {
    lab.checkModule({ ...file, call: "MultiHeadAttention(768, 768, 1024, 0.0, 12)" });
  } catch (err) {
    e = err;
  }
  assert.ok(e instanceof AttentionError);
  assert.match(e.message, /\(the call checked is MultiHeadAttention\(768, 768, 1024, 0\.0, 12\), as the check gives it\)$/);
  assert.match(e.hint, /the call must be your module's own, with the numbers it was built with\.$/);
});

test("a safetensors file is not a check file: check_file with the snippet in the hint", async () => {
  const r = await refusal(lab.checkModule(readFileSync(new URL("../fixtures/checkpoints/gpt2_d4_h2.safetensors", import.meta.url))));
  assert.equal(r.code, "check_file");
  assert.equal(r.slot, "file");
  assert.match(r.message, /safetensors file, not a check file/);
  assert.match(r.hint, /torch\.save\(\{"call": /);
});

test("a file's damage is refused with openCheckpoint's codes, as a rejected promise", async () => {
  const cut = checkFile("mha_correct.pt").subarray(0, 3000);
  const r = await refusal(lab.checkModule(cut));
  assert.ok(r !== null && r.code.startsWith("checkpoint_"), JSON.stringify(r));
  const detached = new ArrayBuffer(8);
  structuredClone(detached, { transfer: [detached] });
  assert.equal((await refusal(lab.checkModule(detached))).code, "checkpoint_source");
});

test("the file's call is parsed as everywhere: its first error diagnostic, as the in-memory call gives it", async () => {
  const { file } = inMemory("MultiHeadAttention correct qkv_bias=False with stages");
  let expected = null;
  try {
    lab.checkModule({ ...file, call: "MultiHeadAttention(4, 4, 6, 0.0, 3, qkv_bias=False)" });
  } catch (e) {
    expected = { code: e.code, slot: e.slot, message: e.message, hint: e.hint };
  }
  assert.deepEqual([expected?.code, expected?.slot], ["heads_divisibility", "d_out"]);
  assert.deepEqual(await refusal(lab.checkModule(checkFile("mha_bad_call.pt"))), expected);
});

/** A Blob that records the byte ranges read from it (File.slice, as the page's file input gives). */
class CountingBlob extends Blob {
  reads = [];
  slice(begin, end) {
    this.reads.push([begin, end]);
    return super.slice(begin, end);
  }
}

test("keys, call and estimate are checked from the file's records: a refused file has no tensor read, a checked one each tensor once", async () => {
  const opening = async (name) => {
    const blob = new CountingBlob([checkFile(name)]);
    (await lab.openCheckpoint(blob)).dispose();
    return blob.reads;
  };
  for (const name of ["mha_no_output.pt", "mha_no_call.pt", "mha_bad_call.pt", "mha_seed_text.pt", "mha_seed_too_large.pt"]) {
    const blob = new CountingBlob([checkFile(name)]);
    assert.notEqual(await refusal(lab.checkModule(blob)), null, name);
    assert.deepEqual(blob.reads, await opening(name), name);
  }
  const blob = new CountingBlob([checkFile("mha_correct.pt")]);
  await lab.checkModule(blob);
  const opened = await opening("mha_correct.pt");
  assert.deepEqual(blob.reads.slice(0, opened.length), opened);
  assert.equal(blob.reads.length - opened.length, 6 + 2 + 3, "the state dict's 6 tensors (mask included), x, output and the 3 stages");
});
