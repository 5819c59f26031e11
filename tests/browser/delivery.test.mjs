// Lean delivery: the WebAssembly binary comes as its own file (compiled while it streams in), and the
// code of the panels below the trace (compare, checkpoint) is left out of the first view: it loads
// when a panel comes near the viewport or once the page is idle after its first output; the whole
// GPT-2's section with the first file chosen.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { finish, launchLab, openPage } from "./helpers.mjs";

describe("delivery", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("the first output comes before the compare and checkpoint code is even requested; both panels then fill in", async () => {
    await lab.context.addInitScript(() => {
      document.addEventListener("run-complete", () => { window.__firstOutputAt ??= performance.now(); });
    });
    const page = await openPage(lab);
    await page.waitForFunction(() => window.__firstOutputAt !== undefined);
    const compareBody = page.getByTestId("compare-panel").locator(".compare-body > *").first();
    await compareBody.waitFor({ state: "attached", timeout: 15_000 });
    await page.getByTestId("checkpoint-panel").locator(".checkpoint-body > *").first().waitFor({ state: "attached", timeout: 15_000 });
    const timing = await page.evaluate(() => {
      const at = (name) => performance.getEntriesByType("resource").find((e) => e.name.endsWith(name));
      return {
        firstOutput: window.__firstOutputAt,
        compare: at("/app/compare-panel.js")?.startTime,
        checkpoint: at("/app/checkpoint-panel.js")?.startTime,
        gpt2: at("/app/gpt2-panel.js")?.startTime ?? null,
        wasms: performance.getEntriesByType("resource").filter((e) => /\/lib\/attention_core[\w]*\.wasm$/.test(e.name)).map((e) => [new URL(e.name).pathname, e.decodedBodySize]),
        kernel: document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=run-reason]")?.dataset.kernel,
        mjs: at("/lib/attention_core.mjs")?.decodedBodySize,
      };
    });
    assert.ok(timing.compare > timing.firstOutput, `compare-panel.js requested at ${timing.compare} ms, first output at ${timing.firstOutput} ms`);
    assert.ok(timing.checkpoint > timing.firstOutput, `checkpoint-panel.js requested at ${timing.checkpoint} ms`);
    // the whole model's section (and its generation) comes with the first file chosen (gpt2.test.mjs)
    assert.equal(timing.gpt2, null, "gpt2-panel.js is not fetched before a file is chosen");
    // one binary fetched: Chromium has relaxed SIMD, so the fused multiply-add one (issue 21.3); on one
    // thread, although npm start's server makes the page cross-origin isolated: the page's main thread
    // runs small forwards only (its run worker, for big ones, loads the threaded build: threads.test.mjs);
    // and lean (<attention-lab lean>): the checkpoint readers run in that worker too
    assert.deepEqual(timing.wasms.map(([name]) => name), ["/lib/attention_core_lean_fma.wasm"]);
    assert.ok(timing.wasms[0][1] > 400_000, `the binary is its own file (${timing.wasms[0][1]} bytes)`);
    assert.equal(timing.kernel, "relaxed_madd", "the run panel says which binary runs");
    assert.ok(timing.mjs < 100_000, `the glue module holds no inlined binary (${timing.mjs} bytes)`);
    await finish(page);
  });

  test("runs in the worker re-seed every time: a kept eval module and a fresh training one give the same bits run after run", async () => {
    // 4 heads x 512^2 x 4 traced stages: over the 8 MiB a page runs on its own thread
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=64&d_out=64&context_length=512&dropout=0.5&num_heads=4&seed=7&num_tokens=512&batch=1");
    assert.match(await page.getByTestId("token-diagnostics").textContent(), /runs in the background/);
    const outputs = await page.evaluate(async () => {
      const el = document.querySelector("attention-lab");
      const run = () => new Promise((resolve, reject) => {
        el.addEventListener("run-complete", (e) => resolve(Array.from(e.detail.output.data.slice(0, 64))), { once: true });
        el.addEventListener("run-error", (e) => reject(new Error(e.detail.message)), { once: true });
        el.run();
      });
      const train = [await run(), await run()];
      el.shadowRoot.querySelector("[data-testid=mode-eval]").click();
      const evalRuns = [await run(), await run()];
      return { train, evalRuns };
    });
    assert.deepEqual(outputs.train[1], outputs.train[0], "training with dropout: the same seed, the same mask");
    assert.deepEqual(outputs.evalRuns[1], outputs.evalRuns[0], "eval: the kept module gives the same output");
    assert.notDeepEqual(outputs.evalRuns[0], outputs.train[0], "dropout acted in training mode");
    await finish(page);
  });
});
