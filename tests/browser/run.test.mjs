// The run panel's calls into the core (issue 17, item 2): an edit makes one Setup, a Run click at most
// two calls (a Setup when the edit's is not computed yet, and one run); counted by wrapping every
// function of the raw core object the facade holds (lab._core).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage } from "./helpers.mjs";

/** Wraps every function of the page's core (the facade's lab._core) so that each call is recorded by name. */
async function countCoreCalls(page) {
  await page.evaluate(async () => {
    const { loadAttentionLab } = await import(new URL("lib/attention-lab.js", document.baseURI).href);
    const core = (await loadAttentionLab())._core;
    window.coreCalls = [];
    for (const name of Object.keys(core)) {
      const f = core[name];
      if (typeof f !== "function" || f.counted) continue;
      const counted = (...args) => {
        window.coreCalls.push(name);
        return f.apply(core, args);
      };
      counted.counted = true;
      core[name] = counted;
    }
  });
}

const takeCalls = (page) => page.evaluate(() => window.coreCalls.splice(0));

describe("run panel: calls into the core", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("one Run click on MultiHeadAttention(3, 2, 6, 0.0, 2) makes at most two core calls; an edit of one slot makes one setup", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=3&d_out=2&context_length=6&dropout=0.0&num_heads=2");
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(3, 2, 6, 0.0, 2)");
    await countCoreCalls(page);

    await afterRun(page, () => page.getByTestId("run").click());
    const click = await takeCalls(page);
    assert.ok(click.length <= 2, `one Run click made ${click.length} core calls: ${click.join(", ")}`);
    assert.deepEqual(click.filter((n) => n === "runModule"), ["runModule"], "one run");
    assert.ok(!click.some((n) => ["describe", "check", "estimateBytes", "create", "forward", "manualSeed"].includes(n)), click.join(", "));
    assert.equal(await page.locator("[data-stage=output]").count(), 1);

    // An edit of one slot: one setup (the call box is parsed, and the cheap run of it follows by itself).
    await afterRun(page, () => page.getByTestId("slot-d_out").fill("4"));
    const edit = await takeCalls(page);
    assert.equal(edit.filter((n) => n === "setup").length, 1, `an edit made: ${edit.join(", ")}`);
    assert.ok(!edit.some((n) => ["describe", "check", "estimateBytes"].includes(n)), edit.join(", "));
    assert.match(await page.getByTestId("output-width").textContent(), /^4$/);

    // And a Run click on the edited setup: its Setup is already there, so one call.
    await afterRun(page, () => page.getByTestId("run").click());
    assert.deepEqual(await takeCalls(page), ["runModule"]);
    await finish(page);
  });

  test("one status at a time: while the button says Running…, the line beside it does not say Ready", async () => {
    const page = await openPage(lab);
    const seen = await page.evaluate(async () => {
      const el = document.querySelector("attention-lab");
      const root = el.shadowRoot;
      const pairs = [];
      const note = () => pairs.push([root.getElementById("run").textContent, root.getElementById("run-reason").textContent]);
      const watch = new MutationObserver(note);
      watch.observe(root.getElementById("run"), { childList: true, characterData: true, subtree: true });
      root.getElementById("slot-d_out").value = "4";
      root.getElementById("slot-d_out").dispatchEvent(new Event("input"));
      await el.run();
      note();
      watch.disconnect();
      return pairs;
    });
    const during = seen.filter(([button]) => button === "Running…");
    assert.ok(during.length > 0, JSON.stringify(seen));
    for (const [, reason] of during) assert.doesNotMatch(reason, /Ready/);
    assert.match(seen.at(-1)[1], /^Ready/);
    await finish(page);
  });
});
