// The compare panel: exercise 3.1 (SelfAttention_v2 seed 789 -> SelfAttention_v1 seed 123) and
// MultiHeadAttentionWrapper <-> MultiHeadAttention with the same weights.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { finish, launchLab, openPage } from "./helpers.mjs";

describe("compare: copy weights (exercise 3.1)", () => {
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

describe("compare: wrapper and fused MultiHeadAttention", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("the converter gives the equivalent call both ways, and the same weights agree at every stage", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttentionWrapper&d_in=3&d_out=2&context_length=6&dropout=0&num_heads=2");
    assert.equal(await page.getByTestId("compare-mode-convert").isChecked(), true);
    assert.equal(await page.getByTestId("converter-a").textContent(), "MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)");
    assert.equal(await page.getByTestId("converter-b").textContent(), "MultiHeadAttention(3, 4, 6, 0.0, 2)");
    assert.match(await page.getByTestId("converter-rule").textContent(), /2 heads × 2 = 4/);
    await page.getByTestId("compare-button").click();
    const verdict = page.getByTestId("compare-verdict");
    assert.equal(await verdict.getAttribute("data-agree"), "true");
    assert.equal(await page.getByTestId("compare-col").count(), 2, "side by side");
    const rows = await page.getByTestId("compare-stages").locator("tbody tr").evaluateAll((trs) => trs.map((tr) => tr.dataset.compareStage));
    assert.ok(rows.includes("attn_weights") && rows.includes("output"), rows.join(" "));
    // The code view now includes the weight copy that makes them equal.
    assert.match(await page.getByTestId("code-view").textContent(), /mha\.W_query\.weight = torch\.nn\.Parameter\(torch\.cat\(\[h\.W_query\.weight for h in wrapper\.heads\], dim=0\)\)/);
    // The converter switches the setup to the fused call.
    await page.getByTestId("converter-use").click();
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(3, 4, 6, 0.0, 2)");
    assert.equal(await page.getByTestId("converter-b").textContent(), "MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)");
    await finish(page);
  });

  test("interleaving the heads (the head-merge mistake) disagrees, and the table says where it starts", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=3&d_out=4&context_length=6&dropout=0&num_heads=2");
    await page.getByTestId("compare-layout").selectOption("interleaved");
    await page.getByTestId("compare-button").click();
    const verdict = page.getByTestId("compare-verdict");
    assert.equal(await verdict.getAttribute("data-agree"), "false");
    assert.match(await verdict.textContent(), /first difference appears at/);
    assert.ok(await page.getByTestId("compare-stages").locator("tr.differs").count() > 0);
    await finish(page);
  });
});
