// The run panel and its trace: every stage card with named axes, the book's numbers, row sums,
// masked scores, per-head facts (group maps, windows), shared heatmap scales and the stage where
// numbers went bad; after an edit, a cheap run follows by itself and any other leaves a stale banner
// with its own Run; book-size runs stay on the page's thread, big ones go to the worker with a
// progress bar while the page keeps answering.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, appWorkers, finish, launchLab, openPage, pasteCall, rowCells, runPreset, SCREENSHOT_DIR, screenshotDir } from "./helpers.mjs";

const MHA_STAGES = [
  "input", "queries", "keys", "values", "attn_scores", "mask", "attn_scores_masked",
  "attn_weights", "attn_weights_dropout", "context_vec", "heads_concat", "out_proj", "output",
];

const runs = (page) => page.evaluate(() => Number(document.querySelector("attention-lab").dataset.runs ?? 0));
const waitRuns = (page, n) => page.waitForFunction((k) => Number(document.querySelector("attention-lab").dataset.runs ?? 0) >= k, n, { timeout: 60_000 });

/**
 * Types `value` into the slot `name` of the page's widget as one input event and reads, in the same
 * task (before any timer, frame or worker message could run), the fact `fact` and the finished runs.
 */
const editAndRead = (page, name, value, fact) => page.evaluate(([n, v, f]) => {
  const host = document.querySelector("attention-lab");
  const input = host.shadowRoot.querySelector(`[data-testid=slot-${n}]`);
  input.value = v;
  input.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
  return { fact: host.shadowRoot.querySelector(`[data-testid=${f}]`).textContent.trim(), runs: Number(host.dataset.runs ?? 0) };
}, [name, value, fact]);


// One Chromium for the whole file: each test opens pages of its own in it.
let lab;
before(async () => {
  lab = await launchLab();
  await screenshotDir();
});
after(async () => { await lab?.close(); });

