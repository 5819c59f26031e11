// Screenshots at desktop (1280x800) and phone (390x844) sizes, saved to test-output/screenshots/
// for a human look, with checks that nothing spills out of the page, overlaps or is clipped; at phone
// size, wide tables keep their first column in view and say they scroll, and code breaks only between
// tokens.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, afterRun, finish, launchLab, openPage, pasteCall, runPreset, screenshotDir } from "./helpers.mjs";

const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
];

/**
 * Runs in the page: which boxes leave the viewport, which sibling boxes overlap, which texts are
 * clipped (looking into every <attention-lab>'s shadow root too).
 */
function layoutReport({ outsideSel, overlapSels, clipSel }) {
  const all = (sel) => [...document.querySelectorAll(sel), ...[...document.querySelectorAll("attention-lab")].flatMap((el) => [...el.shadowRoot.querySelectorAll(sel)])]
    .filter((el) => el.offsetParent !== null);
  const name = (el) => `${el.id || el.className || el.tagName}`.slice(0, 60);
  const outside = all(outsideSel)
    .filter((el) => { const r = el.getBoundingClientRect(); return r.left < -0.5 || r.right > window.innerWidth + 0.5; })
    .map(name);
  const overlapping = [];
  for (const sel of overlapSels) {
    const boxes = all(sel).map((el) => ({ el, r: el.getBoundingClientRect() }));
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r;
        const b = boxes[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1 && !boxes[i].el.contains(boxes[j].el) && !boxes[j].el.contains(boxes[i].el)) overlapping.push(`${sel}: ${name(boxes[i].el)} / ${name(boxes[j].el)}`);
      }
    }
  }
  const clipped = all(clipSel).filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.textContent.trim().slice(0, 40));
  return { width: document.documentElement.scrollWidth, viewport: window.innerWidth, outside, overlapping, clipped };
}

async function checkLayout(page) {
  const r = await page.evaluate(layoutReport, {
    outsideSel: ".panel, .stage-card, .site-header h1, .pitch, .run-row > *, .slot, .diag, .verdict, pre.code, .converter, .drop-zone, .ckpt-options .field, .copy-plan-row > *, .token-chips li",
    overlapSels: [".slot", ".fact", ".preset", ".panel", ".stage-card", ".run-row > *", ".tokens-grid > *", ".named-values li", ".compare-col", ".diag-fixes > *", ".ckpt-grid > *", ".ckpt-options .field", ".copy-plan-row > *"],
    clipSel: "button, .tab, label, h1, h2, h3, .output-summary, legend, .slot-so, .diag-msg",
  });
  assert.ok(r.width <= r.viewport, `page is ${r.width}px wide in a ${r.viewport}px viewport`);
  assert.deepEqual(r.outside, [], "inside the viewport");
  assert.deepEqual(r.overlapping, [], "nothing overlaps");
  assert.deepEqual(r.clipped, [], "text is not clipped");
}

/** Numbers of three characters or more (-0.12, 2,360,064, 1.5e-7) whose characters sit on two lines, in every shadow root. */
function splitNumbers(page) {
  return page.evaluate(() => {
    const out = [];
    const walk = (root) => {
      const it = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let n = it.nextNode(); n; n = it.nextNode()) {
        for (const m of n.data.matchAll(/[−-]?\d[\d,.]*(e[−-]?\d+)?/g)) {
          if (m[0].length < 3) continue;
          const r = document.createRange();
          r.setStart(n, m.index);
          r.setEnd(n, m.index + m[0].length);
          const rects = [...r.getClientRects()].filter((x) => x.width > 0);
          if (rects.length > 1 && Math.abs(rects[0].top - rects.at(-1).top) > 2) out.push(`${m[0]} in "${n.data.slice(Math.max(0, m.index - 20), m.index + 20)}"`);
        }
      }
      for (const el of root.querySelectorAll("*")) if (el.shadowRoot) walk(el.shadowRoot);
    };
    walk(document.body);
    return out;
  });
}

