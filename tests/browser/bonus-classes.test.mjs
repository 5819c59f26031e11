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
});
