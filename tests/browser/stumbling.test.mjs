// Issue 10: what a new reader stumbled on, each with the behaviour the issue asks for.
//  - after an edit, a cheap run (the core's estimate) follows at once; any other leaves a stale banner
//    with its own Run button at the top of the results;
//  - the GPT-2 presets say which qkv_bias they use and why;
//  - at 390 px, tables keep their first column in view and show that they scroll; code breaks between
//    tokens, never inside one;
//  - "see d_in" cross-references are not coloured as errors; counts have thousands separators;
//    heatmaps of one stage share one colour scale and the card says so.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage, pasteCall, runPreset, SCREENSHOT_DIR, screenshotDir } from "./helpers.mjs";

const runs = (page) => page.evaluate(() => Number(document.querySelector("attention-lab").dataset.runs ?? 0));
const waitRuns = (page, n) => page.waitForFunction((k) => Number(document.querySelector("attention-lab").dataset.runs ?? 0) >= k, n, { timeout: 60_000 });

describe("what a new reader stumbled on", () => {
  let lab;
  before(async () => {
    lab = await launchLab();
    await screenshotDir();
  });
  after(async () => { await lab?.close(); });

  test("an edit re-runs a cheap setup by itself: the stage cards follow without pressing Run", async () => {
    const page = await openPage(lab);
    const first = await runs(page);
    assert.ok(first >= 1, "the book's setup ran on load");
    await page.getByTestId("slot-d_out").fill("4");
    await waitRuns(page, first + 1);
    await page.waitForFunction(() => !document.querySelector("attention-lab").shadowRoot.querySelector("[data-stage=output] [data-testid=output-summary]")?.textContent.includes("(2, 6, 2)"));
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 4\)/);
    assert.equal(await page.getByTestId("stale-banner").isVisible(), false);
    assert.equal(await page.locator("#stage-cards.stale").count(), 0);
    // Typing several characters runs once, after the pause, not once per key.
    const before = await runs(page);
    await page.getByTestId("slot-d_in").pressSequentially("33", { delay: 20 }); // d_in = 333
    await page.getByTestId("stale-banner").waitFor();
    await page.waitForTimeout(600); // longer than the re-run pause
    // d_in = 333 does not fit the book's 3-d tokens: the run is blocked, so the banner says why, and the cards stay marked stale.
    assert.equal(await runs(page), before);
    assert.equal(await page.getByTestId("stale-banner").isVisible(), true);
    assert.match(await page.getByTestId("stale-banner").textContent(), /cannot run yet: the book’s tokens need d_in = 3/);
    assert.equal(await page.getByTestId("stale-run").isDisabled(), true);
    await finish(page);
  });

  test("a run that is not cheap is not started by an edit: a stale banner at the top of the results has its own Run", async () => {
    const page = await openPage(lab);
    // 8-wide, 8 heads, 1024 tokens: over 64 MiB traced (the core's estimate), though quick to compute.
    await pasteCall(page, "MultiHeadAttention(8, 8, 1024, 0.0, 8)");
    await page.getByTestId("source-random").check();
    await page.getByTestId("count").fill("1024");
    await page.getByTestId("batch").selectOption("1");
    const banner = page.getByTestId("stale-banner");
    await banner.waitFor();
    assert.match(await banner.textContent(), /The setup has changed since these results were made/);
    assert.equal(await page.getByTestId("stale-run").isEnabled(), true);
    // At the top of the results: inside the trace panel, before the status line and the cards.
    const order = await page.evaluate(() => {
      const trace = document.querySelector("attention-lab").shadowRoot.getElementById("trace");
      return [...trace.children].map((n) => n.id).filter(Boolean);
    });
    assert.deepEqual(order.slice(0, 3), ["trace-heading", "stale-banner", "trace-status"]);
    // The banner stays in view while the reader scrolls through the old cards.
    assert.equal(await banner.evaluate((n) => getComputedStyle(n).position), "sticky");
    await banner.screenshot({ path: `${SCREENSHOT_DIR}/stale-banner.png` });
    await afterRun(page, () => page.getByTestId("stale-run").click(), "attention-lab", 120_000);
    assert.equal(await banner.isVisible(), false);
    assert.match(await page.getByTestId("trace-status").textContent(), /MultiHeadAttention\(8, 8, 1024, 0\.0, 8\) on 1,024 random tokens/);
    await finish(page);
  });

  test("in quiz mode an edit does not run by itself (it would give the answer away): the banner waits for Run", async () => {
    const page = await openPage(lab);
    await page.getByTestId("quiz").check();
    const n = await runs(page);
    await page.getByTestId("slot-num_heads").fill("1");
    await page.getByTestId("stale-banner").waitFor();
    await page.waitForTimeout(600); // longer than the re-run pause
    assert.equal(await runs(page), n);
    await afterRun(page, () => page.getByTestId("stale-run").click());
    assert.equal(await page.getByTestId("stale-banner").isVisible(), false);
    await finish(page);
  });

  test("the GPT-2 presets say which qkv_bias they use and why, in view", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gpt2Small");
    const note = page.getByTestId("preset-note");
    assert.equal(await note.isVisible(), true);
    assert.match(await note.textContent(), /GPT-2 small: qkv_bias=False as in the book's exercise \(2,360,064 parameters for GPT-2 small\); GPT-2 itself has q\/k\/v biases \(qkv_bias=True: 2,362,368\)/);
    assert.equal(await page.getByTestId("param-total").textContent(), "2,360,064");
    // Flip the slot: the count is GPT-2's own, as the note says.
    await page.getByTestId("slot-qkv_bias").selectOption("True");
    assert.equal(await page.getByTestId("param-total").textContent(), "2,362,368");
    // A reader's edit away from the preset: the note no longer claims to describe the setup.
    assert.equal(await note.isVisible(), false);
    await finish(page);
  });

  test("at 390 px: the first column stays in view, a cue says the table scrolls, code breaks between tokens", async () => {
    const page = await openPage(lab, "", { viewport: { width: 390, height: 844 } });
    await runPreset(page, "gpt2Small");
    const scroller = page.locator("[data-stage=queries] .grid-scroll").first();
    await scroller.scrollIntoViewIfNeeded();
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
    await page.screenshot({ path: `${SCREENSHOT_DIR}/phone-table-scrolled.png` });
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

  test("a 'see d_in' cross-reference is not coloured like an error", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttention(3, 3, 6, 0.0, 2)"); // 3 % 2: the error sits on d_out or num_heads
    const pointer = page.getByTestId("see-slot").first();
    await pointer.waitFor();
    const [pointerColour, errorColour] = await page.evaluate(() => {
      const root = document.querySelector("attention-lab").shadowRoot;
      return [getComputedStyle(root.querySelector("[data-testid=see-slot]")).color, getComputedStyle(root.querySelector(".diag-error .diag-msg")).color];
    });
    assert.notEqual(pointerColour, errorColour);
    assert.notEqual(pointerColour, "rgb(179, 38, 30)"); // --error
    assert.match(await pointer.textContent(), /see (d_out|num_heads)/);
    await finish(page);
  });

  test("counts have thousands separators; every heatmap of a stage shares one colour scale, and the card says so", async () => {
    const page = await openPage(lab);
    await pasteCall(page, "MultiHeadAttention(8, 8, 1024, 0.0, 2)");
    await page.getByTestId("source-random").check();
    await page.getByTestId("count").fill("1024");
    await page.getByTestId("batch").selectOption("1");
    // Whether it runs by itself depends on the core's estimate; either way it runs once asked.
    const ranOrWaits = () => page.waitForFunction(() => {
      const root = document.querySelector("attention-lab").shadowRoot;
      return root.getElementById("trace-status").textContent.includes("1,024 random tokens") || !root.getElementById("stale-banner").hidden;
    }, null, { timeout: 120_000 });
    await ranOrWaits();
    if (await page.getByTestId("stale-run").isVisible()) await afterRun(page, () => page.getByTestId("stale-run").click(), "attention-lab", 120_000);
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.getElementById("trace-status").textContent.includes("1,024 random tokens"), null, { timeout: 120_000 });
    const masked = page.locator("[data-stage=attn_scores_masked]");
    assert.match(await masked.textContent(), /523,776 of the 1,048,576 scores in each query × key slice set to −inf \(1,047,552 in all\)/);
    assert.match(await page.getByTestId("mask-bytes").textContent(), /1,024 × 1,024 float32/);
    // The book's example: two heads, two batch items, one scale for all four heatmaps of attn_scores.
    const book = await openPage(lab);
    const scores = book.locator("[data-stage=attn_scores]");
    assert.match(await scores.getByTestId("heatmap-scale-note").textContent(), /Every heatmap of this stage uses one colour scale, from [−-]?\d/);
    // A table that fits does not claim to scroll.
    const narrow = book.locator("[data-stage=queries] .grid-scroll").first();
    assert.equal(await narrow.getAttribute("data-scrolls"), "false");
    assert.equal(await narrow.getByTestId("scroll-cue").isVisible(), false);
    const legends = await book.locator("[data-stage=attn_scores] .heatmap-legend").evaluateAll((ls) => ls.map((l) => l.textContent));
    assert.ok(legends.length >= 2, `${legends.length} heatmaps`);
    assert.equal(new Set(legends).size, 1, legends.join(" | "));
    await scores.screenshot({ path: `${SCREENSHOT_DIR}/heatmap-shared-scale.png` });
    await finish(book);
    await finish(page);
  });
});
