// The memory budget on the page: one budget, the core's. A setup far over it, or a run over it, is
// refused before anything is allocated by the core's too_large, with the bytes it would need and the
// budget it is over (the one the facts show), and the next valid call on the same page works.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { loadAttentionLab } from "attention-lab";
import { mib } from "../../web/app/format.js";
import { afterRun, finish, launchLab, openPage, pasteCall, runPreset } from "./helpers.mjs";

/** The core's budget, from the library the page loads (the page keeps none of its own). */
const BUDGET_MIB = mib((await loadAttentionLab()).estimateBytes("SelfAttention_v1", { d_in: 3, d_out: 2 }).budget);

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

  test("a run over the core's memory budget is refused before it starts: one too_large naming the budget the facts show", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gpt2XL");
    // batch 1 at full context fits: the facts give its estimate against the core's budget
    await page.getByTestId("fill-context").click();
    await page.getByTestId("batch").selectOption("1");
    assert.match(await page.getByTestId("run-memory").textContent(), new RegExp(`MiB\\), of the ${BUDGET_MIB} MiB budget$`));
    assert.equal(await page.getByTestId("token-diagnostics").locator("[data-code=too_large]").count(), 0);
    await page.getByTestId("batch").selectOption("4");
    const errors = page.getByTestId("token-diagnostics").locator(".diag-error");
    await errors.first().waitFor();
    assert.deepEqual(await errors.evaluateAll((nodes) => nodes.map((n) => n.dataset.code)), ["too_large"], "one refusal, the core's");
    const text = await errors.first().textContent();
    assert.match(text, /bytes \([\d,]+ MiB\)/);
    assert.match(text, new RegExp(`over the ${BUDGET_MIB} MiB budget`));
    assert.match(await page.getByTestId("run-memory").textContent(), new RegExp(`of the ${BUDGET_MIB} MiB budget$`));
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    assert.match(await page.getByTestId("run-reason").textContent(), /memory/);
    await finish(page);
  });
});
