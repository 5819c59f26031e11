// The predict panel: the reader writes down the output shape before running (quiz mode hides the
// width until a run reveals it, and an edit does not run by itself then); the run says whether the
// prediction held and, when not, why.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage } from "./helpers.mjs";

const runs = (page) => page.evaluate(() => Number(document.querySelector("attention-lab").dataset.runs ?? 0));

describe("predict, then run", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("a wrong width for the wrapper is explained; the right shape holds", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttentionWrapper&d_in=3&d_out=1&context_length=6&dropout=0.0&num_heads=2&seed=123");
    await page.getByTestId("quiz").check();
    assert.match(await page.getByTestId("output-width").textContent(), /hidden until you run/);
    await page.getByTestId("prediction").fill("(2, 6, 1)");
    await afterRun(page, () => page.getByTestId("run").click());
    const result = page.getByTestId("prediction-result");
    assert.equal(await result.getAttribute("data-held"), "false");
    assert.match(await result.textContent(), /did not hold: the output is \(2, 6, 2\)/);
    assert.match(await result.textContent(), /d_out is per head/);
    assert.equal((await page.getByTestId("output-width").textContent()).trim(), "2", "revealed after the run");
    await page.getByTestId("prediction").fill("(2, 6, 2)");
    assert.equal(await result.getAttribute("data-held"), "true");
    assert.match(await result.textContent(), /held/);
    await finish(page);
  });

  test("in quiz mode an edit does not run by itself (it would give the answer away): the banner waits for Run", async () => {
    const page = await openPage(lab);
    await page.getByTestId("quiz").check();
    const n = await runs(page);
    await page.getByTestId("slot-num_heads").fill("1");
    // The banner shows only while no run is coming by itself (a cheap run due after the typing pause
    // hides it), so its being there is the fact, with no waiting out the pause.
    await page.getByTestId("stale-banner").waitFor();
    assert.equal(await runs(page), n);
    assert.equal(await page.getByTestId("stale-run").isEnabled(), true);
    await afterRun(page, () => page.getByTestId("stale-run").click());
    assert.equal(await runs(page), n + 1, "the one run is the one asked for");
    assert.equal(await page.getByTestId("stale-banner").isVisible(), false);
    await finish(page);
  });

  test("a preset clears the prediction written for the setup before it", async () => {
    const page = await openPage(lab);
    await page.getByTestId("prediction").fill("(2, 6, 2)");
    await afterRun(page, () => page.getByTestId("preset-gqaToy").click());
    assert.equal(await page.getByTestId("prediction").inputValue(), "");
    assert.equal(await page.getByTestId("prediction-result").count(), 0, "no verdict on a prediction made for another setup");
    await finish(page);
  });
});
