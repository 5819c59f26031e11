// Speed: book-size interactions render in under 50 ms; GPT-2 small over its full 1024-token
// context runs off the main thread with a progress indicator while the page keeps responding; the
// memory a run needs is checked before it starts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage, runPreset } from "./helpers.mjs";

describe("performance", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("at book sizes an edit updates in under 50 ms and a run renders in under 50 ms", async () => {
    const page = await openPage(lab);
    await runPreset(page, "bookToy");
    const host = page.locator("attention-lab");
    const updates = [];
    const runs = [];
    for (const value of ["4", "6", "2", "4", "2"]) {
      await page.getByTestId("slot-d_out").fill(value);
      updates.push(Number(await host.getAttribute("data-update-ms")));
      await afterRun(page, () => page.getByTestId("run").click());
      runs.push(Number(await host.getAttribute("data-run-ms")));
    }
    const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    assert.ok(median(updates) < 50, `update ms: ${updates}`);
    assert.ok(median(runs) < 50, `run + render ms: ${runs}`);
    await finish(page);
  });

  test("GPT-2 small with 1024 tokens runs in the background with a progress bar; the page keeps responding", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gpt2Small");
    await page.getByTestId("fill-context").click();
    assert.equal(await page.getByTestId("count").inputValue(), "1024");
    await page.getByTestId("batch").selectOption("1");
    assert.match(await page.getByTestId("run-memory").textContent(), /MiB/);
    assert.match(await page.getByTestId("token-diagnostics").textContent(), /runs in the background/);
    const done = afterRun(page, () => page.getByTestId("run").click(), "attention-lab", 180_000);
    await page.getByTestId("progress").waitFor({ state: "visible", timeout: 5_000 });
    assert.match(await page.getByTestId("progress").textContent(), /Running the forward pass… \d+\.\d s/);
    // While it runs, the page answers within a frame or two.
    const t0 = Date.now();
    await page.getByTestId("slot-num_heads").fill("16");
    assert.equal((await page.getByTestId("head-dim").textContent()).trim(), "48");
    assert.ok(Date.now() - t0 < 1_000, `edit during the run took ${Date.now() - t0} ms`);
    await page.getByTestId("slot-num_heads").fill("12");
    await done;
    await page.getByTestId("progress").waitFor({ state: "hidden" });
    const weights = page.locator("[data-stage=attn_weights]");
    assert.match(await weights.getByTestId("stage-shape").textContent(), /\(b=1, num_heads=12, query=1024, key=1024\)/);
    assert.equal(await weights.getByRole("tab", { name: "head 11" }).count(), 1, "one tab per head");
    assert.equal(await weights.locator("canvas").count(), 1, "only the visible head is drawn");
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(1, 1024, 768\)/);
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
