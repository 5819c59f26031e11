// Issue 39, item 7: a page of GPT-2-sized widgets. A widget whose run goes to the run worker starts
// that worker, and reserves its run's heap, only once it is in view (or Run is pressed), and the page's
// reservations together stay within the core's budget: the warm workers of widgets scrolled away end
// first (page-memory.js). Every widget removed, the run workers and their pthread workers end, and the
// browser's memory goes back. Memory is the browser's resident set (its processes in /proc).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { loadAttentionLab } from "attention-lab";
import { browserRss, finish, launchLab, openPage } from "./helpers.mjs";

const MIB = 1048576;
const CALL = "MultiHeadAttention(768, 768, 1024, 0.0, 12)";
/** GPT-2 small's attention on 1,024 random tokens, batch 2: each widget's run goes to its worker. */
const GPT2 = { call: CALL, num_tokens: "1024", hidden: "presets compare checkpoint code" };
const node = await loadAttentionLab();
/** What a warm-up reserves for one such widget (its lazy run's estimate) and the core's budget. */
const { bytes: RUN_BYTES, budget: BUDGET } = node.estimateBytes("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }, [2, 1024, 768], { trace: "lazy" });

/** The page's ledger (page-memory.js, the app's own instance) and its widgets' runners: what each worker holds. */
const ledger = (page) => page.evaluate(async () => {
  const { pageMemory } = await import("/app/page-memory.js");
  const widgets = [...document.querySelectorAll("attention-lab[id^=g]")];
  return { total: pageMemory.total, workers: pageMemory.workers, reserved: Object.fromEntries(widgets.map((el) => [el.id, el.view.runner.reserved])) };
});

/** Every worker of the page, the run workers' pthread workers included, by file name. */
const workerFiles = (page) => page.workers().map((w) => new URL(w.url()).pathname.split("/").pop()).sort();

/** Polls `check` until it gives a truthy value (returned); fails after `timeout` ms, saying `what` (a string, or a function giving one). */
async function until(check, what, timeout = 60_000) {
  const t0 = Date.now();
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() - t0 > timeout) assert.fail(`${typeof what === "function" ? what() : what}: not after ${timeout} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("page memory", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("8 GPT-2-sized widgets out of view start no worker; in view each reserves its run, at most the budget in all; removed, every worker and its memory go", async () => {
    assert.ok(RUN_BYTES > 400 * MIB && 3 * RUN_BYTES <= BUDGET && 4 * RUN_BYTES > BUDGET, `${RUN_BYTES} bytes a run: three fit the ${BUDGET} budget, four do not`);
    const page = await openPage(lab);
    const baseline = browserRss(lab);
    await page.evaluate((attrs) => {
      for (let i = 0; i < 8; i++) {
        const el = document.createElement("attention-lab");
        el.id = `g${i}`;
        // 1,800 px tall: centred in the 800 px view, only it is within the half-screen margin of view
        el.style.display = "block";
        el.style.minHeight = "1800px";
        for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
        document.querySelector("main").append(el);
      }
    }, GPT2);
    await page.waitForFunction(() => [...document.querySelectorAll("attention-lab[id^=g]")].every((el) => el.dataset.ready), null, { timeout: 60_000 });
    await page.waitForTimeout(500);  // the view observers have answered
    assert.deepEqual(workerFiles(page), [], "no worker for a widget out of view");
    assert.deepEqual(await ledger(page), { total: 0, workers: 0, reserved: Object.fromEntries([...Array(8)].map((_, i) => [`g${i}`, 0])) });
    const loaded = browserRss(lab) - baseline;
    assert.ok(loaded < 300 * MIB, `8 widgets took ${Math.round(loaded / MIB)} MiB with no click (when each reserved its run: 5 GB)`);

    // Scrolled to in turn: each reserves its run's estimate; the fourth finds the budget full and ends
    // the first's warm worker (out of view, holding no trace).
    for (const [i, expected] of [[0, ["g0"]], [1, ["g0", "g1"]], [2, ["g0", "g1", "g2"]], [3, ["g1", "g2", "g3"]]]) {
      await page.evaluate((id) => document.getElementById(id).scrollIntoView({ block: "center" }), `g${i}`);
      await until(async () => (await ledger(page)).reserved[`g${i}`] === RUN_BYTES, `g${i}'s reservation`);
      const l = await ledger(page);
      assert.deepEqual(Object.keys(l.reserved).filter((id) => l.reserved[id] > 0), expected);
      assert.equal(l.total, expected.length * RUN_BYTES);
      assert.ok(l.total <= BUDGET);
      await until(() => workerFiles(page).filter((f) => f === "run-worker.js").length === expected.length, `${expected.length} run workers`, 10_000);
    }
    const reserved = browserRss(lab) - baseline;
    // three reservations, and each run worker's own ~130 MiB (code, thread, warm-up); 8 reservations took 5 GB
    assert.ok(reserved < BUDGET + 600 * MIB, `the page took ${Math.round(reserved / MIB)} MiB`);

    // The last widget gone (the page's own too), its run worker and that worker's threads end with their memory.
    await page.evaluate(() => document.querySelectorAll("attention-lab").forEach((el) => el.remove()));
    await until(() => workerFiles(page).length === 0, "every worker ended", 15_000);
    assert.equal((await ledger(page)).total, 0);
    // the workers' memory is given back to the system a moment after they end
    await until(() => browserRss(lab) - baseline < 150 * MIB, () => `the browser back within 150 MiB of where it started (${Math.round((browserRss(lab) - baseline) / MIB)} MiB above)`, 15_000);
    await finish(page);
  });
});
