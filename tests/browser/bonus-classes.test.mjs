// Issue 10: the book's two chapter 4 bonus classes on the page, shown from the core's facts: the group
// map of GroupedQueryAttention, its key/value cache against MHA, the sliding window in the mask stage,
// and the slot-order trap diagnosed with its fix.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage, pasteCall, runPreset, SCREENSHOT_DIR } from "./helpers.mjs";

describe("bonus classes", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("GroupedQueryAttention: which query heads share which key/value head, and what the cache saves", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gqaToy");
    assert.equal(await page.getByTestId("call-box").inputValue(), "GroupedQueryAttention(3, 4, 0.0, 4, 2)");
    const keys = page.locator("[data-stage=keys]");
    assert.match(await keys.getByTestId("stage-shape").textContent(), /\(b=2, num_kv_groups=2, num_tokens=6, head_dim=1\)/);
    const map = keys.getByTestId("group-map");
    assert.deepEqual(await map.locator("li").allTextContents(), ["k/v 0 → query heads 0–1", "k/v 1 → query heads 2–3"]);
    assert.match(await page.locator("[data-stage=attn_scores] h3").textContent(), /query head h uses key head h \/\/ 2/);
    assert.match(await page.getByTestId("kv-cache").textContent(), /2 key\/value heads of 1.*2× less than MultiHeadAttention of this width/);
    await keys.screenshot({ path: `${SCREENSHOT_DIR}/gqa-keys-group-map.png` });
    await finish(page);
  });

  test("MultiHeadAttentionWithSWA: the window in the mask stage; switching class fills its new slots from its preset", async () => {
    const page = await openPage(lab);
    await runPreset(page, "swaToy");
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttentionWithSWA(3, 2, 0.0, 2, sliding_window_size=3)");
    const mask = page.locator("[data-stage=mask]");
    assert.match(await mask.locator("h3").textContent(), /Sliding-window causal mask: each query sees itself and at most 2 keys before it/);
    await mask.screenshot({ path: `${SCREENSHOT_DIR}/swa-mask.png` });
    // from the book's MultiHeadAttention to GQA: num_kv_groups, which MHA lacks, starts from the class's preset
    const again = await openPage(lab);
    await again.getByTestId("class-select").selectOption("GroupedQueryAttention");
    assert.equal(await again.getByTestId("slot-num_kv_groups").inputValue(), "2");
    assert.equal(await again.getByTestId("run").isEnabled(), true);
    await afterRun(again, () => again.getByTestId("run").click());
    assert.match(await again.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    await finish(again);
    await finish(page);
  });

  test("the slot-order trap: MultiHeadAttention's order pasted into GroupedQueryAttention is one diagnosis with its fix", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "GroupedQueryAttention(768, 768, 1024, 0.0, 12)");
    const diag = page.locator(".diag-error[data-code=mha_slot_order]");
    assert.equal(await diag.count(), 1);
    assert.match(await diag.locator(".diag-msg").textContent(), /slot 3 of GroupedQueryAttention is dropout; 1024, 0.0, 12 looks like MultiHeadAttention's order/);
    assert.match(await diag.getByTestId("diag-pytorch").textContent(), /ZeroDivisionError: float modulo/);
    assert.deepEqual(await diag.getByTestId("fix").evaluateAll((bs) => bs.map((b) => `${b.dataset.slot}=${b.dataset.value}`)), ["dropout=0.0", "num_heads=12"]);
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    await finish(page);
  });

  test("their own slots (num_kv_groups, sliding_window_size) travel in the URL, in attributes and in locked: the names are the core's", async () => {
    const page = await openPage(lab, "?class=GroupedQueryAttention&d_in=3&d_out=4&dropout=0.0&num_heads=4&num_kv_groups=1");
    assert.equal(await page.getByTestId("slot-num_kv_groups").inputValue(), "1");
    assert.equal(await page.getByTestId("call-box").inputValue(), "GroupedQueryAttention(3, 4, 0.0, 4, 1)");
    await page.getByTestId("slot-num_kv_groups").fill("2");
    await page.waitForFunction(() => location.search.includes("num_kv_groups=2"));
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
