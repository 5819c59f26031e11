// An <attention-lab> taken off the page lets go of everything it started: its Web Worker (and the
// WebAssembly heap inside it) ends, so adding and removing widgets does not pile up workers and
// memory. Put back, the same element carries on and starts a worker again when a run needs one.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, appWorkers, finish, launchLab, openPage } from "./helpers.mjs";

/** MultiHeadAttention(256, 256, 512, 0.0, 4) on 512 random tokens: ~46 MiB, over the 8 MiB that go to the worker, under the 64 MiB that run at once. */
const BIG = { call: "MultiHeadAttention(256, 256, 512, 0.0, 4)", num_tokens: "512", batch: "1", hidden: "compare checkpoint code" };

/** Counts the page's own workers as Playwright sees them (not the threaded core's pthread workers, see appWorkers): each one appears on start and closes on terminate. */
function watchWorkers(page) {
  const seen = { started: 0, closed: 0 };
  page.on("worker", (worker) => {
    if (/\/attention_core_mt\.worker\.js$/.test(worker.url())) return;
    seen.started += 1;
    worker.on("close", () => { seen.closed += 1; });
  });
  return seen;
}

/** Waits until the page holds `n` workers of its own (appWorkers) (close events arrive a little after terminate). */
async function workersBecome(page, n, timeout = 10_000) {
  const t0 = Date.now();
  while (appWorkers(page).length !== n) {
    if (Date.now() - t0 > timeout) assert.fail(`${appWorkers(page).length} workers alive after ${timeout} ms, expected ${n}`);
    await page.waitForTimeout(50);
  }
}

/** Adds a widget with id `id` and the BIG setup to the page; resolves when its first run is done. */
async function addBig(page, id) {
  await page.evaluate(([id, attrs]) => {
    const el = document.createElement("attention-lab");
    el.id = id;
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    document.querySelector("main").append(el);
  }, [id, BIG]);
  await page.waitForFunction((id) => Number(document.getElementById(id)?.dataset.runs ?? 0) >= 1, id, { timeout: 120_000 });
  const widget = page.locator(`#${id}`);
  assert.equal(await widget.getByTestId("run-error").textContent(), "");
  assert.match(await widget.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(1, 512, 256\)/);
  return widget;
}

describe("widget lifecycle", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("4 add / run in the worker / remove cycles leave no worker alive", async () => {
    const page = await openPage(lab);
    const seen = watchWorkers(page);
    assert.equal(appWorkers(page).length, 0, "the book-size page runs on the main thread");
    for (let i = 0; i < 4; i++) {
      await addBig(page, `big${i}`);
      assert.equal(appWorkers(page).length, 1, `cycle ${i}: the run went to one worker`);
      await page.evaluate((id) => document.getElementById(id).remove(), `big${i}`);
      await workersBecome(page, 0);
    }
    assert.equal(seen.started, 4);
    assert.equal(seen.closed, 4);
    // The page's own widget is untouched and still runs.
    await afterRun(page, () => page.locator("attention-lab").first().getByTestId("run").click());
    assert.match(await page.locator("attention-lab").first().locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    await finish(page);
  });

  test("removed right after an edit, before its run starts by itself, it starts no worker later", async () => {
    const page = await openPage(lab);
    await addBig(page, "edited");
    // the edit makes the trace stale: a quick setup re-runs itself 250 ms later (in the worker)
    await page.evaluate(() => {
      const el = document.getElementById("edited");
      el.setAttribute("seed", "7");
      el.remove();
    });
    await workersBecome(page, 0);
    await page.waitForTimeout(1000);  // the re-run's timer has long fired
    assert.deepEqual(page.workers().map((w) => new URL(w.url()).pathname), [], "no run worker, no pthread worker");
    await finish(page);
  });

  test("removed mid-run, the run stops with its worker; put back, the same element runs again", async () => {
    const page = await openPage(lab);
    const seen = watchWorkers(page);
    const widget = await addBig(page, "again");
    // A second run, removed while it is in the worker: the worker ends at once.
    await page.evaluate(() => {
      const el = document.getElementById("again");
      el.shadowRoot.getElementById("run").click();
      el.remove();
      window.kept = el;
    });
    await workersBecome(page, 0);
    assert.equal(seen.closed, 1);
    // Back on the page: the reader's setup is still there, and Run starts a fresh worker.
    await page.evaluate(() => document.querySelector("main").append(window.kept));
    assert.equal(await widget.getByTestId("call-box").inputValue(), BIG.call);
    await afterRun(page, () => widget.getByTestId("run").click(), "#again", 120_000);
    assert.equal(await widget.getByTestId("run-error").textContent(), "");
    assert.match(await widget.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(1, 512, 256\)/);
    assert.equal(appWorkers(page).length, 1);
    assert.equal(seen.started, 2);
    await page.evaluate(() => document.getElementById("again").remove());
    await workersBecome(page, 0);
    await finish(page);
  });
});
