// lab.checkModule over the real WASM core on readers' modules of the lab's other classes
// (tests/fixtures/check_readers.py): for each class, the causes are exactly the catalogue entries that
// apply to it, the one written into the module explains and no other, at the first divergent stage;
// the correct module agrees; a mistake outside the catalogue disagrees with no cause claimed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";

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
