// The GPT-2 section's Generate: a whole GPT-2 file chosen in the checkpoint panel writes text on the
// panel's tokens, in the worker, token by token, as the book's chapter 5 generate does in PyTorch 1.13
// (tests/fixtures/gpt2/generate.json): greedy with and without the KV cache, then sampling on
// torch.manual_seed(123), with the PyTorch call that gives the same ids; the attention grid of the new
// tokens (values from the library in Node), the run without the cache beside the cached one, the
// prompt typed as text (the file's vocabulary is GPT-2's 50,257 tokens), and cancelling mid-generation.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { decode, encode } from "gpt-tokenizer/encoding/r50k_base";
import { loadAttentionLab } from "attention-lab";
import { gpt2File } from "../gpt2-files.mjs";
import { finish, launchLab, openPage, SCREENSHOT_DIR, screenshotDir } from "./helpers.mjs";

const FIXTURES = JSON.parse(await readFile(new URL("../fixtures/gpt2/generate.json", import.meta.url), "utf8"));
const spec = FIXTURES.files.find((f) => f.name === "tiny_f32");
const greedy = FIXTURES.cases.find((c) => c.name === "greedy");
const sampled = FIXTURES.cases.find((c) => c.name === "sample_t1");

describe("GPT-2 writes text on the page", () => {
  let lab;
  let dir;
  let file;
  let nodeLab;
  before(async () => {
    lab = await launchLab();
    await screenshotDir();
    nodeLab = await loadAttentionLab();
    dir = await mkdtemp(path.join(os.tmpdir(), "attention-lab-generate-"));
    file = path.join(dir, "tiny-gpt2.safetensors");
    await writeFile(file, gpt2File(nodeLab, spec));
  });
  after(async () => {
    await lab?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const runs = (page, n, timeout = 30_000) =>
    page.waitForFunction((k) => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-generate]")?.dataset.runs === String(k), n, { timeout });
  /** The page with the tiny file loaded and the whole model run once. */
  async function loaded() {
    const page = await openPage(lab);
    await page.getByTestId("ckpt-heads").fill(String(spec.n_head));
    await page.getByTestId("ckpt-file").setInputFiles(file);
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === "1");
    return page;
  }
  /** Per layer x head (row-major), the most weighted key of a step's rows and its weight, as the grid should say. */
  function topKeys(step) {
    const [L, H, T] = step.attention.shape;
    const out = [];
    for (let r = 0; r < L * H; r++) {
      const row = step.attention.data.subarray(r * T, (r + 1) * T);
      let top = 0;
      for (let j = 1; j < T; j++) if (row[j] > row[top]) top = j;
      out.push({ key: top, weight: row[top] });
    }
    return out;
  }
  const gridCells = (page) => page.getByTestId("gen-cell").evaluateAll((tds) => tds.map((td) => ({ key: Number(td.dataset.key), weight: Number(td.dataset.weight), title: td.title })));
  const assertGrid = (cells, step, what) => {
    const want = topKeys(step);
    assert.equal(cells.length, want.length, `${what}: n_layer x n_head cells`);
    cells.forEach((c, i) => {
      assert.equal(c.key, want[i].key, `${what}, cell ${i}: the most weighted key`);
      assert.ok(Math.abs(c.weight - want[i].weight) <= 1e-6, `${what}, cell ${i}: ${c.weight} vs ${want[i].weight} (printed to 6 decimals)`);
    });
  };

  test("greedy (cached and not) and sampled tokens appear one by one, as PyTorch's, with the attention grid, both times per token and the book's generate call", async () => {
    const page = await loaded();
    await page.getByTestId("ckpt-kind-ids").check();
    await page.getByTestId("ckpt-ids").fill(greedy.prompt.join(", "));
    const section = page.getByTestId("gpt2-generate");
    const newIds = () => section.getByTestId("gen-token").evaluateAll((spans) => spans.map((s) => Number(s.dataset.id)));
    // the grid follows the generation: record every step it shows and every table it builds
    await page.evaluate(`(() => {
      const host = document.querySelector("attention-lab").shadowRoot;
      window.gridSteps = [];
      window.gridTables = new Set();
      new MutationObserver(() => {
        const grid = host.querySelector("[data-testid=gen-grid]");
        if (grid?.dataset.step && grid.dataset.step !== window.gridSteps.at(-1)) window.gridSteps.push(grid.dataset.step);
        const table = host.querySelector("[data-testid=gen-grid-table]");
        if (table) window.gridTables.add(table);
      }).observe(host, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-step"] });
    })()`);

    await page.getByTestId("gen-max").fill(String(greedy.max_new_tokens));
    await page.getByTestId("gen-run").click();
    await runs(page, 1);
    assert.deepEqual(await newIds(), greedy.token_ids.slice(greedy.prompt.length));
    assert.equal(await section.getByTestId("gen-steps").locator("li").count(), greedy.max_new_tokens);
    assert.match(await section.getByTestId("gen-status").textContent(), /^10 new tokens; with the KV cache; the weights stayed in memory/);
    assert.match(await section.getByTestId("gen-steps").locator("li").nth(2).textContent(), /cache 6 tokens, 0\.8 KiB/);
    assert.match(await section.getByTestId("gen-code").textContent(), /generate\(model, idx, max_new_tokens=10, context_size=1024, temperature=0\.0, top_k=None, eos_id=None\)/);

    // the grid: n_layer x n_head rows of the newest token, equal to the library's own rows in Node
    const model = await nodeLab.loadGPT2(await readFile(file), { num_heads: spec.n_head });
    const ref = await model.generate(greedy.prompt, { maxNewTokens: greedy.max_new_tokens, attention: true });
    assert.deepEqual(ref.tokenIds, greedy.token_ids);
    assert.deepEqual(await page.evaluate("window.gridSteps"), Array.from({ length: 10 }, (_, i) => String(i + 1)), "one grid update per new token, in order");
    assert.equal(await page.evaluate("window.gridTables.size"), 1, "the table is built once; each update redraws its cells in place");
    assert.equal(await page.getByTestId("gen-cell").count(), spec.n_layer * spec.n_head);
    assertGrid(await gridCells(page), ref.steps[9], "the newest token");
    assert.equal(await page.getByTestId("gen-grid").getAttribute("data-keys"), String(greedy.prompt.length + 9));
    // picking the first new token shows its rows (over the 4 prompt tokens); "follow" goes back to the newest
    await section.getByTestId("gen-token").first().click();
    assert.equal(await page.getByTestId("gen-grid").getAttribute("data-step"), "1");
    assert.equal(await page.getByTestId("gen-grid").getAttribute("data-keys"), "4");
    const first = await gridCells(page);
    assertGrid(first, ref.steps[0], "the first new token");
    assert.match(first[0].title, /^Layer 0, head 0: most weight on #\d+ \(0\.\d{3}\)$/);
    assert.notDeepEqual(first, await (async () => { await page.getByTestId("gen-follow").click(); return gridCells(page); })(), "the rows change with the token");
    assert.equal(await page.getByTestId("gen-grid").getAttribute("data-step"), "10");
    assert.equal(await page.evaluate("window.gridTables.size"), 1, "picks redraw in place too");

    // the same tokens without the cache, beside it: both times per token, the same ids
    assert.equal(await page.getByTestId("gen-compare-run").textContent(), "Run the same tokens without the cache");
    await page.getByTestId("gen-compare-run").click();
    await page.getByTestId("gen-same").waitFor();
    assert.equal(await page.getByTestId("gen-same").getAttribute("data-same"), "true");
    assert.match(await page.getByTestId("gen-same").textContent(), /same 10 token ids/);
    const times = await page.getByTestId("gen-times").locator("tbody tr").allTextContents();
    assert.equal(times.length, 2);
    // the first token reads the whole prompt either way (the prefill): shown apart, then the mean over the other 9
    assert.match(times[0], /^with the KV cachefirst \d+(\.\d+)? msthen \d+(\.\d+)? ms per token \(9 tokens\)$/);
    assert.match(times[1], /^without the cachefirst \d+(\.\d+)? msthen \d+(\.\d+)? ms per token \(9 tokens\)$/);
    assert.match(await page.getByTestId("gen-times-note").textContent(), /reads the whole prompt with or without the cache.*can look no faster or even slower/);
    await section.screenshot({ path: `${SCREENSHOT_DIR}/gpt2-generate-compare.png` });

    await page.getByTestId("gen-cache").uncheck();
    await page.getByTestId("gen-run").click();
    await runs(page, 2);
    assert.deepEqual(await newIds(), greedy.token_ids.slice(greedy.prompt.length), "without the cache: the same ids");
    assert.match(await section.getByTestId("gen-status").textContent(), /without the cache/);
    assertGrid(await gridCells(page), ref.steps[9], "without the cache, the newest token");

    await page.getByTestId("gen-cache").check();
    await page.getByTestId("gen-temperature").fill(String(sampled.temperature));
    await page.getByTestId("gen-seed").fill(String(sampled.seed));
    await page.getByTestId("gen-run").click();
    await runs(page, 3);
    assert.deepEqual(await newIds(), sampled.token_ids.slice(sampled.prompt.length), "torch.manual_seed(123) + multinomial: PyTorch's ids");
    const [modelLines, sampledCode] = (await section.getByTestId("gen-code").textContent()).split("model.eval()\n\n");
    assert.match(modelLines, /model = GPTModel\(cfg\)\nsd = load_file\(".*"\)\nload_weights_into_gpt\(model, sd\)/);
    assert.equal(sampledCode,
      "# the book's chapter 5 generate (ch05/01_main-chapter-code), the same ids; the KV cache (ch04/03_kv-cache) does not change them\n" +
      "torch.manual_seed(123)\nidx = torch.tensor([[15496, 11, 616, 1438]])\n" +
      "out = generate(model, idx, max_new_tokens=10, context_size=1024, temperature=1.0, top_k=None, eos_id=None)");
    await section.screenshot({ path: `${SCREENSHOT_DIR}/gpt2-generate.png` });

    // an option out of range is the core's coded error, naming it
    await page.getByTestId("gen-max").fill("0");
    await page.getByTestId("gen-run").click();
    await page.getByTestId("gen-diag").waitFor();
    assert.equal(await page.getByTestId("gen-diag").getAttribute("data-code"), "generate_option");
    model.dispose();
    await finish(page);
  });

  test("the prompt typed as text: GPT-2's tokenizer gives PyTorch's prompt ids, and the new tokens are shown as text, with top-k and eos in the call", async () => {
    const page = await loaded();
    const sentence = "Hello, my name";
    assert.equal(await page.getByTestId("ckpt-kind-text").isChecked(), true, "a file of GPT-2's 50,257 tokens starts on text");
    await page.getByTestId("ckpt-text").fill(sentence);
    assert.deepEqual(encode(sentence), greedy.prompt, "the fixture's prompt is the sentence's GPT-2 ids");
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=ckpt-chips]")?.querySelectorAll("li").length === 4);
    assert.deepEqual(await page.getByTestId("ckpt-chips").locator("li").evaluateAll((lis) => lis.map((li) => Number(li.dataset.id))), greedy.prompt);
    const section = page.getByTestId("gpt2-generate");
    await page.getByTestId("gen-max").fill(String(greedy.max_new_tokens));
    await page.getByTestId("gen-topk").fill("40");
    await page.getByTestId("gen-eos").fill("50256");
    await page.getByTestId("gen-run").click();
    await runs(page, 1);
    const newIds = greedy.token_ids.slice(greedy.prompt.length);  // greedy: top-k 40 keeps the argmax; 50256 is never picked here
    assert.deepEqual(await section.getByTestId("gen-token").evaluateAll((b) => b.map((x) => Number(x.dataset.id))), newIds);
    assert.equal(await section.getByTestId("gen-text").textContent(), decode(greedy.token_ids), "the prompt, then each new token's text");
    assert.deepEqual(await section.getByTestId("gen-token").allTextContents(), newIds.map((id) => decode([id])));
    // each new token's id beside its text in the steps, as the prompt's chips show theirs
    assert.deepEqual(await section.getByTestId("gen-id").allTextContents(), newIds.map(String));
    // the whole model ran on the panel's first sentence when the file loaded: since the text changed, its
    // top 5 and grid are marked as the previous tokens', until it runs again
    const stale = () => page.getByTestId("gpt2-next").getAttribute("data-stale");
    assert.equal(await stale(), "true");
    assert.match(await page.getByTestId("gpt2-stale").textContent(), /^The tokens changed: the patterns and next tokens below are those of the previous tokens \(Your /);
    await page.getByTestId("gpt2-run").click();
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === "2");
    assert.equal(await stale(), null);
    assert.equal(await page.getByTestId("gpt2-stale").isHidden(), true);
    await page.getByTestId("ckpt-text").fill(`${sentence} is`);
    assert.equal(await stale(), "true");
    assert.match(await page.getByTestId("gpt2-stale").textContent(), /\(Hello , my name\)/);
    assert.match(await page.getByTestId("gen-grid-caption").textContent(), new RegExp(`^New token 10, ${decode([newIds[9]]).replace(/ /g, "␣").replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:`));
    assert.equal((await section.getByTestId("gen-code").textContent()).split("model.eval()\n\n")[1],
      "# the book's chapter 5 generate (ch05/01_main-chapter-code), the same ids; the KV cache (ch04/03_kv-cache) does not change them\n" +
      "torch.manual_seed(123)  # greedy at temperature 0: nothing is drawn\nidx = text_to_token_ids(\"Hello, my name\", tokenizer)  # [[15496, 11, 616, 1438]]\n" +
      "out = generate(model, idx, max_new_tokens=10, context_size=1024, temperature=0.0, top_k=40, eos_id=50256)\nprint(token_ids_to_text(out, tokenizer))");
    for (const [width, name] of [[1280, "gpt2-generate-1280"], [390, "gpt2-generate-390"]]) {
      await page.setViewportSize({ width, height: 900 });
      await section.screenshot({ path: `${SCREENSHOT_DIR}/${name}.png` });
    }
    await finish(page);
  });

  test("cancelling a traced run in the worker does not restart a generation in flight (file work has its own worker)", async () => {
    // a run big enough to go to the worker: MultiHeadAttention(768, 768, 1024, 0.0, 12) on 1024 random tokens
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0.0&num_heads=12&num_tokens=1024");
    const widgetRuns = () => page.evaluate(() => Number(document.querySelector("attention-lab").dataset.runs ?? 0));
    // (a setup this large does not run on its own: Run starts it)
    await page.getByTestId("ckpt-heads").fill(String(spec.n_head));
    await page.getByTestId("ckpt-file").setInputFiles(file);
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs === "1");
    await page.getByTestId("ckpt-kind-ids").check();
    await page.getByTestId("ckpt-ids").fill(greedy.prompt.join(", "));
    const total = 1000;  // long enough to be in flight when the traced run is cancelled (checked below)
    await page.getByTestId("gen-max").fill(String(total));
    await page.getByTestId("gen-run").click();
    await page.waitForFunction(() => Number(document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-generate]")?.dataset.tokens) >= 2);
    const before = await widgetRuns();
    await page.getByTestId("run").click();
    // Cancel shows once the run has taken 200 ms and hides when it ends: clicked from the page as soon as
    // it shows (polled every frame), not by a locator whose retries can miss a run of a few hundred ms.
    await page.waitForFunction(() => {
      const cancel = document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=cancel]");
      if (!cancel || cancel.hidden) return false;
      cancel.click();
      return true;
    });
    const atCancel = Number(await page.getByTestId("gpt2-generate").getAttribute("data-tokens"));
    assert.ok(atCancel < total, `the cancel came mid-generation (${atCancel} of ${total} tokens)`);
    await page.waitForFunction((n) => Number(document.querySelector("attention-lab").dataset.runs ?? 0) > n, before);
    assert.equal(await page.getByTestId("trace-status").textContent(), "The run was cancelled.");
    await runs(page, 1, 300_000);  // a waiting time, not an assertion: 1,000 tokens on a busy machine
    const ids = await page.getByTestId("gen-token").evaluateAll((b) => b.map((x) => Number(x.dataset.id)));
    assert.equal(ids.length, total, "each token once: the generation was not sent again from its first step");
    assert.deepEqual(ids.slice(0, 10), greedy.token_ids.slice(greedy.prompt.length));
    assert.match(await page.getByTestId("gen-status").textContent(), new RegExp(`^${total} new tokens; with the KV cache`));
    await finish(page);
  });

  test("cancel mid-generation: the status says so, the tokens written so far stay and are marked", async () => {
    const page = await loaded();
    await page.getByTestId("ckpt-kind-ids").check();
    await page.getByTestId("ckpt-ids").fill(greedy.prompt.join(", "));
    const section = page.getByTestId("gpt2-generate");
    await page.getByTestId("gen-max").fill("1000");
    await page.getByTestId("gen-run").click();
    await page.waitForFunction(() => Number(document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-generate]")?.dataset.tokens) >= 2);
    await page.getByTestId("gen-cancel").click();
    await page.getByTestId("gen-diag").waitFor();
    assert.equal(await page.getByTestId("gen-diag").getAttribute("data-code"), "cancelled");
    const written = await section.getByTestId("gen-token").count();
    assert.ok(written >= 2 && written < 1000, `${written} tokens before the cancel`);
    assert.equal(await section.getByTestId("gen-status").textContent(), `Cancelled after ${written} of 1000 new tokens: the tokens written so far stay, marked as cut short.`);
    assert.equal(await section.getByTestId("gen-text").getAttribute("data-state"), "cancelled");
    assert.equal(await section.getByTestId("gen-steps").getAttribute("data-state"), "cancelled");
    assert.equal(await section.getByTestId("gen-cut").count(), 1);
    assert.deepEqual(await section.getByTestId("gen-token").evaluateAll((b) => b.map((x) => Number(x.dataset.id))).then((ids) => ids.slice(0, 10)),
      greedy.token_ids.slice(greedy.prompt.length, greedy.prompt.length + Math.min(10, written)), "the kept tokens are the generation's");
    assert.equal(await page.getByTestId("gen-run").isDisabled(), false);
    assert.equal(await page.getByTestId("gen-compare-run").isHidden(), true, "no comparison of a cut run");
    // a new run clears the marks
    await page.getByTestId("gen-max").fill("2");
    await page.getByTestId("gen-run").click();
    await runs(page, 1);
    assert.equal(await section.getByTestId("gen-text").getAttribute("data-state"), null);
    assert.equal(await section.getByTestId("gen-cut").count(), 0);
    await finish(page);
  });
});