describe("layout", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  for (const viewport of VIEWPORTS) {
    const size = `${viewport.width}x${viewport.height}`;
    test(`the teaching page at ${size}: book preset, an error, a comparison, GPT-2 small`, async () => {
      const page = await openPage(lab, "", { viewport });
      const dir = await screenshotDir();
      const shot = (name, full = false) => page.screenshot({ path: path.join(dir, `${name}-${size}.png`), fullPage: full });
      await runPreset(page, "bookToy");
      await shot("book-toy");
      await shot("book-toy-full", true);
      await checkLayout(page);
      await page.locator("[data-stage=attn_weights]").scrollIntoViewIfNeeded();
      await shot("book-toy-weights");

      await pasteCall(page, "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)");
      await page.getByTestId("class-select").selectOption("MultiHeadAttention");
      await page.locator(".slot[data-slot=d_out]").scrollIntoViewIfNeeded();
      await shot("divisibility-error");
      await checkLayout(page);

      await page.getByTestId("class-select").selectOption("MultiHeadAttentionWrapper");
      await page.getByTestId("compare-button").click();
      await page.getByTestId("compare-verdict").waitFor();
      await page.getByTestId("compare-panel").scrollIntoViewIfNeeded();
      await shot("compare");
      await checkLayout(page);

      await runPreset(page, "gpt2Small");
      await page.locator("[data-stage=attn_weights]").scrollIntoViewIfNeeded();
      await shot("gpt2-small-weights");
      await checkLayout(page);
      await finish(page);
    });

    test(`the weight transfer and GPT-2 panels at ${size}: a silent square copy, a loaded layer and its heads, an error`, async () => {
      const page = await openPage(lab, "?class=SelfAttention_v2&d_in=3&d_out=3", { viewport });
      const dir = await screenshotDir();
      const shot = (name) => page.screenshot({ path: path.join(dir, `${name}-${size}.png`) });
      const top = (testid) => page.getByTestId(testid).evaluate((el) => el.scrollIntoView({ block: "start" }));
      await page.getByTestId("transpose-W_key").uncheck();
      await page.getByTestId("copy-button").click();
      await page.getByTestId("copy-verdict").waitFor();
      await top("compare-panel");
      await shot("copy-plan");
      await top("copy-square");
      await shot("copy-square");
      await checkLayout(page);

      await pasteCall(page, "MultiHeadAttention(8, 8, 16, 0.0, 4)");
      await page.getByTestId("ckpt-layer").fill("0"); // a file of attention layers only: layer 1's real input needs block 0 whole
      await page.getByTestId("ckpt-heads").fill("4");
      await page.getByTestId("ckpt-file").setInputFiles(path.join(ROOT, "tests", "fixtures", "checkpoints", "gpt2_d8_h4_prefix.safetensors"));
      await page.getByTestId("ckpt-summary").waitFor();
      await top("checkpoint-panel");
      await shot("checkpoint-top");
      await top("ckpt-summary");
      await shot("checkpoint-report");
      await checkLayout(page);
      await page.getByTestId("ckpt-ids").fill("11, 0, 7");
      await page.getByTestId("ckpt-run").click();
      const weights = page.getByTestId("ckpt-stage-cards").locator("[data-stage=attn_weights]");
      await weights.waitFor();
      await top("ckpt-run-box");
      await shot("checkpoint-run");
      await weights.evaluate((el) => el.scrollIntoView({ block: "start" }));
      await shot("checkpoint-heads");
      await checkLayout(page);

      await page.getByTestId("ckpt-target-current").check();
      await page.getByTestId("ckpt-load").click();
      await page.getByTestId("ckpt-error").waitFor();
      await page.getByTestId("ckpt-error").evaluate((el) => el.scrollIntoView({ block: "center" }));
      await shot("checkpoint-error");
      await checkLayout(page);
      await finish(page);
    });

    test(`layout="compact" at ${size}: embed.html's locked exercise with the facts under the setup (${viewport.width === 1280 ? "the two beside the trace" : "one column"}), the facts folded until asked, one stage open at a time${viewport.width === 1280 ? ", under 1,500 px tall" : ""}`, async () => {
      const page = await openPage(lab, "", { viewport, path: "embed.html" });
      const dir = await screenshotDir();
      const exercise = page.locator("#exercise");
      const height = () => exercise.evaluate((el) => el.getBoundingClientRect().height);
      // the facts under the setup, as wide as it (one column of two where the widget is wide)
      const setup = await exercise.locator("#setup").boundingBox();
      const facts = await exercise.getByTestId("facts").boundingBox();
      assert.ok(facts.y >= setup.y + setup.height && Math.abs(facts.width - setup.width) < 1, JSON.stringify({ setup, facts }));
      // no numbered headings (a course page with several widgets would repeat them)
      const headings = await exercise.locator("h2").allTextContents();
      assert.deepEqual(headings.filter((t) => /^\s*\d+\./.test(t)), []);
      assert.ok(headings.includes("Set up the module"), headings.join(" | "));
      // predict first: nothing has run, and the facts (and the width) are folded away
      assert.equal(await exercise.locator("[data-stage]").count(), 0);
      assert.equal(await exercise.getByTestId("output-width").isVisible(), false);
      assert.equal(await exercise.getByTestId("params-table").isVisible(), false);
      assert.equal(await exercise.getByTestId("facts-toggle").getAttribute("aria-expanded"), "false");
      assert.equal(await exercise.getByTestId("slot-d_out-so").isVisible(), false, "the slots' consequences are facts too");
      const tokensLine = (await exercise.getByTestId("tokens-summary").textContent()).replace(/[\u2068\u2069]/g, ""); // the seed is isolated (user text)
      assert.match(tokensLine, /book embeddings\), batch 2, seed 123, train/);
      await page.screenshot({ path: path.join(dir, `compact-before-run-${size}.png`), fullPage: true });
      await checkLayout(page);
      // the reader predicts and runs: the output is the one stage open, the others are their headings
      await exercise.getByTestId("prediction").fill("(2, 6, 2)");
      await afterRun(page, () => exercise.getByTestId("run").click(), "#exercise");
      assert.equal(await exercise.getByTestId("prediction-result").getAttribute("data-held"), "true");
      const toggles = exercise.getByTestId("stage-toggle");
      const stages = await exercise.locator("[data-stage]").evaluateAll((cards) => cards.map((c) => [c.dataset.stage, c.classList.contains("open")]));
      assert.ok(stages.length >= 10, `${stages.length} stages`);
      assert.deepEqual(stages.filter(([, open]) => open).map(([id]) => id), ["output"]);
      assert.equal(await toggles.count(), stages.length);
      assert.equal(await exercise.locator("[data-stage=output]").getByTestId("output-summary").isVisible(), true);
      assert.equal(await exercise.locator("[data-stage=queries] .grid-scroll").first().isVisible(), false, "a collapsed stage shows its heading only");
      const tall = await height();
      if (viewport.width === 1280) assert.ok(tall < 1500, `the compact exercise is ${tall} px tall`);
      assert.equal(await exercise.getByTestId("slot-d_out-so").isVisible(), true, "after the run the consequences show");
      await exercise.screenshot({ path: path.join(dir, `compact-${size}.png`) });
      await checkLayout(page);
      // open another stage: it opens, the output closes (one at a time)
      await exercise.locator("[data-stage=attn_weights]").getByTestId("stage-toggle").click();
      assert.deepEqual(await exercise.locator("[data-stage].open").evaluateAll((cards) => cards.map((c) => c.dataset.stage)), ["attn_weights"]);
      assert.equal(await exercise.locator("[data-stage=attn_weights]").getByTestId("stage-toggle").getAttribute("aria-expanded"), "true");
      assert.equal(await exercise.locator("[data-stage=output]").getByTestId("output-summary").isVisible(), false);
      assert.equal(await exercise.locator("[data-stage=attn_weights] .heatmap, [data-stage=attn_weights] .grid-scroll").first().isVisible(), true);
      await exercise.locator("[data-stage=attn_weights]").scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(dir, `compact-weights-${size}.png`) });
      // asking for the facts opens them, the width included
      await exercise.getByTestId("facts-toggle").click();
      assert.equal(await exercise.getByTestId("output-width").textContent(), "2");
      assert.equal(await exercise.getByTestId("params-table").isVisible(), true);
      await checkLayout(page);
      await finish(page);
    });

    test(`the embed page at ${size}`, async () => {
      const page = await openPage(lab, "", { viewport, path: "embed.html" });
      const dir = await screenshotDir();
      await page.screenshot({ path: path.join(dir, `embed-${size}-full.png`), fullPage: true });
      await checkLayout(page);
      await finish(page);
    });
  }

  test("a compact exercise with the facts and tokens hidden fits a 16:9 slide at 1280x720: under 720 px tall before and after its run, the setup and run beside the trace", async () => {
    const page = await openPage(lab, "", { viewport: { width: 1280, height: 720 }, path: "embed.html" });
    const exercise = page.locator("#exercise");
    await exercise.evaluate((el) => el.setAttribute("hidden", "presets facts tokens compare checkpoint code"));
    const measure = async (when) => {
      await exercise.scrollIntoViewIfNeeded();
      const box = await exercise.boundingBox();
      assert.ok(box.height <= 720 && box.width <= 1280, `${when}: the exercise is ${box.width} x ${box.height} px`);
      const setup = await exercise.locator("#setup").boundingBox();
      const run = await exercise.getByTestId("run").boundingBox();
      const trace = await exercise.locator("#trace").boundingBox();
      assert.ok(trace.x >= setup.x + setup.width && trace.x >= run.x + run.width, `${when}: the trace is beside the setup and Run`);
      assert.equal(await exercise.getByTestId("slot-d_out-so").isVisible(), false, `${when}: the slots' consequences are facts, hidden with them`);
      return box.height;
    };
    const before = await measure("before the run");
    await exercise.getByTestId("prediction").fill("(2, 6, 2)");
    await afterRun(page, () => exercise.getByTestId("run").click(), "#exercise");
    assert.equal(await exercise.locator("[data-stage=output]").getByTestId("output-summary").isVisible(), true);
    const after = await measure("after the run");
    assert.ok(after > before + 20, `the output card adds to the height: ${before} -> ${after} px`);
    await exercise.screenshot({ path: path.join(await screenshotDir(), "compact-slide-1280x720.png") });
    await checkLayout(page);
    await finish(page);
  });

  test("at 390x844 the first column of a table stays in view, a cue says the table scrolls, and code breaks between tokens", async () => {
    const page = await openPage(lab, "", { viewport: { width: 390, height: 844 } });
    await runPreset(page, "gpt2Small");
    const scroller = page.locator("[data-stage=queries] .grid-scroll").first();
    await scroller.scrollIntoViewIfNeeded();
    // a stage card off screen is not laid out (content-visibility: auto): its cue follows once it is in view
    await page.waitForFunction((n) => n.dataset.scrolls !== "false", await scroller.elementHandle(), { timeout: 10_000 }).catch(() => {});
    assert.equal(await scroller.getAttribute("data-scrolls"), "true");
    const cue = scroller.locator("xpath=..").getByTestId("scroll-cue");
    assert.equal(await cue.isVisible(), true);
    assert.match(await cue.textContent(), /scroll/i);
    const rowHead = scroller.locator("tbody th").first();
    const left0 = (await rowHead.boundingBox()).x;
    await scroller.evaluate((n) => { n.scrollLeft = 400; });
    await page.waitForFunction((n) => n.scrollLeft > 0, await scroller.elementHandle());
    const left1 = (await rowHead.boundingBox()).x;
    assert.ok(Math.abs(left1 - left0) < 1, `the row label stayed at ${left0}, not ${left1}`);
    // scrolled: the cue has done its job and goes; back at the start it returns
    await page.waitForFunction((n) => n.querySelector("[data-testid=scroll-cue]").hidden, await scroller.elementHandle());
    await scroller.evaluate((n) => { n.scrollLeft = 0; });
    await page.waitForFunction((n) => !n.querySelector("[data-testid=scroll-cue]").hidden, await scroller.elementHandle());
    await scroller.evaluate((n) => { n.scrollLeft = 400; });
    // no number on the page is broken across two lines (a reader saw one on a phone)
    assert.deepEqual(await splitNumbers(page), []);
    await page.screenshot({ path: path.join(await screenshotDir(), "phone-table-scrolled.png") });
    // Code: every name and number (torch.manual_seed, MultiHeadAttentionWrapper, 0.0) of the code view, the
    // keyword form, the formulas and PyTorch's lines sits on one line; lines break only between tokens.
    const broken = [];
    let widest = 0;
    const calls = [
      "MultiHeadAttentionWrapper(768, 768, 1024, 0.0, 12, qkv_bias=True)",
      "GroupedQueryAttention(d_in=768, d_out=768, dropout=0.0, num_heads=12, num_kv_groups=4, qkv_bias=True)",
      "MultiHeadAttentionWithSWA(768, 768, 0.0, 12, qkv_bias=True, sliding_window_size=1024)",
      "GroupedQueryAttention(768, 768, 1024, 0.0, 12)",
      "MultiHeadAttention(768, 768, 1024, 0.5, 7)",
    ];
    for (const call of calls) {
      await pasteCall(page, call);
      const found = await page.evaluate(() => {
        const root = document.querySelector("attention-lab").shadowRoot;
        const nodes = [root.getElementById("code-view"), root.getElementById("keyword-call"), ...root.querySelectorAll(".stage-formula code, .diag-pytorch code, .named-value, .converter-calls code")];
        const out = [];
        for (const node of nodes) {
          const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
          for (let t = walker.nextNode(); t; t = walker.nextNode()) {
            for (const m of t.data.matchAll(/[\w.]+/g)) {
              const range = document.createRange();
              range.setStart(t, m.index);
              range.setEnd(t, m.index + m[0].length);
              const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
              if (tops.size > 1) out.push(m[0]);
            }
          }
        }
        const pre = root.getElementById("code-view").parentElement;
        return { out, width: document.documentElement.scrollWidth, codeScrolls: pre.scrollWidth > pre.clientWidth + 1 };
      });
      broken.push(...found.out.map((w) => `${call}: ${w}`));
      widest = Math.max(widest, found.width);
      // The code view wraps its long lines at token boundaries instead of hiding them past the edge.
      assert.equal(found.codeScrolls, false, `${call}: the code view scrolls sideways`);
    }
    const split = { broken, scrollWidth: widest };
    assert.deepEqual(split.broken, []);
    assert.ok(split.scrollWidth <= 390, `the page is ${split.scrollWidth} px wide`);
    await finish(page);
  });
});
