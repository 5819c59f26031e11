// "The same in PyTorch": the checkpoint panel's code for a layer of a whole GPT-2 file, run in PyTorch
// when the fixtures were made (tests/fixtures/generate_code_panels.py), gives the numbers the library
// gives; the page's own code panel is checked the same way in tests/browser/code-export.test.mjs.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadAttentionLab } from "attention-lab";
import { CHECKPOINT_CASES, checkpointCase, codePanelFixtures } from "../code-panels.mjs";

const lab = await loadAttentionLab();
const fixtures = codePanelFixtures();

test("the fixtures hold every case of tests/code-panels.mjs with PyTorch's context_vecs", () => {
  assert.deepEqual(fixtures.checkpoint.map((c) => c.name), CHECKPOINT_CASES.map((c) => c.name));
  for (const c of [...fixtures.page, ...fixtures.checkpoint]) assert.ok(c.context_vecs.data.length > 0, c.name);
});

for (const c of CHECKPOINT_CASES) {
  test(`checkpoint panel, ${c.file} layer ${c.layer}: the code PyTorch ran is the code the panel makes now, and its numbers are the library's (1e-5 + 1e-4 relative)`, async () => {
    const want = fixtures.checkpoint.find((f) => f.name === c.name);
    const got = await checkpointCase(lab, c);
    assert.equal(got.code, want.code);
    assert.deepEqual(got.output.shape, want.context_vecs.shape);
    let worst = 0;
    want.context_vecs.data.forEach((v, i) => { worst = Math.max(worst, Math.abs(got.output.data[i] - v) - 1e-4 * Math.abs(v)); });
    assert.ok(worst <= 1e-5, `${c.name}: off by ${worst}`);
  });
}

test("a later layer's code runs the blocks before it (layer 1: block 0), a first layer's does not", () => {
  const [first, later] = ["tiny_layer0", "tiny_layer1"].map((name) => fixtures.checkpoint.find((f) => f.name === name).code);
  assert.doesNotMatch(first, /def block/);
  assert.match(later, /# Layer 1 sees what block 0 leaves/);
  assert.match(later, /for i in range\(1\):\n {8}x = block\(x, f"h\.\{i\}\."\)\nx = torch\.nn\.functional\.layer_norm\(x, \(d,\), sd\["h\.1\.ln_1\.weight"\]/);
  // and the two layers' outputs differ: the check above could not pass with layer 0's input
  assert.notDeepEqual(fixtures.checkpoint[0].context_vecs.data, fixtures.checkpoint[1].context_vecs.data);
});
