// The <attention-lab> element as a host page uses it: attributes set the class and its slots (by the
// core's slot names, a class's own slots too), `locked` makes slots read-only (the call box cannot
// unlock them) and later attributes leave them alone, `hidden` hides panels, run() and the
// run-complete event; several widgets on one page each keep their own state.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage, screenshotDir } from "./helpers.mjs";

describe("the <attention-lab> widget", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("a locked embed shows its locked slots read-only, and two widgets on one page run independently", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const exercise = page.locator("#exercise");
    const causal = page.locator("#causal");
    for (const name of ["d_out", "num_heads"]) {
      const input = exercise.getByTestId(`slot-${name}`);
      assert.equal(await input.getAttribute("readonly"), "", `${name} is read-only`);
      assert.equal(await input.isEditable(), false);
    }
    assert.equal(await exercise.getByTestId("slot-d_in").isEditable(), true);
    // the call box stays open: a call naming other values keeps the locked ones (exercise-locks.test.mjs)
    assert.equal(await exercise.getByTestId("call-box").isEditable(), true);
    assert.equal(await exercise.getByTestId("preset-bookToy").isVisible(), false, "hidden panels are not shown");
    assert.equal(await exercise.getByTestId("compare-panel").isVisible(), false);
    // The causal widget ran on load; the compact exercise waits for the reader's prediction and Run.
    assert.match(await causal.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(1, 6, 2\)/);
    assert.equal(await exercise.locator("[data-stage]").count(), 0);
    await afterRun(page, () => exercise.getByTestId("run").click(), "#exercise");
    assert.match(await exercise.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    assert.equal(await exercise.getByTestId("stage-cards").isVisible(), true);
    assert.equal(await causal.getByTestId("mode-eval").isChecked(), true);
    assert.equal(await causal.locator("[data-code=dropout_eval]").count(), 1, "dropout 0.5 in eval mode is explained");
    // Editing and running one leaves the other alone.
    const runsOf = (sel) => page.evaluate((s) => document.querySelector(s).dataset.runs, sel);
    const exerciseRuns = await runsOf("#exercise");
    await causal.getByTestId("slot-d_out").fill("4");
    await afterRun(page, () => causal.getByTestId("run").click(), "#causal");
    assert.match(await causal.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(1, 6, 4\)/);
    assert.equal(await runsOf("#exercise"), exerciseRuns);
    assert.equal(await exercise.getByTestId("slot-d_out").inputValue(), "1");
    assert.match(await exercise.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    // The host page hears each run.
    const detail = await page.evaluate(() => new Promise((resolve) => {
      document.querySelector("#exercise").addEventListener("run-complete", (e) => resolve({ shape: e.detail.outputShape, cls: e.detail.className }), { once: true });
      document.querySelector("#exercise").run();
    }));
    assert.deepEqual(detail, { shape: [2, 6, 2], cls: "MultiHeadAttentionWrapper" });
    await finish(page);
  });

  test("a class's own slot (MultiHeadAttentionWithSWA's sliding_window_size) is set by attribute and locked by its core name; a later attribute reaches it unless it is locked", async () => {
    const page = await openPage(lab);
    await page.evaluate(() => {
      for (const [id, locked] of [["swa-locked", "sliding_window_size"], ["swa-open", ""]]) {
        const el = document.createElement("attention-lab");
        el.id = id;
        const attrs = { "class-name": "MultiHeadAttentionWithSWA", d_in: "3", d_out: "2", dropout: "0.0", num_heads: "2", sliding_window_size: "2", locked };
        for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
        el.setAttribute("hidden", "presets compare checkpoint code");
        document.body.append(el);
      }
    });
    for (const id of ["swa-locked", "swa-open"]) await page.locator(`#${id}[data-ready]`).waitFor();
    const lockedSlot = page.locator("#swa-locked").getByTestId("slot-sliding_window_size");
    assert.equal(await lockedSlot.inputValue(), "2");
    assert.equal(await lockedSlot.getAttribute("data-locked"), "true");
    assert.match(await page.locator("#swa-locked").locator("#call-hint").textContent(), /locks sliding_window_size/);
    // an attribute set later reaches the slot, unless the slot is locked
    await page.evaluate(() => {
      for (const id of ["swa-locked", "swa-open"]) document.getElementById(id).setAttribute("sliding_window_size", "4");
    });
    await page.waitForFunction(() => document.getElementById("swa-open").shadowRoot.getElementById("slot-sliding_window_size").value === "4");
    assert.equal(await page.locator("#swa-open").getByTestId("call-box").inputValue(), "MultiHeadAttentionWithSWA(3, 2, 0.0, 2, sliding_window_size=4)");
    assert.equal(await lockedSlot.inputValue(), "2");
    await finish(page);
  });

  test("locks win over the URL and over later attributes: url-state and class-name leave a locked exercise as it is", async () => {
    const page = await openPage(lab, "?class=CausalAttention&d_out=5&num_heads=5&d_in=3", { path: "embed.html" });
    // A url-state exercise added to a page whose URL names another class and other locked slots.
    await page.evaluate(() => {
      const el = document.createElement("attention-lab");
      el.id = "locked-url";
      el.setAttribute("url-state", "");
      el.setAttribute("call", "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
      el.setAttribute("locked", "class d_out num_heads");
      el.setAttribute("hidden", "presets compare checkpoint code");
      document.body.append(el);
    });
    const widget = page.locator("#locked-url");
    await page.locator("#locked-url[data-ready]").waitFor();
    assert.equal(await widget.getByTestId("class-select").inputValue(), "MultiHeadAttentionWrapper");
    assert.equal(await widget.getByTestId("slot-d_out").inputValue(), "1");
    assert.equal(await widget.getByTestId("slot-num_heads").inputValue(), "2");
    assert.deepEqual(await widget.evaluate((el) => el.setup), {
      className: "MultiHeadAttentionWrapper", config: { d_in: 3, d_out: 1, context_length: 6, dropout: 0, num_heads: 2 },
    });
    // back/forward to an entry naming other locked values: the unlocked slot follows, the locked ones stay
    await page.evaluate(() => {
      history.pushState(null, "", "?class=CausalAttention&d_in=4&d_out=7&num_heads=7");
      window.dispatchEvent(new PopStateEvent("popstate"));
    });
    await page.waitForFunction(() => document.querySelector("#locked-url").shadowRoot.getElementById("slot-d_in").value === "4");
    assert.equal(await widget.getByTestId("class-select").inputValue(), "MultiHeadAttentionWrapper");
    assert.equal(await widget.getByTestId("slot-d_out").inputValue(), "1");
    assert.equal(await widget.getByTestId("slot-num_heads").inputValue(), "2");
    // embed.html's exercise: a changed class-name attribute (and a locked slot's) does not break its lock
    const exercise = page.locator("#exercise");
    await page.evaluate(() => {
      const el = document.querySelector("#exercise");
      el.setAttribute("class-name", "MultiHeadAttention");
      el.setAttribute("d_out", "4");
      el.setAttribute("d_in", "3");
    });
    await page.waitForFunction(() => document.querySelector("#exercise").dataset.ready);
    assert.equal(await exercise.getByTestId("class-select").inputValue(), "MultiHeadAttentionWrapper");
    assert.equal(await exercise.getByTestId("slot-d_out").inputValue(), "1");
    assert.equal(await exercise.evaluate((el) => el.setup.className), "MultiHeadAttentionWrapper");
    await finish(page);
  });

  test("an exercise with its class unlocked, left with an error only locked slots could fix, offers its class back", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    await page.evaluate(() => {
      const el = document.createElement("attention-lab");
      el.id = "classfree";
      const attrs = { "class-name": "MultiHeadAttentionWrapper", d_in: "3", d_out: "1", context_length: "6", dropout: "0.0", num_heads: "2" };
      for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
      el.setAttribute("locked", "d_out num_heads");
      el.setAttribute("hidden", "presets compare checkpoint code");
      document.body.append(el);
    });
    const widget = page.locator("#classfree");
    await widget.locator("[data-stage=output]").waitFor();
    await widget.getByTestId("class-select").selectOption("MultiHeadAttention");
    const diag = widget.locator("[data-slot-diagnostics] .diag-error[data-code=heads_divisibility]");
    await diag.waitFor();
    assert.equal(await diag.getByTestId("fix").count(), 0, "every value fix is a locked slot");
    const back = diag.getByTestId("fix-class");
    assert.equal(await back.textContent(), "back to MultiHeadAttentionWrapper");
    await diag.screenshot({ path: `${await screenshotDir()}/exercise-back-to-class.png` });
    await back.click();
    await widget.locator("[data-slot-diagnostics] .diag-error").first().waitFor({ state: "detached" });
    assert.equal(await widget.getByTestId("class-select").inputValue(), "MultiHeadAttentionWrapper");
    assert.equal(await widget.getByTestId("run").isEnabled(), true);
    // the trace on screen is this setup's again: not stale
    assert.equal(await widget.locator("#stage-cards.stale").count(), 0);
    await finish(page);
  });

  test("el.run() resolves once the trace is on screen (also during a run), and rejects with the code for a blocked setup, firing run-error", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const outcome = await page.evaluate(async () => {
      const el = document.querySelector("#causal");
      const root = el.shadowRoot;
      const runs = () => Number(el.dataset.runs ?? 0);
      const before = runs();
      el.setAttribute("d_out", "4");  // a new setup; then two calls at once: the second one comes during the first run
      const first = el.run();
      const second = el.run();
      const [a, b] = await Promise.all([first, second]);
      const onScreen = root.querySelector("[data-stage=output] [data-testid=output-summary]")?.textContent ?? "";
      // a blocked setup: d_in = 3.0 is a float to Python
      const heard = [];
      el.addEventListener("run-error", (e) => heard.push(e.detail));
      el.setAttribute("d_in", "3.0");
      let rejected = null;
      try {
        await el.run();
      } catch (err) {
        rejected = { name: err.name, code: err.code, slot: err.slot };
      }
      return { a: a?.outputShape, b: b?.outputShape, onScreen, runsAdded: runs() - before, rejected, heard: heard.map((d) => ({ code: d.code, slot: d.slot })) };
    });
    assert.deepEqual(outcome.a, [1, 6, 4]);
    assert.deepEqual(outcome.b, [1, 6, 4], "the call during the run resolves with the same trace");
    assert.match(outcome.onScreen, /\(1, 6, 4\)/);
    assert.ok(outcome.runsAdded >= 1 && outcome.runsAdded <= 2, `${outcome.runsAdded} runs`);
    assert.deepEqual(outcome.rejected, { name: "AttentionError", code: "wrong_type", slot: "d_in" });
    assert.deepEqual(outcome.heard, [{ code: "wrong_type", slot: "d_in" }]);
    await finish(page);
  });
  test("hidden: an empty hidden (el.hidden = true) hides the whole element, also without the page's CSS; hidden=\"compare code\" hides those panels only (measured)", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const measure = () => page.evaluate(() => {
      const el = document.querySelector("#causal");
      const panel = (name) => el.shadowRoot.querySelector(`[data-panel=${name}]`).getBoundingClientRect().height;
      return { display: getComputedStyle(el).display, height: el.getBoundingClientRect().height, code: panel("code"), compare: panel("compare"), trace: panel("trace") };
    });
    const set = (value) => page.evaluate((v) => {
      const el = document.querySelector("#causal");
      if (v === null) el.removeAttribute("hidden");
      else if (v === true) el.hidden = true;
      else el.setAttribute("hidden", v);
    }, value);
    await set("compare code");
    const panels = await measure();
    assert.equal(panels.display, "block");
    assert.ok(panels.height > 500, `${panels.height} px`);
    assert.equal(panels.code, 0);
    assert.equal(panels.compare, 0);
    assert.ok(panels.trace > 100, `the trace is ${panels.trace} px`);
    for (const value of ["", true, "hidden"]) {
      await set(value);
      assert.deepEqual(await measure(), { display: "none", height: 0, code: 0, compare: 0, trace: 0 }, `hidden=${JSON.stringify(value)}`);
    }
    await set(null);
    const shown = await measure();
    assert.ok(shown.code > 50 && shown.trace > 100, JSON.stringify(shown));
    // A host page without page.css (no rule of its own for the element): the widget's own CSS hides it.
    await page.evaluate(() => document.querySelector("link[href='app/page.css']").remove());
    await set("");
    assert.equal((await measure()).height, 0);
    await set("code");
    assert.ok((await measure()).height > 500);
    await finish(page);
  });

  test("each theming custom property changes what it names: --al-accent, --al-bg, --al-panel, --al-ink, --al-muted, --al-line, --al-font", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    const read = () => page.evaluate(() => {
      const el = document.querySelector("#causal");
      const root = el.shadowRoot;
      const css = (node) => getComputedStyle(node);
      return {
        "--al-accent": css(root.getElementById("run")).backgroundColor,
        "--al-bg": css(el).backgroundColor,
        "--al-panel": css(root.getElementById("setup")).backgroundColor,
        "--al-ink": css(root.getElementById("setup-heading")).color,
        "--al-muted": css(root.getElementById("call-hint")).color,
        "--al-line": css(root.getElementById("setup")).borderTopColor,
        "--al-font": css(root.getElementById("setup-heading")).fontFamily,
      };
    });
    const before = await read();
    assert.equal(before["--al-bg"], "rgba(0, 0, 0, 0)", "no background of its own by default");
    const theme = {
      "--al-accent": "rgb(200, 10, 10)", "--al-bg": "rgb(10, 20, 30)", "--al-panel": "rgb(40, 50, 60)", "--al-ink": "rgb(240, 240, 200)",
      "--al-muted": "rgb(150, 160, 170)", "--al-line": "rgb(1, 2, 3)", "--al-font": "Georgia, serif",
    };
    await page.evaluate((t) => { for (const [k, v] of Object.entries(t)) document.querySelector("#causal").style.setProperty(k, v); }, theme);
    const after = await read();
    for (const [prop, value] of Object.entries(theme)) {
      assert.notEqual(after[prop], before[prop], `${prop} changed nothing`);
      assert.equal(after[prop], value, prop);
    }
    await finish(page);
  });

  test("a locked seed (and batch, tokens, mode, class) shows the lock badge like a locked slot", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    await page.evaluate(() => {
      const el = document.createElement("attention-lab");
      el.id = "seedlock";
      el.setAttribute("call", "CausalAttention(3, 2, 6, 0.0)");
      el.setAttribute("seed", "7");
      el.setAttribute("locked", "seed batch tokens mode");
      el.setAttribute("hidden", "presets compare checkpoint code");
      document.querySelector("main").append(el);
    });
    await page.locator("#seedlock[data-ready]").waitFor();
    const widget = page.locator("#seedlock");
    for (const name of ["seed", "batch", "tokens", "mode"]) {
      const badge = widget.getByTestId(`lock-${name}`);
      assert.equal(await badge.isVisible(), true, name);
      assert.equal(await badge.textContent(), "locked");
      assert.equal(await badge.getAttribute("class"), "slot-lock", "the slot cards' badge");
    }
    assert.equal(await widget.getByTestId("seed").inputValue(), "7");
    assert.equal(await widget.getByTestId("seed").isEditable(), false);
    assert.equal(await widget.getByTestId("lock-class").count(), 0, "the class is not locked here");
    assert.equal(await widget.getByTestId("lock-d_out").count(), 0);
    assert.equal(await page.locator("#exercise").getByTestId("lock-class").isVisible(), true);
    assert.equal(await page.locator("#exercise").getByTestId("lock-d_out").isVisible(), true);
    await finish(page);
  });

  test("setup-change fires (bubbling, composed) on start and whenever an edit or attribute changes the setup: an invalid setup says so with the core's diagnostics", async () => {
    const page = await openPage(lab, "", { path: "embed.html" });
    await page.evaluate(() => {
      window.heard = [];
      document.addEventListener("setup-change", (e) => window.heard.push({ target: e.target.id, ...e.detail }));
      const el = document.createElement("attention-lab");
      el.id = "events";
      el.setAttribute("call", "MultiHeadAttention(3, 2, 6, 0.0, 2)");
      el.setAttribute("hidden", "presets compare checkpoint code");
      document.querySelector("main").append(el);
    });
    await page.locator("#events[data-ready]").waitFor();
    const heard = () => page.evaluate(() => window.heard.filter((e) => e.target === "events"));
    const first = await heard();
    assert.equal(first.length, 1);
    assert.deepEqual(first[0], {
      target: "events", valid: true, reason: "", className: "MultiHeadAttention",
      config: { d_in: 3, d_out: 2, context_length: 6, dropout: 0, num_heads: 2 }, diagnostics: [],
    });
    // an attribute that makes it invalid: d_out = 3 is not divisible by num_heads = 2
    await page.evaluate(() => document.querySelector("#events").setAttribute("d_out", "3"));
    let all = await heard();
    assert.equal(all.length, 2);
    assert.equal(all[1].valid, false);
    assert.match(all[1].reason, /error/);
    const diag = all[1].diagnostics.find((d) => d.code === "heads_divisibility");
    assert.ok(diag, JSON.stringify(all[1].diagnostics));
    assert.equal(diag.severity, "error");
    assert.equal(diag.slot, "d_out");
    assert.deepEqual(diag.slots, ["d_out", "num_heads"]);
    assert.match(diag.message, /divisible/);
    assert.ok(diag.hint.length > 0);
    // a reader's edit: a float where an int goes
    await page.locator("#events").getByTestId("slot-d_out").fill("4");
    await page.locator("#events").getByTestId("slot-d_in").fill("3.0");
    all = await heard();
    assert.equal(all.at(-1).valid, false);
    assert.deepEqual(all.at(-1).diagnostics.map((d) => [d.code, d.slot]), [["wrong_type", "d_in"]]);
    assert.equal(all.at(-2).valid, true, "d_out = 4 was valid again");
    assert.deepEqual(all.at(-2).config, { d_in: 3, d_out: 4, context_length: 6, dropout: 0, num_heads: 2 });
    // an edit that does not change the setup (the prediction) fires nothing
    const count = all.length;
    await page.locator("#events").getByTestId("prediction").fill("(2, 6, 4)");
    assert.equal((await heard()).length, count);
    await finish(page);
  });
});
