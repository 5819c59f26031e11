// The <attention-lab> element as a host page uses it: attributes set the class and its slots (by the
// core's slot names, a class's own slots too), `locked` makes slots read-only (the call box cannot
// unlock them) and later attributes leave them alone, `hidden` hides panels, run() and the
// run-complete event; several widgets on one page each keep their own state.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage } from "./helpers.mjs";

describe("the <attention-lab> widget", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("a locked embed shows its locked slots read-only, and two widgets on one page run independently", async () => {
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

  test("a class's own slot (MultiHeadAttentionWithSWA's sliding_window_size) is set by attribute and locked by its core name; a later attribute reaches it unless it is locked", async () => {
    const page = await openPage(lab);
    await page.evaluate(() => {
      for (const [id, locked] of [["swa-locked", "sliding_window_size"], ["swa-open", ""]]) {
        const el = document.createElement("attention-lab");
        el.id = id;
        const attrs = { "class-name": "MultiHeadAttentionWithSWA", d_in: "3", d_out: "2", dropout: "0.0", num_heads: "2", sliding_window_size: "2", locked };
        for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
        el.setAttribute("hidden", "presets compare checkpoint code");
        document.body.append(el);
      }
    });
    for (const id of ["swa-locked", "swa-open"]) await page.locator(`#${id}[data-ready]`).waitFor();
    const lockedSlot = page.locator("#swa-locked").getByTestId("slot-sliding_window_size");
    assert.equal(await lockedSlot.inputValue(), "2");
    assert.equal(await lockedSlot.getAttribute("data-locked"), "true");
    assert.match(await page.locator("#swa-locked").locator("#call-hint").textContent(), /locks sliding_window_size/);
    // an attribute set later reaches the slot, unless the slot is locked
    await page.evaluate(() => {
      for (const id of ["swa-locked", "swa-open"]) document.getElementById(id).setAttribute("sliding_window_size", "4");
    });
    await page.waitForFunction(() => document.getElementById("swa-open").shadowRoot.getElementById("slot-sliding_window_size").value === "4");
    assert.equal(await page.locator("#swa-open").getByTestId("call-box").inputValue(), "MultiHeadAttentionWithSWA(3, 2, 0.0, 2, sliding_window_size=4)");
    assert.equal(await lockedSlot.inputValue(), "2");
    await finish(page);
  });
});
