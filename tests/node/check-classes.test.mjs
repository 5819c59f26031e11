// lab.checkModule over the real WASM core on readers' modules of the lab's other classes
// (tests/fixtures/check_readers.py): for each class, the causes are exactly the catalogue entries that
// apply to it, the one written into the module explains and no other, at the first divergent stage;
// the correct module agrees; a mistake outside the catalogue disagrees with no cause claimed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab, AttentionError } from "attention-lab";

const lab = await loadAttentionLab();
const { cases } = JSON.parse(readFileSync(new URL("../fixtures/check_module_fixtures.json", import.meta.url), "utf8"));

const tensor = (t) => ({ shape: t.shape, data: Float32Array.from(t.data, (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v)) });
function fileOf(c) {
  const file = { call: c.call, stateDict: Object.fromEntries(c.state_dict.map((t) => [t.name, tensor(t)])), x: tensor(c.x), output: tensor(c.output) };
  if (c.stages) file.stages = Object.fromEntries(Object.entries(c.stages).map(([id, t]) => [id, tensor(t)]));
  return file;
}
const explaining = (report) => report.causes.filter((c) => c.explains).map((c) => c.id);

/** Every case of the class checked against its expectations; the counts of each kind. */
function checkClass(className) {
  const mine = cases.filter((c) => c.call.startsWith(`${className}(`));
  const counts = { explained: 0, agreeing: 0, outside: 0 };
  for (const c of mine) {
    const r = lab.checkModule(fileOf(c));
    assert.deepEqual(r.causes.map((x) => x.id), c.expect.causes, c.name);
    assert.equal(r.agree, c.expect.agree, c.name);
    assert.equal(r.firstStage, c.expect.first_stage, c.name);
    if (c.expect.explains !== null) {
      assert.deepEqual(explaining(r), [c.expect.explains], c.name);
      assert.ok(r.maxAbsDiff > 1e-5, c.name);
      counts.explained++;
    } else {
      assert.deepEqual(explaining(r), [], c.name);
      if (c.expect.agree) assert.ok(r.maxAbsDiff <= 1e-5, `${c.name}: ${r.maxAbsDiff}`);
      counts[c.expect.agree ? "agreeing" : "outside"]++;
    }
  }
  return counts;
}

// class -> the catalogue entries that apply to it (what its reader modules write, two configurations each)
const CLASSES = {
  SelfAttention_v1: ["no_scale", "scale_after_softmax", "softmax_dim", "query_from_key"],
  SelfAttention_v2: ["no_scale", "scale_after_softmax", "softmax_dim", "query_from_key", "linear_no_transpose"],
  MultiHeadAttentionWrapper: ["no_scale", "scale_after_softmax", "mask_diagonal", "mask_discarded", "softmax_dim", "query_from_key", "linear_no_transpose"],
  MultiHeadAttentionCombinedQKV: ["scale_d_out", "no_scale", "scale_after_softmax", "mask_diagonal", "mask_discarded", "softmax_dim", "merge_view_no_transpose", "missing_out_proj"],
  MHAEinsum: ["scale_d_out", "no_scale", "scale_after_softmax", "mask_diagonal", "mask_discarded", "softmax_dim", "heads_view_no_transpose", "merge_view_no_transpose",
    "query_from_key", "missing_out_proj"],
  GroupedQueryAttention: ["scale_d_out", "no_scale", "scale_after_softmax", "mask_diagonal", "mask_discarded", "softmax_dim", "heads_view_no_transpose", "merge_view_no_transpose",
    "missing_out_proj"],
  MHAPyTorchScaledDotProduct: ["merge_view_no_transpose", "missing_out_proj", "mask_not_passed"],
};

for (const [className, applies] of Object.entries(CLASSES)) {
  test(`${className}: exactly its catalogue entries, each written mistake the one that explains, the correct module agreeing`, () => {
    const correct = cases.find((c) => c.call.startsWith(`${className}(`) && c.mistake === null);
    assert.deepEqual(correct.expect.causes, applies);
    assert.deepEqual(checkClass(className), { explained: 2 * applies.length, agreeing: 2, outside: 2 });
  });
}

test("the wrapper's state dict is checked under its own names (heads.0.W_query.weight), with their copy rules", () => {
  const c = cases.find((x) => x.name === "MultiHeadAttentionWrapper correct qkv_bias=True");
  const good = fileOf(c);
  const refusal = (stateDict) => {
    try {
      lab.checkModule({ ...good, stateDict });
    } catch (e) {
      assert.ok(e instanceof AttentionError, String(e));
      return { code: e.code, slot: e.slot, message: e.message, hint: e.hint };
    }
    return null;
  };
  const { "heads.1.W_key.weight": key, ...rest } = good.stateDict;
  const missing = refusal(rest);
  assert.deepEqual([missing.code, missing.slot], ["missing_parameter", "heads.1.W_key.weight"]);
  assert.match(missing.message, /heads\.1\.W_key\.weight \(4, 4\) is not in the state dict/);
  const typo = refusal({ ...rest, "heads.1.W_kye.weight": key });
  assert.deepEqual([typo.code, typo.slot, typo.hint], ["unknown_parameter", "heads.1.W_kye.weight", "Did you mean heads.1.W_key.weight?"]);
  const { "heads.0.W_value.weight": value, ...noValue } = good.stateDict;
  const matrix = refusal({ ...noValue, "heads.0.W_value": value });
  assert.deepEqual([matrix.code, matrix.slot], ["unknown_parameter", "heads.0.W_value"]);
  assert.equal(matrix.hint, 'Copy it transposed: state_dict["heads.0.W_value.weight"] = state_dict.pop("heads.0.W_value").T');
  const { "heads.0.W_query.weight": query, ...noQuery } = good.stateDict;
  const fused = refusal({ ...noQuery, "W_query.weight": query });
  assert.deepEqual([fused.code, fused.slot], ["unknown_parameter", "W_query.weight"]);
  assert.match(fused.message, /\(it keeps each head's under heads\.<h>\.: heads\.0\.W_query\.weight, \.\.\.;/);
  assert.equal(fused.hint, "Save the state dict of a module built with this call, or check it with the call of the class that saved it.");
  const mask = refusal({ ...good.stateDict, "heads.1.mask": { shape: [4, 4], data: new Float32Array(16) } });
  assert.deepEqual([mask.code, mask.slot], ["mask_buffer", "heads.1.mask"]);
});
