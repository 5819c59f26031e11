// Exercise 3.1 panel: SelfAttention_v2 (seed 789) -> SelfAttention_v1 (seed 123).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { finish, launchLab, openPage } from "./helpers.mjs";

describe("copy weights (exercise 3.1)", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("copying every matrix transposed makes v1 agree with v2", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v2&d_in=3&d_out=2");
    await page.getByTestId("copy-button").click();
    const verdict = page.getByTestId("copy-verdict");
    await verdict.waitFor();
    assert.equal(await verdict.getAttribute("data-agree"), "true");
    assert.match(await verdict.textContent(), /\bagree\b/);
    const maxdiff = page.getByTestId("copy-maxdiff");
    const value = Number(await maxdiff.getAttribute("data-value"));
    assert.ok(value <= 1e-6, `max abs difference ${value}`);
    assert.match(await maxdiff.textContent(), /Largest absolute difference/);
    assert.ok(await maxdiff.isVisible());
    const actions = await page.getByTestId("copy-report").locator("tbody[data-matrix]").evaluateAll((bodies) => bodies.map((b) => [b.dataset.matrix, b.dataset.action]));
    assert.deepEqual(actions, [["W_query", "transposed"], ["W_key", "transposed"], ["W_value", "transposed"]]);
    assert.match(await page.getByTestId("copy-pytorch").textContent(), /sa_v1\.W_query = torch\.nn\.Parameter\(sa_v2\.W_query\.weight\.T\)/);
    await finish(page);
  });

  test("with d_in = d_out = 3, W_key copied without transpose disagrees and is named", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v2&d_in=3&d_out=3");
    await page.getByTestId("transpose-W_key").uncheck();
    await page.getByTestId("copy-button").click();
    const verdict = page.getByTestId("copy-verdict");
    await verdict.waitFor();
    assert.equal(await verdict.getAttribute("data-agree"), "false");
    const text = await verdict.textContent();
    assert.match(text, /disagree/);
    assert.match(text, /W_key/);
    assert.doesNotMatch(text, /W_query|W_value/);
    assert.ok(Number(await page.getByTestId("copy-maxdiff").getAttribute("data-value")) > 1e-6);
    const row = page.getByTestId("copy-report").locator("tbody[data-matrix=W_key]");
    assert.equal(await row.getAttribute("data-action"), "copied");
    assert.match(await row.textContent(), /\(3, 3\) → \(3, 3\)/);
    const code = await page.getByTestId("copy-pytorch").textContent();
    assert.match(code, /sa_v1\.W_key = torch\.nn\.Parameter\(sa_v2\.W_key\.weight\)\n/);
    assert.match(code, /SelfAttention_v2\(3, 3\)/);
    // Stage by stage, the first difference is at keys.
    assert.match(await page.getByTestId("copy-stages").locator(".copy-stages-title").textContent(), /first difference appears at keys/);
    assert.equal(await page.getByTestId("copy-stages").locator("tr.differs").first().getAttribute("data-copy-stage"), "keys");
    await finish(page);
  });
});
