// The memory budget on the page: a setup far over the core's budget, or a run over the page's own,
// is refused before anything is allocated, with the bytes it would need, and the next valid call on
// the same page works.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage, pasteCall, runPreset } from "./helpers.mjs";

describe("memory budget", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("MultiHeadAttention(100000, 100000, 1024, 0.0, 10) is refused with its bytes; the next valid call runs", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttention(100000, 100000, 1024, 0.0, 10)");
    const tooLarge = page.locator('[data-testid="diagnostic"][data-code="too_large"]').first();
    await tooLarge.waitFor();
    assert.match(await tooLarge.textContent(), /160,000,400,000 bytes/);
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    assert.equal(await page.getByTestId("slot-d_in").inputValue(), "100000", "what was typed is kept");

    await pasteCall(page, "MultiHeadAttention(3, 2, 6, 0.0, 2)");
    await page.getByTestId("run").waitFor();
    await afterRun(page, () => page.getByTestId("run").click());
    const output = page.locator('[data-stage="output"]').first();
    assert.match(await output.textContent(), /\(2, 6, 2\)/);
    await finish(page);
  });

  test("a run over the page's memory budget is refused before it starts", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gpt2XL");
    await page.getByTestId("fill-context").click();
    await page.getByTestId("batch").selectOption("4");
    const diag = page.getByTestId("token-diagnostics").locator("[data-code=page_memory], [data-code=too_large]").first();
    assert.match(await diag.textContent(), /MiB/);
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    assert.match(await page.getByTestId("run-reason").textContent(), /memory/);
    await finish(page);
  });
});
