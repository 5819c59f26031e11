// The whole state in the URL, slot names as keys; back and forward restore it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { currentUrl, finish, launchLab, openPage, pasteCall } from "./helpers.mjs";

describe("URL state", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("back and forward restore the class, the slots, the tokens and the mode", async () => {
    const page = await openPage(lab);
    const first = await currentUrl(page);
    assert.equal(first.searchParams.get("class"), "MultiHeadAttention");
    assert.equal(first.searchParams.get("d_in"), "3");
    await page.getByTestId("class-select").selectOption("CausalAttention");
    await page.getByTestId("mode-eval").check();
    await page.getByTestId("sentence").fill("one two three");
    const causal = await currentUrl(page);
    assert.equal(causal.searchParams.get("class"), "CausalAttention");
    assert.equal(causal.searchParams.get("mode"), "eval");
    assert.equal(causal.searchParams.get("tokens"), "one two three");
    assert.equal(causal.searchParams.get("num_heads"), null, "only the class's own slots");
    await page.waitForTimeout(1600); // a pause: the next edit starts a new history entry
    await pasteCall(page, "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    assert.equal((await currentUrl(page)).searchParams.get("class"), "MultiHeadAttentionWrapper");

    await page.goBack();
    await page.waitForFunction(() => new URL(location.href).searchParams.get("class") === "CausalAttention");
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.getElementById("class-select").value === "CausalAttention");
    assert.equal(await page.getByTestId("call-box").inputValue(), "CausalAttention(3, 2, 6, 0.0)");
    assert.equal(await page.getByTestId("mode-eval").isChecked(), true);
    assert.equal(await page.getByTestId("sentence").inputValue(), "one two three");
    await page.goForward();
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.getElementById("class-select").value === "MultiHeadAttentionWrapper");
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
    // Back to where the page opened: the book preset's setup, re-run.
    await page.goto(first.href);
    await page.waitForFunction(() => document.querySelector("attention-lab")?.dataset.ready);
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    await finish(page);
  });

  test("a link with a bad class or batch says so and keeps the rest", async () => {
    const page = await openPage(lab, "?class=MultiheadAttention&d_in=4&batch=99&mode=sideways");
    const status = await page.getByTestId("status").textContent();
    assert.match(status, /unknown class “MultiheadAttention”/);
    assert.match(status, /batch/);
    assert.match(status, /mode/);
    assert.equal(await page.getByTestId("slot-d_in").inputValue(), "4");
    await finish(page);
  });
});
