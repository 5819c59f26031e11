// Issue 5, acceptance 2: a setup far over the memory budget is refused before anything is allocated,
// with the bytes it would need, and the next valid call on the same page works.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage, pasteCall } from "./helpers.mjs";

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
});
