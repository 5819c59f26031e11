// The acceptance checks, in order: exercise 3.2 pasted and run, the same numbers as the
// fused class, GPT-2 XL with 48 heads, a locked embed beside a second widget, and .npy export.
// (The sixth, screenshots at desktop and phone sizes, is layout.test.mjs.)
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { loadAttentionLab } from "../../web/lib/attention-lab.js";
import { afterRun, finish, launchLab, openPage, pasteCall, runPreset } from "./helpers.mjs";

/** A minimal .npy (format 1.0/2.0) reader: {descr, fortranOrder, shape, data: Float32Array}. */
export function readNpy(bytes) {
  const magic = String.fromCharCode(...bytes.subarray(1, 6));
  assert.equal(bytes[0], 0x93);
  assert.equal(magic, "NUMPY");
  const major = bytes[6];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder("latin1").decode(bytes.subarray(start, start + headerLength));
  assert.equal((start + headerLength) % 64, 0, "numpy aligns the data to 64 bytes");
  assert.ok(header.endsWith("\n"));
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const fortranOrder = /'fortran_order':\s*(True|False)/.exec(header)[1] === "True";
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(",").map((s) => s.trim()).filter(Boolean).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(count);
  const body = new DataView(bytes.buffer, bytes.byteOffset + start + headerLength, count * 4);
  for (let i = 0; i < count; i++) data[i] = body.getFloat32(i * 4, true);
  return { descr, fortranOrder, shape, data };
}

