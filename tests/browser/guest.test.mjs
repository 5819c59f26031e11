// The element as a guest on someone else's page: a Reveal.js deck's shortcuts do not see the keys typed
// in the widget; a hidden widget loads and runs nothing until shown; a page whose Content-Security-Policy
// or Trusted Types stop the widget hears why (load-error, el.run()'s rejection) with what to change, and
// so does a page calling loadAttentionLab itself under that CSP.
// Each host page is served by the test (page.route) with the headers it needs; Reveal.js comes from
// node_modules (a pinned devDependency).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, afterRun, appWorkers, finish, launchLab } from "./helpers.mjs";

const REVEAL = path.join(ROOT, "node_modules", "reveal.js", "dist");
const TYPES = { ".css": "text/css", ".mjs": "text/javascript", ".js": "text/javascript" };

/** A host page at `${lab.url}${name}` with `body` and the response `headers`; the widget's own files come from the server. */
async function hostPage(lab, name, body, { headers = {}, init, viewport } = {}) {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${name}</title>
<script type="module" src="app/attention-lab-element.js"></script></head><body>${body}</body></html>`;
  const page = await lab.context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  if (init) await page.addInitScript(init);
  page.problems = [];
  page.on("pageerror", (err) => page.problems.push(`page error: ${err.message}`));
  page.on("console", (msg) => { if (msg.type() === "error") page.problems.push(`console error: ${msg.text()}`); });
  page.wasm = [];
  page.on("request", (req) => { if (/\.wasm$/.test(new URL(req.url()).pathname)) page.wasm.push(req.url()); });
  await page.route(`${lab.url}${name}`, (route) => route.fulfill({ contentType: "text/html", headers, body: html }));
  await page.route(`${lab.url}reveal/**`, async (route) => {
    const file = path.join(REVEAL, new URL(route.request().url()).pathname.replace(/^\/reveal\//, ""));
    route.fulfill({ contentType: TYPES[path.extname(file)] ?? "application/octet-stream", body: await readFile(file) });
  });
  await page.goto(`${lab.url}${name}`);
  return page;
}

/** Records every load-error the page hears (run before the page's own scripts). */
function recordLoadErrors() {
  window.__loadErrors = [];
  document.addEventListener("load-error", (e) => window.__loadErrors.push({ target: e.target.id, ...e.detail }));
}

/** el.run()'s outcome on the widget `id`: the detail's output shape, or the rejection's fields. */
function runOutcome(page, id) {
  return page.evaluate((id) => document.getElementById(id).run().then(
    (d) => ({ ok: true, shape: d.outputShape }),
    (e) => ({ ok: false, name: e.name, code: e.code, message: e.message, hint: e.hint }),
  ), id);
}

describe("the element as a guest", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("in a Reveal.js deck, typing 0.5 into dropout and Space in the field leave the deck on its slide; Space and Enter on Run run, other keys reach the deck", async () => {
    const page = await hostPage(lab, "deck.html", `<link rel="stylesheet" href="reveal/reveal.css">
<div class="reveal"><div class="slides">
  <section><attention-lab id="w" call="CausalAttention(3, 2, 6, 0.0)" mode="eval" layout="compact" hidden="presets facts tokens compare checkpoint code"></attention-lab></section>
  <section><h2>The next slide</h2></section>
</div></div>
<script type="module">import Reveal from "./reveal/reveal.mjs"; Reveal.initialize({ hash: false, transition: "none" }).then(() => { window.deck = Reveal; });</script>`);
    await page.waitForFunction(() => window.deck && document.getElementById("w").dataset.ready);
    const deck = () => page.evaluate(() => ({ slide: window.deck.getIndices().h, paused: window.deck.isPaused() }));
    const widget = page.locator("#w");
    const dropout = widget.getByTestId("slot-dropout");
    // The deck hears keys typed outside the widget ("." blacks the slide out, ArrowRight moves on): the checks below can fail.
    await page.locator("h2").first().evaluate(() => document.body.focus());
    await page.keyboard.press(".");
    assert.deepEqual(await deck(), { slide: 0, paused: true });
    await page.keyboard.press(".");
    await page.keyboard.press("ArrowRight");
    assert.deepEqual(await deck(), { slide: 1, paused: false });
    await page.keyboard.press("ArrowLeft");
    assert.deepEqual(await deck(), { slide: 0, paused: false });
    // Typed into the widget's dropout field: the field has the text, the deck stays.
    await dropout.focus();
    await page.keyboard.press("Control+A");
    await page.keyboard.type("0.5");
    assert.equal(await dropout.inputValue(), "0.5");
    assert.deepEqual(await deck(), { slide: 0, paused: false });
    assert.equal(await widget.evaluate((el) => el.setup.config.dropout), 0.5);
    await page.keyboard.press("Space");
    await page.keyboard.press("ArrowRight");
    assert.equal(await dropout.inputValue(), "0.5 ");
    assert.deepEqual(await deck(), { slide: 0, paused: false });
    await page.keyboard.press("Backspace");
    // Space and Enter on the Run button run the module (its own keys), and the deck stays.
    await widget.getByTestId("run").focus();
    await afterRun(page, () => page.keyboard.press("Space"), "#w");
    await afterRun(page, () => page.keyboard.press("Enter"), "#w");
    assert.equal(await widget.evaluate((el) => el.dataset.runs), "2");
    assert.match(await widget.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    assert.deepEqual(await deck(), { slide: 0, paused: false });
    // A key the button does not use is the deck's, as without the widget.
    await widget.getByTestId("run").focus();
    await page.keyboard.press(".");
    assert.deepEqual(await deck(), { slide: 0, paused: true });
    await finish(page);
  });

  test("a compact exercise (facts and tokens hidden) fits a 1280 x 720 Reveal.js slide before and after its run: setup and run beside the trace, the slide's centring not inherited", async () => {
    const page = await hostPage(lab, "slide.html", `<link rel="stylesheet" href="reveal/reveal.css"><link rel="stylesheet" href="reveal/theme/white.css">
<div class="reveal"><div class="slides"><section>
  <attention-lab id="w" call="MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)" locked="class d_out num_heads" layout="compact" hidden="presets facts tokens compare checkpoint code"></attention-lab>
</section></div></div>
<script type="module">import Reveal from "./reveal/reveal.mjs"; Reveal.initialize({ hash: false, transition: "none", width: 1280, height: 720, margin: 0 }).then(() => { window.deck = Reveal; });</script>`,
    { viewport: { width: 1280, height: 720 } });
    await page.waitForFunction(() => window.deck && document.getElementById("w").dataset.ready);
    assert.equal(await page.evaluate(() => window.deck.getScale()), 1);
    const widget = page.locator("#w");
    const fits = async (when) => {
      const box = await widget.boundingBox();
      assert.ok(box.y >= 0 && box.y + box.height <= 720 && box.width <= 1280, `${when}: ${JSON.stringify(box)}`);
      const setup = await widget.locator("#setup").boundingBox();
      const trace = await widget.locator("#trace").boundingBox();
      assert.ok(trace.x >= setup.x + setup.width && Math.abs(trace.y - setup.y) < 1, `${when}: the trace beside the setup ${JSON.stringify({ setup, trace })}`);
      return box.height;
    };
    const before = await fits("before the run");
    // Reveal centres a slide's text (.reveal .slides { text-align: center }): the widget's own stays at the start
    const heading = await widget.locator("#setup-heading").evaluate((h) => ({ align: getComputedStyle(h).textAlign, indent: h.getBoundingClientRect().x - h.parentElement.getBoundingClientRect().x }));
    assert.equal(heading.align, "start");
    assert.ok(heading.indent < 20, `the heading starts ${heading.indent} px into its panel`);
    await widget.getByTestId("prediction").fill("(2, 6, 2)");
    await afterRun(page, () => widget.getByTestId("run").click(), "#w");
    assert.equal(await widget.locator("[data-stage].open").getAttribute("data-stage"), "output");
    const after = await fits("after the run, its output open");
    assert.ok(after > before, `${before} -> ${after} px`);
    await finish(page);
  });

  test("a hidden widget (hidden, in a display: none section, in a closed details) loads no core and runs nothing until shown; el.run() starts one that is hidden", async () => {
    const page = await hostPage(lab, "hidden.html", `<attention-lab id="a" hidden call="CausalAttention(3, 2, 6, 0.0)"></attention-lab>
<section id="fold" hidden><attention-lab id="b" call="SelfAttention_v2(3, 2)"></attention-lab></section>
<details id="more"><summary>More</summary><attention-lab id="d" call="SelfAttention_v1(3, 2)"></attention-lab></details>`);
    const state = (id) => page.evaluate((id) => {
      const el = document.getElementById(id);
      return { ready: el.dataset.ready ?? null, runs: el.dataset.runs ?? null, setup: el.setup, status: el.shadowRoot?.getElementById("status").textContent ?? null };
    }, id);
    await page.waitForFunction(() => ["a", "b", "d"].every((id) => document.getElementById(id).shadowRoot));
    await page.waitForTimeout(2000); // time enough for a widget that did not wait to load the core and run
    const waiting = { ready: null, runs: null, setup: null, status: "" };
    assert.deepEqual(await state("a"), waiting);
    assert.deepEqual(await state("b"), waiting);
    assert.deepEqual(await state("d"), waiting);
    assert.deepEqual(page.wasm, [], "no .wasm requested while every widget is hidden");
    // Shown: it loads and runs as any widget does on load.
    await page.evaluate(() => { document.getElementById("a").hidden = false; });
    await page.waitForFunction(() => document.getElementById("a").dataset.runs === "1", null, { timeout: 60_000 });
    assert.equal(page.wasm.length, 1, page.wasm.join(" "));
    assert.match(await page.locator("#a").locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 2\)/);
    assert.deepEqual(await state("b"), waiting, "its section is still display: none");
    await page.evaluate(() => { document.getElementById("fold").hidden = false; });
    await page.waitForFunction(() => document.getElementById("b").dataset.runs === "1", null, { timeout: 60_000 });
    assert.deepEqual((await state("b")).setup, { className: "SelfAttention_v2", config: { d_in: 3, d_out: 2 } });
    assert.deepEqual(await state("d"), waiting, "its details is still closed");
    await page.evaluate(() => { document.getElementById("more").open = true; });
    await page.waitForFunction(() => document.getElementById("d").dataset.runs === "1", null, { timeout: 60_000 });
    assert.match(await page.locator("#d").locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(6, 2\)/);
    // el.run() is a request to run: a widget added hidden starts for it and resolves with the run.
    await page.evaluate(() => {
      const el = document.createElement("attention-lab");
      el.id = "c";
      el.hidden = true;
      el.setAttribute("call", "MultiHeadAttention(3, 4, 6, 0.0, 2)");
      el.setAttribute("autorun", "off");
      document.body.append(el);
    });
    assert.deepEqual(await runOutcome(page, "c"), { ok: true, shape: [2, 6, 4] });
    await finish(page);
  });

  test("a CSP without 'wasm-unsafe-eval': load-error and el.run() carry wasm_csp with the directive to add, and the widget says so", async () => {
    const csp = "default-src 'self'; script-src 'self'; style-src 'self'";
    const page = await hostPage(lab, "csp.html", `<attention-lab id="w"></attention-lab>`, { headers: { "Content-Security-Policy": csp }, init: recordLoadErrors });
    await page.locator("#w[data-load-error]").waitFor({ timeout: 60_000 });
    assert.equal(await page.locator("#w").getAttribute("data-load-error"), "wasm_csp");
    const heard = await page.evaluate(() => window.__loadErrors);
    assert.equal(heard.length, 1, JSON.stringify(heard));
    assert.equal(heard[0].target, "w");
    assert.equal(heard[0].code, "wasm_csp");
    assert.match(heard[0].message, /Content-Security-Policy does not let WebAssembly compile \('wasm-unsafe-eval' is missing/);
    assert.match(heard[0].hint, /Add 'wasm-unsafe-eval' to the script-src directive .*script-src 'self' 'wasm-unsafe-eval'/);
    const outcome = await runOutcome(page, "w");
    assert.deepEqual(outcome, { ok: false, name: "AttentionError", code: "wasm_csp", message: heard[0].message, hint: heard[0].hint });
    const status = await page.locator("#w").getByTestId("status").textContent();
    assert.ok(status.includes(heard[0].message) && status.includes(heard[0].hint), status);
    // What the browser reports is the CSP's refusal only; nothing was thrown uncaught.
    const unexpected = page.problems.filter((p) => !/Refused to compile or instantiate WebAssembly module because 'unsafe-eval' is not an allowed source/.test(p) && !/wasm-unsafe-eval/.test(p));
    assert.deepEqual(unexpected, []);
    await page.close();
  });

  test("a CSP without 'wasm-unsafe-eval', loadAttentionLab called directly: it rejects with wasm_csp and the directive to add, not wasm_binary, for the default load and for wasmBinary", async () => {
    const page = await hostPage(lab, "csp-lib.html", "", { headers: { "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'" } });
    const outcomes = await page.evaluate(async () => {
      const { loadAttentionLab } = await import("/lib/attention-lab.js");
      const fields = (e) => ({ name: e.name, code: e.code, slot: e.slot, message: e.message, hint: e.hint });
      const first = await loadAttentionLab().then(() => null, fields);
      const bytes = await (await fetch("/lib/attention_core.wasm")).arrayBuffer();
      const second = await loadAttentionLab({ wasmBinary: bytes }).then(() => null, fields);
      return [first, second];
    });
    for (const outcome of outcomes) {
      assert.deepEqual({ ...outcome, message: "", hint: "" }, { name: "AttentionError", code: "wasm_csp", slot: "", message: "", hint: "" });
      assert.match(outcome.message, /Content-Security-Policy does not let WebAssembly compile \('wasm-unsafe-eval' is missing/);
      assert.match(outcome.hint, /Add 'wasm-unsafe-eval' to the script-src directive .*script-src 'self' 'wasm-unsafe-eval'/);
    }
    await page.close();
  });

  /** A widget whose first run (MultiHeadAttention(64, 64, 256, 0.0, 4) on 256 tokens, ~10 MiB traced) goes to the Worker. */
  const WORKER_RUN = `<attention-lab id="w" call="MultiHeadAttention(64, 64, 256, 0.0, 4)" num_tokens="256" batch="1" mode="eval" hidden="presets compare checkpoint code"></attention-lab>`;
  const TT = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; style-src 'self'; require-trusted-types-for 'script'";

  test("under Trusted Types (require-trusted-types-for 'script') the widget starts its Worker through its policy attention-lab and runs there", async () => {
    const page = await hostPage(lab, "tt.html", WORKER_RUN, { headers: { "Content-Security-Policy": TT }, init: recordLoadErrors });
    await page.waitForFunction(() => document.getElementById("w").dataset.runs === "1", null, { timeout: 120_000 });
    assert.match(await page.locator("#w").locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(1, 256, 64\)/);
    assert.deepEqual(appWorkers(page).map((w) => new URL(w.url()).pathname), ["/app/run-worker.js"]);
    assert.deepEqual(await page.evaluate(() => window.__loadErrors), []);
    await finish(page);
  });

  test("Trusted Types that refuse the policy attention-lab: load-error says trusted_types and the entry to add, and the runs stay on the page's thread", async () => {
    const page = await hostPage(lab, "tt-refused.html", WORKER_RUN, { headers: { "Content-Security-Policy": `${TT}; trusted-types host-policy` }, init: recordLoadErrors });
    await page.waitForFunction(() => document.getElementById("w").dataset.runs === "1", null, { timeout: 120_000 });
    assert.match(await page.locator("#w").locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(1, 256, 64\)/);
    assert.deepEqual(appWorkers(page), [], "no Worker started");
    const heard = await page.evaluate(() => window.__loadErrors);
    assert.equal(heard.length, 1, JSON.stringify(heard));
    assert.equal(heard[0].code, "trusted_types");
    assert.match(heard[0].message, /requires Trusted Types and does not allow the policy "attention-lab"/);
    assert.match(heard[0].hint, /Add attention-lab to the trusted-types directive .*trusted-types attention-lab your-policy/);
    assert.deepEqual(await runOutcome(page, "w"), { ok: true, shape: [1, 256, 64] });
    // The browser reports its refusals (the policy's name, the probe's string URL) and nothing else; nothing thrown.
    const unexpected = page.problems.filter((p) => !/TrustedTypePolicy named 'attention-lab'|requires 'TrustedScriptURL' assignment/.test(p));
    assert.deepEqual(unexpected, []);
    await page.close();
  });
});