describe("trace", () => {
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

  test("a GPT-2 small run shows truncated grids with summaries, and the facts still follow an edit in the same task", async () => {
    // How long the run takes is a speed figure: npm run bench measures it (bench/run.mjs).
    const page = await openPage(lab);
    await runPreset(page, "gpt2Small");
    const input = page.locator("[data-stage=input]");
    assert.match(await input.getByTestId("stage-shape").textContent(), /\(b=2, num_tokens=6, d_in=768\)/);
    assert.match(await input.getByTestId("tensor-summary").textContent(), /min .* max .* mean/);
    const header = await input.getByTestId("grid").first().locator("thead th").allTextContents();
    assert.ok(header.length <= 16, `truncated header has ${header.length} cells`);
    assert.ok(header.includes("…"));
    assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), /\(2, 6, 768\)/);
    // The page still reacts at once: the facts follow the edit in the input event's own task.
    assert.equal((await editAndRead(page, "num_heads", "8", "head-dim")).fact, "96");
    await finish(page);
  });

  test("GroupedQueryAttention's keys stage says which query heads share which key/value head, and the facts what the cache saves", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gqaToy");
    assert.equal(await page.getByTestId("call-box").inputValue(), "GroupedQueryAttention(3, 4, 0.0, 4, 2)");
    const keys = page.locator("[data-stage=keys]");
    assert.match(await keys.getByTestId("stage-shape").textContent(), /\(b=2, num_kv_groups=2, num_tokens=6, head_dim=1\)/);
    const map = keys.getByTestId("group-map");
    assert.deepEqual(await map.locator("li").allTextContents(), ["k/v 0 → query heads 0–1", "k/v 1 → query heads 2–3"]);
    // each key/value panel is labelled as the head it is, not by its axis's name
    const keysText = await keys.textContent();
    assert.ok(keysText.includes("key/value head 0") && keysText.includes("key/value head 1"), keysText.slice(0, 400));
    assert.ok(!/num_kv_groups [01]\b/.test(keysText), "no 'num_kv_groups 0' label");
    assert.match(await page.locator("[data-stage=attn_scores] h3").textContent(), /query head h uses key head h \/\/ 2/);
    assert.match(await page.getByTestId("kv-cache").textContent(), /2 key\/value heads of 1.*2× less than MultiHeadAttention of this width/);
    await keys.screenshot({ path: `${SCREENSHOT_DIR}/gqa-keys-group-map.png` });
    await finish(page);
  });

  test("MultiHeadAttentionWithSWA's mask stage says its window", async () => {
    const page = await openPage(lab);
    await runPreset(page, "swaToy");
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttentionWithSWA(3, 2, 0.0, 2, sliding_window_size=3)");
    const mask = page.locator("[data-stage=mask]");
    assert.match(await mask.locator("h3").textContent(), /Sliding-window causal mask: each query sees itself and at most 2 keys before it/);
    // what 1 marks in this mask: a future key, or one outside the window (not only "a future position")
    assert.match(await mask.getByTestId("mask-note").textContent(), /^1 marks a hidden key: a future position \(key after query\), or a key 3 or more positions before the query/);
    await mask.screenshot({ path: `${SCREENSHOT_DIR}/swa-mask.png` });
    await finish(page);
  });

  test("GatedMultiHeadAttention's masked scores say torch.finfo(float32).min, count it as masked and keep it out of the colour scale", async () => {
    // The book's sizes: one 6 x 6 slice per (batch item, head), 15 future keys masked in each.
    const page = await openPage(lab, "?class=GatedMultiHeadAttention&d_in=3&d_out=2&context_length=6&dropout=0.0&num_heads=2&seed=123&mode=eval");
    const masked = page.locator("[data-stage=attn_scores_masked]");
    await masked.waitFor();
    assert.equal(await masked.locator(".stage-why").textContent(),
      "Hidden positions filled with the most negative float32 (torch.finfo(torch.float32).min), so exp gives exactly 0 unless a whole row is masked (that row would get equal weights, not the NaN of −inf).");
    assert.equal(await masked.getByTestId("masked-count").textContent(), "15 of the 36 scores in each query × key slice set to torch.finfo(float32).min (60 in all).");
    const first = masked.getByTestId("grid").first().locator("tbody tr").first();
    const cells = await rowCells(first);
    assert.equal(cells[1], "−3.4028e+38");
    assert.match(cells[0], /^−?\d\.\d{4}$/);
    assert.equal(await first.locator("td").nth(1).getAttribute("class"), "masked");
    // the heatmap: the 15 masked cells grey and said to be masked; its scale is the 21 scores a query sees
    const map = masked.getByTestId("heatmap").first();
    assert.equal(await map.locator("rect.masked").count(), 15);
    assert.match(await map.locator("rect").nth(1).locator("title").textContent(), /^Your → journey: −3\.4028e\+38 \(masked\)$/);
    assert.equal(await map.locator("rect").nth(1).getAttribute("fill"), "rgb(214,214,214)");
    const ends = (await masked.getByTestId("heatmap-scale-note").textContent()).match(/from (\S+) to (\S+), so/).slice(1);
    const scale = ends.map((t) => Number(t.replace("−", "-")));
    assert.ok(scale.every((v) => Number.isFinite(v) && Math.abs(v) < 10) && scale[1] > scale[0], `scale ${ends}`);
    assert.deepEqual(await map.locator(".heatmap-legend span").evaluateAll((s) => s.slice(0, 3).map((e) => e.textContent)), [ends[0], "", ends[1]]);
    // the mask and the weights say what the fill does
    assert.match(await page.locator("[data-stage=mask]").getByTestId("mask-note").textContent(), /Before softmax it becomes torch\.finfo\(float32\)\.min; after softmax its weight is exactly 0\.$/);
    assert.match(await page.locator("[data-stage=attn_weights]").getByTestId("exact-zeros").textContent(), /^15 of the 36 weights .* \(shown as 0, 60 in all\): the masked positions, because exp\(torch\.finfo\(float32\)\.min − the row’s max\) underflows to 0\.$/);
    await masked.screenshot({ path: `${SCREENSHOT_DIR}/gated-masked-scores.png` });
    // 64 random tokens: a summary of the whole stage and a canvas heatmap, from the core's summaries
    await pasteCall(page, "GatedMultiHeadAttention(8, 8, 64, 0.0, 2)");
    await page.getByTestId("source-random").check();
    await page.getByTestId("count").fill("64");
    await page.getByTestId("batch").selectOption("1");
    // it runs by itself or waits for Run, as the core's estimate says; either way it runs once asked
    await page.waitForFunction(() => {
      const root = document.querySelector("attention-lab").shadowRoot;
      return root.getElementById("trace-status").textContent.includes("64 random tokens") || !root.getElementById("stale-banner").hidden;
    }, null, { timeout: 60_000 });
    if (await page.getByTestId("stale-run").isVisible()) await afterRun(page, () => page.getByTestId("stale-run").click());
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.getElementById("trace-status").textContent.includes("64 random tokens"), null, { timeout: 60_000 });
    assert.equal(await masked.getByTestId("masked-count").textContent(), "2,016 of the 4,096 scores in each query × key slice set to torch.finfo(float32).min (4,032 in all).");
    const summary = (await masked.getByTestId("tensor-summary").textContent()).match(/^All values: min (\S+) · max (\S+) · mean (\S+) · 4,032 masked \(torch\.finfo\(float32\)\.min\)$/);
    assert.ok(summary, await masked.getByTestId("tensor-summary").textContent());
    assert.ok(summary.slice(1).map((t) => Number(t.replace("−", "-"))).every((v) => Math.abs(v) < 100), summary[0]);
    const corners = await masked.locator("canvas.heatmap-canvas").first().evaluate((c) => {
      const g = c.getContext("2d");
      return [[...g.getImageData(0, 0, 1, 1).data], [...g.getImageData(c.width - 1, 0, 1, 1).data]];
    });
    assert.deepEqual(corners[1], [214, 214, 214, 255], "query 0's last key: masked grey");
    assert.notDeepEqual(corners[0], [214, 214, 214, 255], "query 0's own key: a colour of the scale");
    await finish(page);
  });

  test("counts have thousands separators; every heatmap of a stage shares one colour scale, and the card says so", async () => {
    const page = await openPage(lab);
    // What the page sends its run worker: the first draw's answers must come with the run, not after it.
    await page.evaluate(() => {
      const post = Worker.prototype.postMessage;
      globalThis.sentToWorkers = [];
      Worker.prototype.postMessage = function (m, transfer) {
        globalThis.sentToWorkers.push(m?.queries ? "queries" : m?.warm ? "warm" : m?.x ? `run at density ${m.density}` : "other");
        return post.call(this, m, transfer);
      };
    });
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
    // The 1,024 x 1,024 heatmap says the size it is shown at, and is shown at it.
    const weights = page.locator("[data-stage=attn_weights]");
    assert.match(await weights.getByTestId("heatmap-scaled").first().textContent(), /^1,024 × 1,024 values shown on 240 × 240 pixels: each pixel shows the largest value it covers\.$/);
    assert.deepEqual(await weights.locator("canvas.heatmap-canvas").first().evaluate((c) => [c.width, c.height, c.getBoundingClientRect().width]), [240, 240, 240]);
    // Its pixels: the first cell covers weight[0][0] = 1, the top of the log scale (the ramp's darkest
    // blue); the last cell of the first row covers only future keys, weight 0: the masked grey.
    const corners = await weights.locator("canvas.heatmap-canvas").first().evaluate((c) => {
      const g = c.getContext("2d");
      return [[...g.getImageData(0, 0, 1, 1).data], [...g.getImageData(c.width - 1, 0, 1, 1).data]];
    });
    assert.deepEqual(corners, [[8, 48, 107, 255], [214, 214, 214, 255]]);
    // Every card drawn so far drew from the run's own message: runs went out (with the screen's
    // density, 1 here), no trace query.
    const sent = await page.evaluate(() => globalThis.sentToWorkers);
    assert.ok(sent.includes("run at density 1"), sent.join(", "));
    assert.deepEqual(sent.filter((m) => m !== "warm" && m !== "run at density 1"), []);
    await weights.locator(".heatmap").first().screenshot({ path: `${SCREENSHOT_DIR}/heatmap-1024.png` });
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

  test("finite tokens that overflow float32: the stage where numbers went bad says so, and only that stage", async () => {
    // the book's six tokens scaled by 1e20: finite inputs, but their scores overflow to inf
    const rows = ["0.43,0.15,0.89", "0.55,0.87,0.66", "0.57,0.85,0.64", "0.22,0.58,0.33", "0.77,0.25,0.10", "0.05,0.80,0.55"];
    const x = rows.map((r) => r.split(",").map((v) => `${v}e20`).join(",")).join(";");
    const page = await openPage(lab, `?class=MultiHeadAttention&d_in=3&d_out=2&context_length=6&dropout=0.0&num_heads=2&x=${encodeURIComponent(x)}`);
    assert.equal(await page.getByTestId("source-custom").isChecked(), true);
    await afterRun(page, () => page.getByTestId("run").click());
    const warnings = page.getByTestId("stage-warning");
    assert.equal(await warnings.count(), 1);
    assert.equal(await page.locator("[data-stage=attn_scores]").getByTestId("stage-warning").count(), 1);
    assert.match(await warnings.textContent(), /Numbers went bad here: attn_scores is the first stage to turn non-finite from finite inputs: inf at b 0/);
    await page.locator("[data-stage=attn_scores]").screenshot({ path: `${SCREENSHOT_DIR}/non-finite-stage.png` });
    await finish(page);
  });
});

