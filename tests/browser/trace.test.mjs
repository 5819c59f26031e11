// Running the forward pass: every stage card with named axes, the book's numbers, row sums,
// masked scores, and a GPT-2-size run that stays responsive.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage, rowCells, runPreset } from "./helpers.mjs";

const MHA_STAGES = [
  "input", "queries", "keys", "values", "attn_scores", "mask", "attn_scores_masked",
  "attn_weights", "attn_weights_dropout", "context_vec", "heads_concat", "out_proj", "output",
];

describe("trace", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("the book preset shows every stage and the book's first output row", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v1&d_in=3&d_out=2");
    await runPreset(page, "bookToy");
    const ids = await page.locator("[data-stage]").evaluateAll((cards) => cards.map((c) => c.dataset.stage));
    assert.deepEqual(ids, MHA_STAGES);
    const output = page.locator("[data-stage=output]");
    assert.match(await output.getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    assert.match(await output.getByTestId("output-summary").textContent(), /width 2/);
    const firstRow = output.getByTestId("grid").first().locator("tbody tr").first();
    assert.equal((await firstRow.locator("th").textContent()).trim(), "Your");
    assert.deepEqual((await rowCells(firstRow)).slice(0, 2), ["0.3190", "0.4858"]);
    assert.equal(await firstRow.isVisible(), true);
    // The scale factor says which d_k it used; masked weights are exactly 0; each head's columns in the concatenation.
    assert.match(await page.locator("[data-stage=attn_weights]").getByTestId("scale-note").textContent(), /1\/√d_k = 1\/√1 = 1 .*head_dim = d_out \/ num_heads = 1/);
    assert.match(await page.locator("[data-stage=attn_weights]").getByTestId("exact-zeros").textContent(), /^15 of the 36 weights/);
    assert.deepEqual(await page.locator("[data-stage=heads_concat]").getByTestId("concat-map").locator("li").allTextContents(), ["head 0 → column 0", "head 1 → column 1"]);
    // Shapes name their axes.
    assert.match(await page.locator("[data-stage=queries]").getByTestId("stage-shape").textContent(), /\(b=2, num_heads=2, num_tokens=6, head_dim=1\)/);
    await finish(page);
  });

  test("attention weights rows sum to 1, masked scores read −inf and each head has a heatmap", async () => {
    const page = await openPage(lab);
    await runPreset(page, "bookToy");
    const weights = page.locator("[data-stage=attn_weights]");
    const sums = await weights.locator("[data-testid=rowsum]:visible").allTextContents();
    assert.equal(sums.length, 12, "6 rows x 2 heads in the visible batch item");
    for (const s of sums) assert.equal(s, "1.0000");
    assert.equal(await weights.locator("[data-testid=heatmap]:visible").count(), 2);
    const masked = page.locator("[data-stage=attn_scores_masked]").getByTestId("grid").first().locator("tbody tr").first();
    const cells = await rowCells(masked);
    assert.equal(cells[1], "−inf");
    assert.notEqual(cells[0], "−inf");
    // A heatmap cell tells its value on hover (SVG title).
    const title = await weights.locator("[data-testid=heatmap] rect title").first().textContent();
    assert.match(title, /^Your → Your: 1\.0000$/);
    // The second batch item is one tab away, by mouse or arrow key.
    await weights.getByRole("tab", { name: "b = 1" }).click();
    assert.equal(await weights.locator("[data-testid=heatmap]:visible").count(), 2);
    await page.keyboard.press("ArrowLeft");
    assert.equal(await weights.getByRole("tab", { name: "b = 0" }).getAttribute("aria-selected"), "true");
    assert.equal(await page.evaluate(() => document.querySelector("attention-lab").shadowRoot.activeElement.textContent), "b = 0");
    await finish(page);
  });

  test("the Run button works from the keyboard and re-runs after an edit", async () => {
    const page = await openPage(lab, "?class=CausalAttention&d_in=3&d_out=2&context_length=6&dropout=0&seed=123&mode=eval");
    await page.locator("[data-stage=output]").waitFor();
    await page.getByTestId("slot-d_out").fill("3");
    assert.match(await page.getByTestId("trace-status").textContent(), /press Run/);
    await page.getByTestId("run").focus();
    await afterRun(page, () => page.keyboard.press("Enter"));
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 3\)/);
    assert.doesNotMatch(await page.getByTestId("trace-status").textContent(), /press Run/);
    await finish(page);
  });

  test("dropout in train mode scales survivors and says why rows no longer sum to 1", async () => {
    const page = await openPage(lab, "?class=CausalAttention&d_in=3&d_out=2&context_length=6&dropout=0.5&seed=123");
    await afterRun(page, () => page.getByTestId("run").click());
    const card = page.locator("[data-stage=attn_weights_dropout]");
    await card.waitFor();
    assert.match(await card.textContent(), /1\/\(1−p\) = 2/);
    // The kept mask: 2 where a weight survived, 0 where it was dropped, — where it was masked anyway.
    const kept = card.getByTestId("kept-mask");
    assert.match(await kept.textContent(), /multiplied by 2 \(kept\) or 0 \(dropped\)/);
    const keptRow = await kept.getByTestId("grid").first().locator("tbody tr").first().locator("td").allTextContents();
    assert.ok(["0", "2"].includes(keptRow[0]), keptRow.join(" "));
    assert.deepEqual(keptRow.slice(1), ["—", "—", "—", "—", "—"]);
    const sums = await card.locator("[data-testid=rowsum]:visible").allTextContents();
    assert.ok(sums.some((s) => s !== "1.0000"), `some row sum differs from 1: ${sums}`);
    await finish(page);
  });

  test("a GPT-2 small run stays responsive and shows truncated grids with summaries", async () => {
    const page = await openPage(lab);
    const started = Date.now();
    await runPreset(page, "gpt2Small");
    const elapsed = Date.now() - started;
    assert.ok(elapsed < 20_000, `GPT-2 small run took ${elapsed} ms`);
    const input = page.locator("[data-stage=input]");
    assert.match(await input.getByTestId("stage-shape").textContent(), /\(b=2, num_tokens=6, d_in=768\)/);
    assert.match(await input.getByTestId("tensor-summary").textContent(), /min .* max .* mean/);
    const header = await input.getByTestId("grid").first().locator("thead th").allTextContents();
    assert.ok(header.length <= 16, `truncated header has ${header.length} cells`);
    assert.ok(header.includes("…"));
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 768\)/);
    // The page still reacts at once.
    const t0 = Date.now();
    await page.getByTestId("slot-num_heads").fill("8");
    assert.equal((await page.getByTestId("head-dim").textContent()).trim(), "96");
    assert.ok(Date.now() - t0 < 2_000);
    await finish(page);
  });
});
