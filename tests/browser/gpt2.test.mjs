// The GPT-2 panel's whole model: a whole GPT-2 file chosen in the checkpoint panel runs every block in the
// worker (progress per block), then shows every layer x head pattern, a head view, the five most likely
// next tokens, and traces a picked layer with its real input. The file is tests/fixtures/gpt2's tiny
// model (width 8, 2 heads, 2 layers, GPT-2's 50,257 tokens), rebuilt from its seed; every number is
// checked against the book's GPTModel in PyTorch.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { loadAttentionLab } from "attention-lab";
import { GPT2_FIXTURES, gpt2File } from "../gpt2-files.mjs";
import { finish, launchLab, openPage, SCREENSHOT_DIR, screenshotDir } from "./helpers.mjs";

const tiny = GPT2_FIXTURES.cases.find((c) => c.name === "tiny_f32");
const cellNumber = (text) => Number(text.trim().replace("−", "-"));

describe("the whole GPT-2 model on the page", () => {
  let lab;
  let dir;
  let file;
  before(async () => {
    lab = await launchLab();
    await screenshotDir();
    dir = await mkdtemp(path.join(os.tmpdir(), "attention-lab-gpt2-"));
    file = path.join(dir, "tiny-gpt2.safetensors");
    await writeFile(file, gpt2File(await loadAttentionLab(), tiny));
  });
  after(async () => {
    await lab?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("every layer x head pattern, the head view, the next tokens, then a layer traced with its real input", async () => {
    const page = await openPage(lab);
    await page.getByTestId("ckpt-heads").fill(String(tiny.n_head));
    // choosing the file loads layer 0 and runs the whole model on the panel's tokens: the book's sentence,
    // tokenized with GPT-2's BPE, since the file's vocabulary is GPT-2's 50,257 tokens (its width is not GPT-2's)
    await page.getByTestId("ckpt-file").setInputFiles(file);
    const section = page.getByTestId("gpt2-section");
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === "1");
    assert.equal(await page.getByTestId("ckpt-kind-text").isChecked(), true, "a 50,257-token file starts on the sentence");
    assert.equal(await page.getByTestId("gpt2-cell").count(), tiny.n_layer * tiny.n_head);
    const sentence = await page.getByTestId("ckpt-chips").locator("li").evaluateAll((lis) => lis.map((li) => li.dataset.id));
    assert.equal(sentence.length, 6);
    // "Trace layer 1 below" traces the tokens the whole model ran on, and keeps the tokens choice
    await page.locator('[data-testid=gpt2-cell][data-layer="1"][data-head="0"]').click();
    const traced = await page.getByTestId("checkpoint-panel").evaluate((s) => Number(s.dataset.runs ?? 0));
    await page.getByTestId("gpt2-trace-layer").click();
    await page.waitForFunction((n) => Number(document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=checkpoint-panel]").dataset.runs ?? 0) > n, traced);
    assert.match(await page.getByTestId("ckpt-trace-status").textContent(), new RegExp(`^Layer 1: .* on 6 tokens \\[${sentence.slice(0, 3).join(", ")}`));
    assert.equal(await page.getByTestId("ckpt-kind-text").isChecked(), true, "still the sentence");
    // the reader's tokens: the run shows its progress block by block
    await page.getByTestId("ckpt-kind-ids").check();
    await page.getByTestId("ckpt-ids").fill(tiny.token_ids.join(", "));
    const steps = page.evaluate(() => new Promise((resolve) => {
      const root = document.querySelector("attention-lab").shadowRoot;
      const seen = new Set();
      const watch = new MutationObserver(() => {
        const text = root.getElementById("gpt2-progress-text")?.textContent;
        if (text) seen.add(text);
        if (root.querySelector("[data-testid=gpt2-section]").dataset.runs === "2") {
          watch.disconnect();
          resolve([...seen]);
        }
      });
      watch.observe(root, { subtree: true, childList: true, characterData: true, attributes: true });
    }));
    await section.getByTestId("gpt2-run").click();
    const seen = await steps;
    assert.ok(seen.includes("Block 1 done (step 3 of 4)"), seen.join(" | "));

    // the grid: 2 layers x 2 heads, one T x T picture each
    const cells = page.getByTestId("gpt2-cell");
    assert.equal(await cells.count(), tiny.n_layer * tiny.n_head);
    const T = tiny.token_ids.length;
    assert.deepEqual(await cells.first().locator("canvas").evaluate((c) => [c.width, c.height]), [T, T]);
    // the five most likely next tokens, as PyTorch ranks them, with their probabilities
    const next = page.getByTestId("gpt2-next").locator("li");
    assert.deepEqual(await next.evaluateAll((lis) => lis.map((li) => Number(li.dataset.id))), tiny.next_tokens.map((t) => t.id));
    assert.match(await next.first().textContent(), new RegExp(`${(100 * tiny.next_tokens[0].prob).toFixed(3)}%`));

    // the head view of layer 1, head 1: one line per weight of at least 1%, as thick as the weight.
    // Picking a cell redraws the head view and the two cells' pressed states, not the grid's pictures.
    await page.getByTestId("gpt2-grid").evaluate((g) => g.querySelectorAll("canvas").forEach((c) => { c.dataset.drawn = "before"; }));
    await page.locator('[data-testid=gpt2-cell][data-layer="1"][data-head="1"]').click();
    assert.deepEqual(await page.getByTestId("gpt2-grid").evaluate((g) => [...g.querySelectorAll("canvas")].map((c) => c.dataset.drawn)), ["before", "before", "before", "before"]);
    assert.deepEqual(await cells.evaluateAll((bs) => bs.map((b) => b.getAttribute("aria-pressed"))), ["false", "false", "false", "true"]);
    const view = page.getByTestId("gpt2-head-view");
    assert.match(await view.locator("h4").textContent(), /^Layer 1, head 1$/);
    const w = tiny.layers[1].attn_weights;
    const want = [];
    for (let i = 0; i < T; i++) for (let j = 0; j <= i; j++) if (w[(1 * T + i) * T + j] >= 0.01) want.push(`${i}-${j}`);
    const lines = view.locator("line");
    assert.deepEqual(await lines.evaluateAll((ls) => ls.map((l) => `${l.dataset.query}-${l.dataset.key}`)), want);
    const width = Number(await lines.first().getAttribute("stroke-width"));
    assert.ok(Math.abs(width - 6 * w[(1 * T + 0) * T + 0]) < 0.01, `stroke ${width}`);
    // a line's tooltip is made when the pointer first comes over it: query -> key and the weight
    const [qi, kj] = want[want.length - 1].split("-").map(Number);
    assert.equal(await view.locator("line > title").count(), 0, "no tooltip made before a hover");
    const line = view.locator(`line[data-query="${qi}"][data-key="${kj}"]`);
    await line.dispatchEvent("pointerover");
    await line.dispatchEvent("pointerover");
    const words = await view.locator('text[text-anchor="end"]').allTextContents();
    assert.deepEqual(await line.locator("title").allTextContents(), [`${words[qi]} → ${words[kj]}: ${w[(1 * T + qi) * T + kj].toFixed(3)}`], "one title, made once");
    await page.getByTestId("gpt2-section").screenshot({ path: `${SCREENSHOT_DIR}/gpt2-whole-model.png` });
    // Another cell redraws the lines (layer 0, head 0's weights) and keeps the words: the same nodes.
    await view.locator("text").evaluateAll((ts) => ts.forEach((t) => { t.dataset.kept = "yes"; }));
    await page.locator('[data-testid=gpt2-cell][data-layer="0"][data-head="0"]').click();
    assert.match(await view.locator("h4").textContent(), /^Layer 0, head 0$/);
    assert.match(await view.getByTestId("gpt2-trace-layer").textContent(), /^Trace layer 0 below/);
    const w0 = tiny.layers[0].attn_weights;
    const want0 = [];
    for (let i = 0; i < T; i++) for (let j = 0; j <= i; j++) if (w0[i * T + j] >= 0.01) want0.push(`${i}-${j}`);
    assert.deepEqual(await lines.evaluateAll((ls) => ls.map((l) => `${l.dataset.query}-${l.dataset.key}`)), want0);
    assert.deepEqual(await view.locator("text").evaluateAll((ts) => ts.map((t) => t.dataset.kept)), Array(2 * T).fill("yes"));
    const [q0, k0] = want0[want0.length - 1].split("-").map(Number);
    await view.locator(`line[data-query="${q0}"][data-key="${k0}"]`).dispatchEvent("pointerover");
    assert.deepEqual(await view.locator(`line[data-query="${q0}"][data-key="${k0}"] > title`).allTextContents(), [`${words[q0]} → ${words[k0]}: ${w0[q0 * T + k0].toFixed(3)}`]);
    await page.locator('[data-testid=gpt2-cell][data-layer="1"][data-head="1"]').click();
    assert.match(await view.locator("h4").textContent(), /^Layer 1, head 1$/);

    // Trace layer 1 below: its input stage is ln_1 of what block 0 left, as PyTorch computed it, on the
    // ids the whole model ran on (not what the field holds since)
    await page.getByTestId("ckpt-ids").fill("0, 1, 2");
    const runs = await page.getByTestId("checkpoint-panel").evaluate((s) => Number(s.dataset.runs ?? 0));
    await view.getByTestId("gpt2-trace-layer").click();
    await page.waitForFunction((n) => Number(document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=checkpoint-panel]").dataset.runs ?? 0) > n, runs);
    assert.match(await page.getByTestId("ckpt-trace-status").textContent(), /^Layer 1: MultiHeadAttention\(8, 8, 1024, 0\.0, 2, qkv_bias=True\) on 6 tokens/);
    assert.match(await page.getByTestId("ckpt-trace-status").textContent(), new RegExp(tiny.token_ids.join(", ")));
    assert.equal(await page.getByTestId("ckpt-kind-ids").isChecked(), true, "still token ids");
    const row = (await page.getByTestId("ckpt-stage-cards").locator("[data-stage=input] table.grid tbody tr").first().locator("td").allTextContents()).map(cellNumber);
    const x = tiny.layers[1].attention_input;
    row.forEach((v, j) => assert.ok(Math.abs(v - x[j]) <= 6e-5, `input[0, 0, ${j}] = ${v}, PyTorch ${x[j]}`));
    // and its attention weights are the grid's layer 1
    assert.match(await page.getByTestId("ckpt-stage-cards").locator("[data-stage=input] .stage-why").textContent(), /after block 0: what layer 1’s attention/);
    // "The same in PyTorch" computes that input too: block 0 first, then layer 1's ln_1 (the code run in
    // PyTorch by tests/fixtures/generate_code_panels.py and checked in tests/node/code-panels.test.mjs)
    const code = await page.getByTestId("ckpt-code").textContent();
    assert.match(code, /for i in range\(1\):\n {8}x = block\(x, f"h\.\{i\}\."\)\nx = torch\.nn\.functional\.layer_norm\(x, \(d,\), sd\["h\.1\.ln_1\.weight"\]/);
    assert.match(code, new RegExp(`ids = torch\\.tensor\\(\\[\\[${tiny.token_ids.join(", ")}\\]\\]\\)`));
    // and it says that this layer is the whole model's block 1: the same attention weights on the same tokens
    const agreement = page.getByTestId("ckpt-agreement");
    assert.equal(await agreement.getAttribute("data-agree"), "true");
    assert.match(await agreement.textContent(), /^This is the whole model’s block 1: its attention weights equal those of the whole-model run above on the same tokens \(2 heads, first 6 tokens; largest difference (0: bit for bit|\d\.\de-\d+)\)\.$/);
    // the panel's own Run on other ids (0, 1, 2) cannot be compared with that run: it says how to see it
    await page.getByTestId("ckpt-run").click();
    await page.waitForFunction(() => /on 3 tokens/.test(document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=ckpt-trace-status]").textContent));
    assert.equal(await agreement.getAttribute("data-agree"), "");
    assert.match(await agreement.textContent(), /^To see that this layer is the whole model’s block 1, run the whole model above on the same tokens/);
    await finish(page);
  });

  test("the file chosen before num_heads: the error points at the field in the page's words, and Load then gives the same page as num_heads first", async () => {
    const sectionRuns = () => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs;
    const first = await openPage(lab);
    await first.getByTestId("ckpt-heads").fill(String(tiny.n_head));
    await first.getByTestId("ckpt-file").setInputFiles(file);
    await first.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === "1", null, { timeout: 60_000 });
    const want = await first.getByTestId("gpt2-next").locator("li").allTextContents();
    await finish(first);

    const page = await openPage(lab);
    await page.getByTestId("ckpt-file").setInputFiles(file);
    const error = page.getByTestId("ckpt-error");
    await error.waitFor();
    assert.equal(await error.getAttribute("data-code"), "checkpoint_num_heads");
    assert.match(await error.textContent(), /Give num_heads: a whole number that divides 8/);
    assert.doesNotMatch(await error.textContent(), /\{num_heads/, "no API syntax for a page reader");
    assert.equal(await page.getByTestId("ckpt-heads").getAttribute("aria-invalid"), "true", "the field the error names is marked");
    await page.getByTestId("ckpt-heads").fill(String(tiny.n_head));
    assert.equal(await page.getByTestId("ckpt-heads").getAttribute("aria-invalid"), null);
    await page.getByTestId("ckpt-load").click();
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === "1", null, { timeout: 60_000 });
    assert.deepEqual(await page.getByTestId("gpt2-next").locator("li").allTextContents(), want);
    assert.equal(await page.getByTestId("gpt2-cell").count(), tiny.n_layer * tiny.n_head);
    // Load again with nothing changed: the layer reloads, the whole model is not run again
    await page.getByTestId("ckpt-load").click();
    await page.getByTestId("ckpt-summary").waitFor();
    assert.equal(await page.evaluate(sectionRuns), "1");
    await finish(page);
  });

  test("on 100 tokens each pattern is the core's 64 x 64 thumbnail and the head view draws the first 48 tokens' exact weights", async () => {
    const page = await openPage(lab);
    await page.getByTestId("ckpt-heads").fill(String(tiny.n_head));
    await page.getByTestId("ckpt-file").setInputFiles(file);
    const section = page.getByTestId("gpt2-section");
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === "1");
    const ids = Array.from({ length: 100 }, (_, i) => tiny.token_ids[i % tiny.token_ids.length]);
    await page.getByTestId("ckpt-kind-ids").check();
    await page.getByTestId("ckpt-ids").fill(ids.join(", "));
    await section.getByTestId("gpt2-run").click();
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === "2");
    // the same numbers from the library in Node: the page draws them, it does not compute them
    const nodeLab = await loadAttentionLab();
    const model = await nodeLab.loadGPT2(gpt2File(nodeLab, tiny), { num_heads: tiny.n_head });
    const r = await model.run(ids, { attention: "thumbnails" });
    model.dispose();
    const cells = page.getByTestId("gpt2-cell");
    assert.equal(await cells.count(), tiny.n_layer * tiny.n_head);
    assert.deepEqual(await cells.first().locator("canvas").evaluate((c) => [c.width, c.height]), [64, 64]);
    assert.match(await page.getByTestId("gpt2-grid").locator("caption").textContent(), /on 100 tokens/);
    assert.equal(await page.getByTestId("gpt2-grid-averaged").textContent(), "Each pattern is 64 × 64 cells, each the mean weight of about 2 × 2 query-key pairs.");
    await page.locator('[data-testid=gpt2-cell][data-layer="0"][data-head="1"]').click();
    const view = page.getByTestId("gpt2-head-view");
    assert.match(await view.textContent(), /The first 48 of 100 tokens are drawn\./);
    const F = 48;
    const w = r.layers[0].firstTokens.data;
    const want = [];
    for (let i = 0; i < F; i++) for (let j = 0; j <= i; j++) if (w[(1 * F + i) * F + j] >= 0.01) want.push(`${i}-${j}`);
    assert.deepEqual(await view.locator("line").evaluateAll((ls) => ls.map((l) => `${l.dataset.query}-${l.dataset.key}`)), want);
    await page.getByTestId("gpt2-section").screenshot({ path: `${SCREENSHOT_DIR}/gpt2-thumbnails.png` });
    await finish(page);
  });

  test("on 1,024 ids a grid click redraws only what changed: two cells' pressed states and the head view, from the core's thumbnails", async () => {
    const page = await openPage(lab);
    await page.getByTestId("ckpt-heads").fill(String(tiny.n_head));
    await page.getByTestId("ckpt-file").setInputFiles(file);
    const runs = (n) => page.waitForFunction((k) => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === String(k), n);
    await runs(1);
    await page.getByTestId("ckpt-kind-ids").check();
    await page.getByTestId("ckpt-ids").fill(Array.from({ length: 1024 }, (_, i) => tiny.token_ids[i % tiny.token_ids.length]).join(", "));
    await page.getByTestId("gpt2-run").click();
    await runs(2);
    assert.match(await page.getByTestId("gpt2-grid").locator("caption").textContent(), /on 1024 tokens/);
    // every mutation of the grid and the head view while one cell is clicked
    const seen = await page.evaluate(async () => {
      const root = document.querySelector("attention-lab").shadowRoot;
      const grid = root.querySelector("[data-testid=gpt2-grid]");
      const view = root.querySelector("[data-testid=gpt2-head-view]");
      const canvases = [...grid.querySelectorAll("canvas")];
      const records = [];
      const watch = new MutationObserver((list) => records.push(...list.map((m) => ({ where: grid.contains(m.target) ? "grid" : "view", type: m.type, attribute: m.attributeName, layer: m.target.dataset?.layer, head: m.target.dataset?.head }))));
      watch.observe(grid, { subtree: true, childList: true, attributes: true, characterData: true });
      watch.observe(view, { subtree: true, childList: true, attributes: true, characterData: true });
      grid.querySelector('[data-layer="1"][data-head="1"]').click();
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      watch.disconnect();
      return { records, sameCanvases: canvases.every((c, i) => c === grid.querySelectorAll("canvas")[i] && c.isConnected), title: view.querySelector("h4").textContent };
    });
    assert.ok(seen.sameCanvases, "the grid's thumbnails are the same canvases");
    const inGrid = seen.records.filter((r) => r.where === "grid");
    assert.deepEqual(inGrid.map((r) => [r.type, r.attribute, r.layer, r.head]), [["attributes", "aria-pressed", "0", "0"], ["attributes", "aria-pressed", "1", "1"]]);
    assert.ok(seen.records.some((r) => r.where === "view" && r.type === "childList"), "the head view is redrawn");
    assert.match(seen.title, /layer 1, head 1/i);
    await finish(page);
  });

  test("a failed or cancelled whole-model run marks the patterns and next tokens still on screen as the previous run's", async () => {
    const page = await openPage(lab);
    await page.getByTestId("ckpt-heads").fill(String(tiny.n_head));
    await page.getByTestId("ckpt-file").setInputFiles(file);
    const runs = (n) => page.waitForFunction((k) => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === String(k), n);
    await runs(1);
    await page.getByTestId("ckpt-kind-ids").check();
    await page.getByTestId("ckpt-ids").fill(tiny.token_ids.join(", "));
    await page.getByTestId("gpt2-run").click();
    await runs(2);
    assert.equal(await page.getByTestId("gpt2-stale").isHidden(), true);
    assert.equal(await page.getByTestId("gpt2-grid").getAttribute("data-stale"), null);
    // an id outside the vocabulary: the run fails; what is on screen is still the six-token run's
    await page.getByTestId("ckpt-ids").fill("0, 1, 99999");
    await page.getByTestId("gpt2-run").click();
    await page.getByTestId("gpt2-diag").waitFor();
    assert.equal(await page.getByTestId("gpt2-diag").getAttribute("data-code"), "checkpoint_token");
    assert.equal(await page.getByTestId("gpt2-stale").textContent(),
      `This run failed: the patterns and next tokens below are still those of the previous run, on 6 tokens (${tiny.token_ids.map((id) => `#${id}`).join(" ")}).`);
    for (const id of ["gpt2-grid", "gpt2-next", "gpt2-head-view"]) assert.equal(await page.getByTestId(id).getAttribute("data-stale"), "true", id);
    // a run that succeeds is this run's again
    await page.getByTestId("ckpt-ids").fill("0, 1, 2");
    await page.getByTestId("gpt2-run").click();
    await runs(3);
    assert.equal(await page.getByTestId("gpt2-stale").isHidden(), true);
    assert.equal(await page.getByTestId("gpt2-next").getAttribute("data-stale"), null);
    await finish(page);
  });
});