describe("trace after an edit", () => {
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
    // Typing several characters into a setup that cannot run: num_heads = 23 does not divide d_out = 4,
    // so the run is blocked (Run is off: nothing can start it, no waiting needed to see that none
    // started), the banner says why, and the cards stay marked stale.
    const before = await runs(page);
    await page.getByTestId("slot-num_heads").pressSequentially("3", { delay: 20 }); // num_heads = 23
    await page.getByTestId("stale-banner").waitFor();
    assert.equal(await page.getByTestId("run").isDisabled(), true);
    assert.equal(await page.locator("#stage-cards.stale").count(), 1);
    assert.equal(await runs(page), before);
    assert.equal(await page.getByTestId("stale-banner").isVisible(), true);
    const staleText = await page.getByTestId("stale-banner").locator("#stale-text").textContent();
    assert.match(staleText, /cannot run yet: 1 error in the setup \(marked in red above\)\.$/);
    assert.doesNotMatch(staleText, /\.\./, "one period");
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
    assert.match(await page.getByTestId("trace-status").textContent(), /MultiHeadAttention\(8, 8, 1024, 0\.0, 8\)\u2069 on 1,024 random tokens/);
    await finish(page);
  });
});

describe("trace of small and large runs", () => {
  test("at book sizes an edit updates the facts in its input event's task, and each run stays on the page's thread", async () => {
    // How fast (edit -> rendered trace) is a speed figure: npm run bench measures it (bench/run.mjs).
    const page = await openPage(lab);
    await runPreset(page, "bookToy");
    for (const value of ["4", "6", "2", "4", "2"]) {
      assert.equal((await editAndRead(page, "d_out", value, "output-width")).fact, value);
      await afterRun(page, () => page.getByTestId("run").click());
      assert.match(await page.locator("[data-stage=output]").getByTestId("output-summary").textContent(), new RegExp(`^Output: \\(2, 6, ${value}\\)`));
    }
    assert.equal(appWorkers(page).length, 0, "no worker: book-size runs stay on the main thread");
    await finish(page);
  });

  test("GPT-2 small with 1024 tokens runs in the worker with a progress bar; the page answers an edit while it runs", async () => {
    const page = await openPage(lab);
    await runPreset(page, "gpt2Small");
    await page.getByTestId("fill-context").click();
    assert.equal(await page.getByTestId("count").inputValue(), "1024");
    await page.getByTestId("batch").selectOption("1");
    assert.match(await page.getByTestId("run-memory").textContent(), /MiB/);
    assert.match(await page.getByTestId("token-diagnostics").textContent(), /runs in the background/);
    const runsBefore = await runs(page);
    const done = afterRun(page, () => page.getByTestId("run").click(), "attention-lab", 180_000);
    await page.getByTestId("progress").waitFor({ state: "visible", timeout: 5_000 });
    assert.match(await page.getByTestId("progress").textContent(), /Running the forward pass… \d+\.\d s/);
    // While it runs in the worker, the page answers an edit in the edit's own task: the run has not
    // finished when the new head_dim is read. (How long the main thread may stall is a speed figure.)
    assert.equal(appWorkers(page).length, 1, "the run went to the worker");
    assert.deepEqual(await editAndRead(page, "num_heads", "16", "head-dim"), { fact: "48", runs: runsBefore });
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
});