describe("acceptance", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("1. pasting MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2) names each value, shows width 2 with its rule, and runs to (2, 6, 2)", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    const named = await page.getByTestId("named-values").locator("li").evaluateAll((lis) =>
      lis.map((li) => [li.dataset.name, li.dataset.position, li.querySelector(".named-value").textContent, li.dataset.source]));
    assert.deepEqual(named, [
      ["d_in", "1", "3", "positional"],
      ["d_out", "2", "1", "positional"],
      ["context_length", "3", "6", "positional"],
      ["dropout", "4", "0.0", "positional"],
      ["num_heads", "5", "2", "positional"],
      ["qkv_bias", "6", "False", "default"],
    ]);
    assert.equal((await page.getByTestId("output-width").textContent()).trim(), "2");
    assert.equal(await page.getByTestId("output-width-rule").textContent(), "num_heads x d_out = 2 x 1 = 2");
    assert.equal(await page.getByTestId("batch").inputValue(), "2", "the book's two stacked copies");
    await afterRun(page, () => page.getByTestId("run").click());
    const summary = await page.locator("[data-stage=output]").getByTestId("output-summary").textContent();
    assert.match(summary, /^Output: \(2, 6, 2\) — width 2: num_heads x d_out = 2 x 1 = 2/);
    assert.match(await page.locator("[data-stage=output]").getByTestId("stage-shape").textContent(), /\(b=2, num_tokens=6, num_heads\*d_out=2\)/);
    await finish(page);
  });

  test("2. the same numbers as MultiHeadAttention show the divisibility error, suggest valid values and keep everything typed", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    await page.getByTestId("class-select").selectOption("MultiHeadAttention");
    const diag = page.locator("[data-slot-diagnostics] .diag-error[data-code=heads_divisibility]");
    assert.equal(await diag.count(), 1);
    assert.match(await diag.locator(".diag-msg").textContent(), /d_out = 1 is not divisible by num_heads = 2 \(1 % 2 = 1\)/);
    assert.match(await diag.getByTestId("diag-pytorch").textContent(), /AssertionError: d_out must be divisible by num_heads/);
    // Valid values are suggested (as buttons that apply them).
    const fixes = await diag.getByTestId("fix").evaluateAll((bs) => bs.map((b) => `${b.dataset.slot}=${b.dataset.value}`));
    assert.ok(fixes.includes("num_heads=1"), fixes.join(" "));
    assert.ok(fixes.includes("d_out=2"), fixes.join(" "));
    assert.match(await diag.locator(".diag-hint").textContent(), /d_out = 2/);
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    for (const [name, value] of Object.entries({ d_in: "3", d_out: "1", context_length: "6", dropout: "0.0", num_heads: "2" })) {
      assert.equal(await page.getByTestId(`slot-${name}`).inputValue(), value, `slot ${name} keeps its value`);
    }
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(3, 1, 6, 0.0, 2)");
    // A suggestion applies at once and unblocks the run.
    await diag.locator("[data-testid=fix][data-slot=d_out][data-value='2']").click();
    assert.equal(await page.getByTestId("slot-d_out").inputValue(), "2");
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    await finish(page);
  });

  test("3. GPT-2 XL with num_heads 48 says 1600 % 48 = 16 and that 48 is XL's layer count, not its head count (25)", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gpt2XL");
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(1600, 1600, 1024, 0.0, 25)");
    await page.getByTestId("slot-num_heads").fill("48");
    const diag = page.locator("[data-slot-diagnostics] .diag-error[data-code=heads_divisibility]");
    const text = await diag.textContent();
    assert.match(text, /1600 % 48 = 16/);
    assert.match(text, /48 is GPT-2 XL's number of layers \(n_layer\), not its head count/);
    assert.match(text, /25 heads/);
    assert.ok(await diag.locator("[data-testid=fix][data-slot=num_heads][data-value='50']").count() === 1, "a valid head count near 48 is offered");
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    await finish(page);
  });

  test("4. a locked embed shows its locked slots read-only, and two widgets on one page run independently", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const exercise = page.locator("#exercise");
    const causal = page.locator("#causal");
    for (const name of ["d_out", "num_heads"]) {
      const input = exercise.getByTestId(`slot-${name}`);
      assert.equal(await input.getAttribute("readonly"), "", `${name} is read-only`);
      assert.equal(await input.isEditable(), false);
    }
    assert.equal(await exercise.getByTestId("slot-d_in").isEditable(), true);
    assert.equal(await exercise.getByTestId("call-box").isEditable(), false, "the call box cannot unlock a slot");
    assert.equal(await exercise.getByTestId("preset-bookToy").isVisible(), false, "hidden panels are not shown");
    assert.equal(await exercise.getByTestId("compare-panel").isVisible(), false);
    assert.equal(await exercise.getByTestId("stage-cards").isVisible(), true);
    // Both ran on load, each with its own setup.
    assert.match(await exercise.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    assert.match(await causal.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(1, 6, 2\)/);
    assert.equal(await causal.getByTestId("mode-eval").isChecked(), true);
    assert.equal(await causal.locator("[data-code=dropout_eval]").count(), 1, "dropout 0.5 in eval mode is explained");
    // Editing and running one leaves the other alone.
    const runsOf = (sel) => page.evaluate((s) => document.querySelector(s).dataset.runs, sel);
    const exerciseRuns = await runsOf("#exercise");
    await causal.getByTestId("slot-d_out").fill("4");
    await afterRun(page, () => causal.getByTestId("run").click(), "#causal");
    assert.match(await causal.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(1, 6, 4\)/);
    assert.equal(await runsOf("#exercise"), exerciseRuns);
    assert.equal(await exercise.getByTestId("slot-d_out").inputValue(), "1");
    assert.match(await exercise.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    // The host page hears each run.
    const detail = await page.evaluate(() => new Promise((resolve) => {
      document.querySelector("#exercise").addEventListener("run-complete", (e) => resolve({ shape: e.detail.outputShape, cls: e.detail.className }), { once: true });
      document.querySelector("#exercise").run();
    }));
    assert.deepEqual(detail, { shape: [2, 6, 2], cls: "MultiHeadAttentionWrapper" });
    await finish(page);
  });

  test("5. attn_weights exported as .npy loads with the right shape and values", async () => {
    const page = await openPage(lab);
    await runPreset(page, "bookToy");
    const card = page.locator("[data-stage=attn_weights]");
    const [download] = await Promise.all([page.waitForEvent("download"), card.getByTestId("export-npy").last().click()]);
    assert.equal(download.suggestedFilename(), "attn_weights.npy");
    const npy = readNpy(new Uint8Array(await readFile(await download.path())));
    assert.equal(npy.descr, "<f4");
    assert.equal(npy.fortranOrder, false);
    assert.deepEqual(npy.shape, [2, 2, 6, 6]);
    // The same values as the library computes for MultiHeadAttention(3, 2, 6, 0.0, 2), seed 123, book tokens stacked twice.
    const core = await loadAttentionLab();
    const gen = core.manualSeed(123);
    const mha = core.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, { generator: gen });
    const x = core.bookTokens();
    const { trace } = mha.forward({ shape: [2, 6, 3], data: new Float32Array([...x.data, ...x.data]) }, { trace: true, generator: gen });
    const expected = trace.find((s) => s.id === "attn_weights");
    assert.deepEqual(Array.from(npy.data), Array.from(expected.data), "bit for bit");
    // And as the grid on screen reads them: row "journey" of head 0.
    const shown = Number(await card.getByTestId("grid").first().locator("tbody tr").nth(1).locator("td").first().textContent());
    assert.ok(Math.abs(shown - npy.data[6]) <= 5e-5, `grid shows ${shown}, file holds ${npy.data[6]}`);
    assert.equal(npy.data[2], 0, "masked weights are exactly 0");
    await finish(page);
  });
});
