// The tokens panel: the book's six, a typed sentence (a repeated word shares its embedding), random
// tokens, the editable embedding grid (kept in the URL), batch size.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, currentUrl, finish, launchLab, openPage, pasteCall } from "./helpers.mjs";

describe("tokens", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  const cell = (page, r, j) => page.getByTestId(`cell-${r}-${j}`).inputValue();

  test("a typed sentence gives word tokens; a repeated word reuses its embedding", async () => {
    const page = await openPage(lab, "?class=CausalAttention&d_in=4&d_out=2&context_length=8&dropout=0&seed=7");
    await page.getByTestId("sentence").fill("the cat saw the dog");
    assert.equal(await page.getByTestId("source-sentence").isChecked(), true);
    await page.getByTestId("grid-details").locator("summary").click();
    for (let j = 0; j < 4; j++) assert.equal(await cell(page, 3, j), await cell(page, 0, j), `"the" twice, dimension ${j}`);
    assert.notEqual(await cell(page, 1, 0), await cell(page, 0, 0));
    await afterRun(page, () => page.getByTestId("run").click());
    const input = page.locator("[data-stage=input]");
    assert.match(await input.getByTestId("stage-shape").textContent(), /\(b=2, num_tokens=5, d_in=4\)/);
    const labels = await input.getByTestId("grid").first().locator("tbody th").allTextContents();
    assert.deepEqual(labels, ["the", "cat", "saw", "the", "dog"]);
    assert.equal((await currentUrl(page)).searchParams.get("tokens"), "the cat saw the dog");
    await finish(page);
  });

  test("a pasted or typed d_in other than 3 runs on seeded embeddings at once; a locked source keeps Run off and says why beside it", async () => {
    const page = await openPage(lab);
    assert.equal(await page.getByTestId("source-book").isChecked(), true);
    await pasteCall(page, "MultiHeadAttention(768, 768, 1024, 0.0, 12)");
    assert.equal(await page.getByTestId("source-sentence").isChecked(), true, "the book's sentence with seeded embeddings of width 768");
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    assert.match(await page.getByTestId("run-memory").textContent(), /^[\d,]+ bytes/);
    await afterRun(page, () => page.getByTestId("run").click());
    assert.match(await page.locator("[data-stage=output]").getByTestId("stage-shape").textContent(), /num_tokens=6, d_out=768/);
    // The book's tokens chosen again, then d_in typed in its slot: the same switch.
    await page.getByTestId("source-book").check();
    await page.getByTestId("slot-d_in").fill("3");
    await page.getByTestId("source-book").check();
    await page.getByTestId("slot-d_in").fill("4");
    assert.equal(await page.getByTestId("source-sentence").isChecked(), true);
    // An exercise that locks the tokens keeps them: Run stays off, the reason and the memory fact say why.
    await page.evaluate(() => {
      const el = document.createElement("attention-lab");
      el.id = "locked-tokens";
      el.setAttribute("call", "CausalAttention(3, 2, 6, 0.0)");
      el.setAttribute("locked", "tokens");
      document.body.append(el);
    });
    const widget = page.locator("#locked-tokens");
    await widget.locator("[data-stage=output]").waitFor();
    await widget.getByTestId("call-box").fill("CausalAttention(4, 2, 6, 0.0)");
    assert.equal(await widget.getByTestId("source-book").isChecked(), true);
    assert.equal(await widget.getByTestId("run").isDisabled(), true);
    assert.equal(await widget.getByTestId("run-reason").textContent(), "Run is disabled: the book’s tokens need d_in = 3.");
    assert.equal(await widget.getByTestId("run-fix").count(), 0, "no fix the exercise forbids");
    assert.equal(await widget.getByTestId("run-memory").textContent(), "— until the run can start (the book’s tokens need d_in = 3)");
    await finish(page);
  });

  test("a grid that no longer fits d_in offers its fix beside the disabled Run", async () => {
    const page = await openPage(lab);
    await page.getByTestId("grid-details").locator("summary").click();
    await page.getByTestId("cell-0-0").fill("1.5");
    await page.getByTestId("slot-d_in").fill("4");
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    assert.match(await page.getByTestId("run-reason").textContent(), /^Run is disabled: the embedding grid does not match d_in\./);
    await page.getByTestId("run-fix").click();
    assert.equal(await page.getByTestId("source-sentence").isChecked(), true);
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    await finish(page);
  });

  test("editing a number in the grid uses my own numbers, changes the run and survives a reload", async () => {
    const page = await openPage(lab);
    await page.getByTestId("grid-details").locator("summary").click();
    assert.equal(await cell(page, 0, 0), "0.43");
    const before = await page.locator("[data-stage=output]").getByTestId("grid").first().locator("tbody td").first().textContent();
    await page.getByTestId("cell-0-0").fill("1.5");
    assert.equal(await page.getByTestId("source-custom").isChecked(), true);
    assert.equal(await page.getByTestId("cell-0-0").evaluate((el) => el.getRootNode().activeElement === el), true, "focus stays in the cell");
    await afterRun(page, () => page.getByTestId("run").click());
    const firstOut = await page.locator("[data-stage=output]").getByTestId("grid").first().locator("tbody td").first().textContent();
    assert.notEqual(firstOut, before);
    assert.equal(await page.locator("[data-stage=input]").getByTestId("grid").first().locator("tbody td").first().textContent(), "1.5000");
    const url = await currentUrl(page);
    assert.match(url.searchParams.get("x"), /^1\.5,0\.15,0\.89;0\.55,/);
    const again = await openPage(lab, url.search);
    assert.equal(await again.getByTestId("source-custom").isChecked(), true);
    assert.equal(await again.getByTestId("cell-0-0").inputValue(), "1.5");
    // A word that is not a number is caught at the cell and blocks the run.
    await again.getByTestId("cell-1-2").fill("abc");
    assert.equal(await again.getByTestId("cell-1-2").getAttribute("aria-invalid"), "true");
    assert.equal(await again.getByTestId("run").isDisabled(), true);
    await finish(again);
    await finish(page);
  });

  test("random tokens and a batch of 3; more tokens than context_length is an error naming both", async () => {
    const page = await openPage(lab);
    await page.getByTestId("source-random").check();
    await page.getByTestId("count").fill("5");
    await page.getByTestId("batch").selectOption("3");
    await afterRun(page, () => page.getByTestId("run").click());
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(3, 5, 2\)/);
    await page.getByTestId("count").fill("9");
    const diag = page.locator("[data-slot-diagnostics=context_length] [data-code=context_too_short]");
    assert.match(await diag.textContent(), /num_tokens 9 > context_length 6/);
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    await page.getByTestId("fill-context").click();
    assert.equal(await page.getByTestId("count").inputValue(), "6");
    assert.equal(await page.getByTestId("run").isEnabled(), true);
    await finish(page);
  });

  test("\"Fill the context\" says it switches to random tokens, and does", async () => {
    const page = await openPage(lab);
    const fill = page.getByTestId("fill-context");
    assert.equal(await fill.textContent(), "Fill the context with 6 random tokens (instead of the book’s tokens)");
    await afterRun(page, () => fill.click());
    assert.equal(await page.getByTestId("source-random").isChecked(), true);
    assert.equal(await page.getByTestId("count").inputValue(), "6");
    assert.equal(await fill.textContent(), "Fill the context (6 random tokens)");
    await finish(page);
  });
});
