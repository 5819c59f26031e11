// "The same in PyTorch": the checkpoint panel's code for a layer of a whole GPT-2 file, run in PyTorch
// when the fixtures were made (tests/fixtures/generate_code_panels.py), gives the numbers the library
// gives; the page's own code panel is checked the same way in tests/browser/code-export.test.mjs.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadAttentionLab } from "attention-lab";
import { CHECK_CASES, CHECKPOINT_CASES, checkConfirmCase, checkConfirmFixtures, checkpointCase, codePanelFixtures, printedNumber } from "../code-panels.mjs";

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

test("weightsAgreement compares a traced layer's attention weights with the whole model's first tokens, per head", async () => {
  const { weightsAgreement } = await import("../../web/app/checkpoint-code.js");
  const H = 2, T = 3, F = 2;
  const data = Float32Array.from({ length: H * T * T }, (_, i) => i / 100);
  const trace = [{ id: "attn_weights", shape: [1, H, T, T], data }];
  const first = { shape: [1, H, F, F], data: new Float32Array(H * F * F) };
  for (let k = 0; k < H; k++) for (let i = 0; i < F; i++) for (let j = 0; j < F; j++) first.data[(k * F + i) * F + j] = data[(k * T + i) * T + j];
  assert.deepEqual(weightsAgreement(trace, first), { maxDiff: 0, heads: 2, tokens: 2 });
  first.data[(1 * F + 1) * F + 0] += 0.25;  // head 1, query 1, key 0
  assert.ok(Math.abs(weightsAgreement(trace, first).maxDiff - 0.25) < 1e-6);
  assert.equal(weightsAgreement(trace, { shape: [1, 3, F, F], data: new Float32Array(3 * F * F) }), null, "another head count");
  assert.equal(weightsAgreement([{ id: "output", shape: [1, 3, 8], data: new Float32Array(24) }], first), null, "no attn_weights stage");
});

// "Check your own module": the code under a verdict, run in PyTorch on the case's check file
// (tests/fixtures/generate_check_confirm.py), prints the page's largest difference and the two rows the
// page shows side by side, and, for the cause that explains, True once the line is the book's.
const confirm = checkConfirmFixtures();
const printedTensor = (line) => (/tensor\(\[([^\]]*)\]/.exec(line)?.[1] ?? "").split(",").map((v) => Number(v.trim().replace("inf", "Infinity")));

test("the fixtures hold every check case of tests/code-panels.mjs with what PyTorch printed", () => {
  assert.deepEqual(confirm.cases.map((c) => c.name), CHECK_CASES);
  for (const c of confirm.cases) assert.ok(c.printed.length >= 1, c.name);
});

for (const name of CHECK_CASES) {
  test(`check panel, ${name}: the confirm code PyTorch ran is the code the page makes now, and it printed the page's numbers`, async () => {
    const want = confirm.cases.find((c) => c.name === name);
    const { report, code } = await checkConfirmCase(lab, name);
    assert.equal(code, want.code);
    const [maxLine, ...rest] = want.printed;
    const printedMax = printedNumber([maxLine]);
    assert.ok(Math.abs(printedMax - report.maxAbsDiff) <= 1e-4 * (1 + report.maxAbsDiff) || (Number.isNaN(printedMax) && !Number.isFinite(report.maxAbsDiff)), `${maxLine} vs ${report.maxAbsDiff}`);
    const d = report.difference;
    if (d.stage === "output") {
      const [yours, book] = rest.slice(0, 2).map(printedTensor);
      assert.equal(yours.length, d.yours.length);
      yours.forEach((v, k) => assert.ok(Object.is(v, d.yours[k]) || Math.abs(v - d.yours[k]) <= 1e-4, `yours[${k}] ${v} vs ${d.yours[k]}`));
      book.forEach((v, k) => assert.ok(Math.abs(v - d.book[k]) <= 1e-4, `book[${k}] ${v} vs ${d.book[k]}`));
    }
    if (report.causes.some((c) => c.explains)) assert.equal(want.printed.at(-1), "True");
    else assert.doesNotMatch(code, /allclose/);
  });
}
