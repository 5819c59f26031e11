// The compare panel: exercise 3.1 both ways (SelfAttention_v2 seed 789 <-> SelfAttention_v1 seed 123,
// each matrix copied or not, transposed or not) and MultiHeadAttentionWrapper <-> MultiHeadAttention
// with the same weights.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { finish, launchLab, openPage, screenshotDir } from "./helpers.mjs";


// One Chromium for the whole file: each test opens pages of its own in it.
let lab;
before(async () => {
  lab = await launchLab();
});
after(async () => { await lab?.close(); });

describe("compare: copy weights (exercise 3.1)", () => {
  test("copying every matrix transposed makes v1 agree with v2", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v2&d_in=3&d_out=2");
    await page.getByTestId("copy-button").click();
    const verdict = page.getByTestId("copy-verdict");
    await verdict.waitFor();
    assert.equal(await verdict.getAttribute("data-agree"), "true");
    assert.match(await verdict.textContent(), /\bagree\b/);
    const maxdiff = page.getByTestId("copy-maxdiff");
    const value = Number(await maxdiff.getAttribute("data-value"));
    assert.ok(value <= 1e-6, `max abs difference ${value}`);
    assert.match(await maxdiff.textContent(), /Largest absolute difference/);
    assert.ok(await maxdiff.isVisible());
    const actions = await page.getByTestId("copy-report").locator("tbody[data-matrix]").evaluateAll((bodies) => bodies.map((b) => [b.dataset.matrix, b.dataset.action]));
    assert.deepEqual(actions, [["W_query", "transposed"], ["W_key", "transposed"], ["W_value", "transposed"]]);
    assert.match(await page.getByTestId("copy-pytorch").textContent(), /sa_v1\.W_query = torch\.nn\.Parameter\(sa_v2\.W_query\.weight\.T\)/);
    await finish(page);
  });

  test("with d_in = d_out = 3, W_key copied without transpose disagrees and is named", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v2&d_in=3&d_out=3");
    await page.getByTestId("transpose-W_key").uncheck();
    await page.getByTestId("copy-button").click();
    const verdict = page.getByTestId("copy-verdict");
    await verdict.waitFor();
    assert.equal(await verdict.getAttribute("data-agree"), "false");
    const text = await verdict.textContent();
    assert.match(text, /disagree/);
    assert.match(text, /W_key/);
    assert.doesNotMatch(text, /W_query|W_value/);
    assert.ok(Number(await page.getByTestId("copy-maxdiff").getAttribute("data-value")) > 1e-6);
    const row = page.getByTestId("copy-report").locator("tbody[data-matrix=W_key]");
    assert.equal(await row.getAttribute("data-action"), "copied");
    assert.match(await row.textContent(), /\(3, 3\) → \(3, 3\)/);
    const code = await page.getByTestId("copy-pytorch").textContent();
    assert.match(code, /sa_v1\.W_key = torch\.nn\.Parameter\(sa_v2\.W_key\.weight\)\n/);
    assert.match(code, /SelfAttention_v2\(3, 3\)/);
    // Stage by stage, the first difference is at keys.
    assert.match(await page.getByTestId("copy-stages").locator(".copy-stages-title").textContent(), /first difference appears at keys/);
    assert.equal(await page.getByTestId("copy-stages").locator("tr.differs").first().getAttribute("data-copy-stage"), "keys");
    // In words: the square matrix fits either way, PyTorch says nothing, only the outputs tell.
    const square = page.getByTestId("copy-square");
    const words = await square.textContent();
    assert.match(words, /W_key was copied without \.T/);
    assert.match(words, /d_in = d_out = 3/);
    assert.match(words, /PyTorch accepts the copy without any error/);
    const diff = Number(words.match(/differ by up to ([\d.]+)/)[1]);
    assert.ok(diff > 1e-3, `difference in words ${diff}`);
    assert.ok(Math.abs(diff - Number(await square.getAttribute("data-value"))) < 1e-4);
    await finish(page);
  });

  test("SelfAttention_v1 -> SelfAttention_v2 with every .T agrees too", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v2&d_in=3&d_out=2");
    await page.getByTestId("copy-dir-sa_v1-sa_v2").check();
    assert.match(await page.getByTestId("copy-intro").textContent(), /^Builds SelfAttention_v1\(3, 2\) after torch\.manual_seed\(123\) and SelfAttention_v2\(3, 2\) after torch\.manual_seed\(789\)/);
    await page.getByTestId("copy-button").click();
    const verdict = page.getByTestId("copy-verdict");
    assert.equal(await verdict.getAttribute("data-agree"), "true");
    assert.ok(Number(await page.getByTestId("copy-maxdiff").getAttribute("data-value")) <= 1e-6);
    const rows = page.getByTestId("copy-report").locator("tbody[data-matrix]");
    assert.deepEqual(await rows.evaluateAll((bodies) => bodies.map((b) => b.dataset.action)), ["transposed", "transposed", "transposed"]);
    assert.match(await rows.first().textContent(), /\(3, 2\) → \(2, 3\)/);
    const stages = await page.getByTestId("copy-stages").locator("tbody tr").evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.value)));
    assert.ok(stages.length >= 6 && stages.every((v) => v <= 1e-6), stages.join(" "));
    assert.match(await page.getByTestId("copy-pytorch").textContent(), /sa_v2\.W_query\.weight = torch\.nn\.Parameter\(sa_v1\.W_query\.T\)/);
    await finish(page);
  });

  test("a non-square copy without .T is a shape mismatch with both shapes, and it looks transposed", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v2&d_in=3&d_out=2");
    await page.getByTestId("transpose-W_key").uncheck();
    await page.getByTestId("copy-button").click();
    await page.getByTestId("copy-verdict").waitFor();
    assert.equal(await page.getByTestId("copy-verdict").getAttribute("data-agree"), "false");
    const row = page.getByTestId("copy-report").locator("tbody[data-matrix=W_key]");
    assert.equal(await row.getAttribute("data-action"), "shape_mismatch");
    const text = await row.textContent();
    assert.match(text, /shape mismatch/);
    assert.match(text, /\(2, 3\) → \(3, 2\)/);
    assert.match(text, /looks transposed/);
    assert.ok(await row.getByTestId("looks-transposed").isVisible());
    // The other two were copied with .T; a matrix left out keeps its own values, in words.
    assert.equal(await page.getByTestId("copy-report").locator("tbody[data-matrix=W_query]").getAttribute("data-action"), "transposed");
    await page.getByTestId("copy-W_value").uncheck();
    await page.getByTestId("copy-button").click();
    assert.match(await page.getByTestId("copy-report").locator("tbody[data-matrix=W_value]").textContent(), /left at its own initial values/);
    assert.equal(await page.getByTestId("copy-square").count(), 0, "not the square-matrix case");
    await finish(page);
  });

  test("the PyTorch lines follow the boxes and the direction; a copy on screen goes stale when they change", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v2&d_in=4&d_out=2&seed=5&tokens=a%20b%20a");
    const preview = page.getByTestId("copy-code-preview");
    const lines = async () => (await preview.textContent()).split("\n");
    assert.deepEqual(await lines(), [
      "sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)",
      "sa_v1.W_key = torch.nn.Parameter(sa_v2.W_key.weight.T)",
      "sa_v1.W_value = torch.nn.Parameter(sa_v2.W_value.weight.T)",
    ]);
    await page.getByTestId("transpose-W_value").uncheck();
    await page.getByTestId("copy-W_query").uncheck();
    assert.equal(await page.getByTestId("transpose-W_query").isDisabled(), true);
    assert.deepEqual(await lines(), [
      "# sa_v1.W_query keeps its own initial values",
      "sa_v1.W_key = torch.nn.Parameter(sa_v2.W_key.weight.T)",
      "sa_v1.W_value = torch.nn.Parameter(sa_v2.W_value.weight)",
    ]);
    await page.getByTestId("copy-dir-sa_v1-sa_v2").check();
    assert.deepEqual(await lines(), [
      "# sa_v2.W_query.weight keeps its own initial values",
      "sa_v2.W_key.weight = torch.nn.Parameter(sa_v1.W_key.T)",
      "sa_v2.W_value.weight = torch.nn.Parameter(sa_v1.W_value)",
    ]);
    // The copy runs on the page's current tokens ("a b a", width 4), and its code says so.
    await page.getByTestId("copy-button").click();
    await page.getByTestId("copy-verdict").waitFor();
    assert.match(await page.getByTestId("copy-result").textContent(), /current tokens \(3 × 4/);
    const code = await page.getByTestId("copy-pytorch").textContent();
    for (const line of await lines()) assert.ok(code.includes(`${line}\n`), line);
    assert.match(code, /\ng = torch\.Generator\(\)\.manual_seed\(5\)\ntokens = torch\.rand\(len\(vocab\), 4, generator=g\)\[ids\]/);
    assert.match(code, /print\(\(sa_v2\(tokens\) - sa_v1\(tokens\)\)\.abs\(\)\.max\(\)\)/);
    assert.equal(await page.getByTestId("copy-stale").isVisible(), false);
    // Change a box: the result is marked stale, the preview and the code view follow at once.
    await page.getByTestId("copy-W_query").check();
    assert.ok(await page.getByTestId("copy-stale").isVisible());
    assert.equal((await lines())[0], "sa_v2.W_query.weight = torch.nn.Parameter(sa_v1.W_query.T)");
    assert.match(await page.getByTestId("code-view").textContent(), /\nsa_v2\.W_query\.weight = torch\.nn\.Parameter\(sa_v1\.W_query\.T\)\n/);
    await page.getByTestId("copy-button").click();
    assert.equal(await page.getByTestId("copy-stale").isVisible(), false);
    await finish(page);
  });
});

describe("compare: wrapper and fused MultiHeadAttention", () => {
  test("the converter gives the equivalent call both ways, and the same weights agree at every stage", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttentionWrapper&d_in=3&d_out=2&context_length=6&dropout=0&num_heads=2");
    assert.equal(await page.getByTestId("compare-mode-convert").isChecked(), true);
    assert.equal(await page.getByTestId("converter-a").textContent(), "MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)");
    assert.equal(await page.getByTestId("converter-b").textContent(), "MultiHeadAttention(3, 4, 6, 0.0, 2)");
    assert.match(await page.getByTestId("converter-rule").textContent(), /2 heads × 2 = 4/);
    await page.getByTestId("compare-button").click();
    const verdict = page.getByTestId("compare-verdict");
    assert.equal(await verdict.getAttribute("data-agree"), "true");
    assert.equal(await page.getByTestId("compare-col").count(), 2, "side by side");
    const rows = await page.getByTestId("compare-stages").locator("tbody tr").evaluateAll((trs) => trs.map((tr) => tr.dataset.compareStage));
    assert.ok(rows.includes("attn_weights") && rows.includes("output"), rows.join(" "));
    // The code view now includes the weight copy that makes them equal.
    assert.match(await page.getByTestId("code-view").textContent(), /mha\.W_query\.weight = torch\.nn\.Parameter\(torch\.cat\(\[h\.W_query\.weight for h in wrapper\.heads\], dim=0\)\)/);
    // The converter switches the setup to the fused call.
    await page.getByTestId("converter-use").click();
    assert.equal(await page.getByTestId("call-box").inputValue(), "MultiHeadAttention(3, 4, 6, 0.0, 2)");
    assert.equal(await page.getByTestId("converter-b").textContent(), "MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)");
    await finish(page);
  });

  test("exercise 3.2's wrapper(3, 1, 6, 0.0, 2) and MultiHeadAttention(3, 2, 6, 0.0, 2) agree within 1e-6 at every stage", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttentionWrapper&d_in=3&d_out=1&context_length=6&dropout=0&num_heads=2");
    assert.equal(await page.getByTestId("converter-b").textContent(), "MultiHeadAttention(3, 2, 6, 0.0, 2)");
    await page.getByTestId("compare-button").click();
    assert.equal(await page.getByTestId("compare-verdict").getAttribute("data-agree"), "true");
    const rows = await page.getByTestId("compare-stages").locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [tr.dataset.compareStage, Number(tr.dataset.value)]));
    const ids = rows.map(([id]) => id);
    for (const id of ["queries", "keys", "values", "attn_scores", "attn_weights", "context_vec", "output"]) assert.ok(ids.includes(id), `${id} in ${ids.join(" ")}`);
    for (const [id, v] of rows) assert.ok(v <= 1e-6, `${id}: ${v}`);
    const code = await page.getByTestId("code-view").textContent();
    assert.match(code, /mha\.out_proj\.weight = torch\.nn\.Parameter\(torch\.eye\(2\)\)/);
    assert.match(code, /mha\.out_proj\.bias = torch\.nn\.Parameter\(torch\.zeros\(2\)\)/);
    await finish(page);
  });

  test("interleaving the heads (the head-merge mistake) disagrees, and the table says where it starts", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=3&d_out=4&context_length=6&dropout=0&num_heads=2");
    await page.getByTestId("compare-layout").selectOption("interleaved");
    await page.getByTestId("compare-button").click();
    const verdict = page.getByTestId("compare-verdict");
    assert.equal(await verdict.getAttribute("data-agree"), "false");
    assert.match(await verdict.textContent(), /first difference appears at/);
    assert.ok(await page.getByTestId("compare-stages").locator("tr.differs").count() > 0);
    await finish(page);
  });
});

describe("compare: the same MultiHeadAttention, eight ways", () => {
  test("after the book's weight map five rewrites agree; the inverted mask and the extra bias_k token do not, and say why", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=4&d_out=4&context_length=6&dropout=0&num_heads=2&qkv_bias=True");
    await page.getByTestId("compare-mode-ways").check();
    assert.match(await page.getByTestId("ways-intro").textContent(), /writes MultiHeadAttention 8 ways/);
    await page.getByTestId("ways-run").click();
    const rows = page.getByTestId("ways-table").locator("tbody tr");
    await rows.first().waitFor();
    const agree = await rows.evaluateAll((trs) => trs.map((tr) => [tr.dataset.target, tr.dataset.agree]));
    assert.deepEqual(agree, [
      ["MultiHeadAttentionCombinedQKV", "true"], ["MHAEinsum", "true"], ["MHAPyTorchScaledDotProduct", "true"], ["MHAPyTorchSDPAWithoutFlash", "false"],
      ["MHAPyTorchFlexAttention", "true"], ["MHAPyTorchClass", "false"], ["PyTorchMultiHeadAttention", "true"],
    ]);
    assert.match(await page.getByTestId("ways-verdict").textContent(), /^5 of 7 rewrites agree with MultiHeadAttention\(4, 4, 6, 0\.0, 2, qkv_bias=True\)/);
    assert.match(await rows.nth(3).textContent(), /NaN.*inverted mask/);
    assert.match(await rows.nth(5).textContent(), /extra bias_k\/bias_v token.*The first stage that disagrees: context_vec/);
    await page.getByTestId("compare-panel").screenshot({ path: `${await screenshotDir()}/compare-eight-ways.png` });
    // with the book's 3 -> 2 sizes the rewrites that view to x's width cannot be built, and say so;
    // MHAEinsum projects x with (d_in, d_out) matrices, as the book's current code does, and agrees
    const book = await openPage(lab, "?class=MultiHeadAttention&d_in=3&d_out=2&context_length=6&dropout=0&num_heads=2");
    await book.getByTestId("compare-mode-ways").check();
    await book.getByTestId("ways-run").click();
    const refused = book.getByTestId("ways-table").locator("tr[data-target=MultiHeadAttentionCombinedQKV]");
    await refused.waitFor();
    assert.match(await refused.textContent(), /cannot be built.*needs d_in == d_out/);
    assert.equal(await book.getByTestId("ways-table").locator("tr[data-target=MHAEinsum]").getAttribute("data-agree"), "true");
    await finish(book);
    await finish(page);
  });
});

describe("compare: the code view's lines", () => {
  test("code() returns a string in every mode and leaves the DOM as it is", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttentionWrapper&d_in=3&d_out=2&context_length=6&dropout=0&num_heads=2");
    await page.getByTestId("compare-button").click();
    await page.getByTestId("compare-verdict").waitFor();
    /** Calls each panel's code() with a MutationObserver on the widget's shadow root; what it returned and what changed. */
    const probe = () => page.evaluate(async () => {
      const el = document.querySelector("attention-lab");
      const seen = [];
      const observer = new MutationObserver((records) => seen.push(...records.map((r) => `${r.type} on ${r.target.nodeName}`)));
      observer.observe(el.shadowRoot, { subtree: true, childList: true, attributes: true, characterData: true });
      const returned = el.view.panels.filter((p) => typeof p.code === "function").map((p) => p.code());
      await new Promise((resolve) => setTimeout(resolve, 0));
      seen.push(...observer.takeRecords().map((r) => `${r.type} on ${r.target.nodeName}`));
      observer.disconnect();
      return { returned, types: returned.map((r) => typeof r), seen };
    });
    const converted = await probe();
    assert.deepEqual(converted.types, ["string"], "one panel adds lines: the compare panel");
    assert.match(converted.returned[0], /torch\.cat\(\[h\.W_query\.weight for h in wrapper\.heads\], dim=0\)/);
    assert.deepEqual(converted.seen, []);
    for (const mode of ["ways", "cache", "copy"]) {
      await page.getByTestId(`compare-mode-${mode}`).check();
      const r = await probe();
      assert.deepEqual(r.types, ["string"], mode);
      assert.equal(r.returned[0], "", `${mode}: no comparison of this mode on screen yet`);
      assert.deepEqual(r.seen, [], `${mode}: code() changed the page`);
    }
    await page.getByTestId("copy-button").click();
    await page.getByTestId("copy-verdict").waitFor();
    const copied = await probe();
    assert.match(copied.returned[0], /W_query/);
    assert.deepEqual(copied.seen, []);
    await finish(page);
  });
});

describe("compare: step with the KV cache", () => {
  test("a mode picked before the panel's code has loaded is the one it opens with", async () => {
    const page = await lab.context.newPage();
    let release;
    const held = new Promise((resolve) => (release = resolve));
    await page.route("**/app/compare-panel.js", async (route) => { await held; await route.continue(); });
    await page.goto(`${lab.url}?class=MultiHeadAttention&d_in=4&d_out=4&context_length=6&dropout=0&num_heads=2`);
    await page.waitForFunction(() => document.querySelector("attention-lab")?.dataset.ready !== undefined, null, { timeout: 60_000 });
    await page.getByTestId("compare-mode-cache").check();  // the radios are in the page before the panel's code
    release();
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-panel=compare]").dataset.loaded === "true", null, { timeout: 60_000 });
    assert.equal(await page.getByTestId("compare-mode-cache").isChecked(), true);
    assert.match(await page.getByTestId("cache-intro").textContent(), /\S/);
    await page.close();
  });

  test("the book's MultiHeadAttention fed token by token: rows of (1, T_past + 1) weights, the cache growing, each output equal to the full run's", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=3&d_out=2&context_length=6&dropout=0.0&num_heads=2");
    await page.getByTestId("compare-mode-cache").check();
    assert.match(await page.getByTestId("cache-intro").textContent(), /ch04\/03_kv-cache/);
    assert.doesNotMatch(await page.getByTestId("cache-intro").textContent(), /latent/);
    for (let i = 0; i < 6; i++) await page.getByTestId("cache-step").click();
    const rows = page.getByTestId("cache-table").locator("tbody tr");
    assert.equal(await rows.count(), 6);
    const seen = await rows.evaluateAll((trs) => trs.map((tr) => [tr.dataset.position, tr.dataset.keys, tr.cells[1].textContent, tr.cells[5].className]));
    assert.deepEqual(seen.map((r) => r.slice(0, 3)), [0, 1, 2, 3, 4, 5].map((t) => [String(t), String(t + 1), `(1, 2, 1, ${t + 1})`]));
    assert.ok(seen.every((r) => r[3].includes("agree") && !r[3].includes("disagree")), "every step equals the full run's row");
    // two heads of 1 (d_out 2): keys and values of 6 tokens, float32
    assert.match(await rows.nth(5).textContent(), /6 · 96 B/);
    assert.match(await page.getByTestId("cache-status").textContent(), /6 of 6 tokens fed: the cache holds 6 keys and values per key\/value head \(96 bytes\)/);
    assert.equal(await page.getByTestId("cache-step").isDisabled(), true);
    await page.getByTestId("compare-panel").screenshot({ path: `${await screenshotDir()}/compare-kv-cache.png` });
    // the cache's facts after 6 steps: multi-head attention is its own comparison
    assert.equal(await page.getByTestId("cache-facts").textContent(), "6 tokens · 96 bytes (keys and values, float32). MultiHeadAttention of the same width would hold 96 bytes for 6 tokens, the same.");
    await page.getByTestId("cache-reset").click();
    assert.equal(await rows.count(), 0);
    assert.equal(await page.getByTestId("cache-facts").textContent(), "—");
    // a class without a causal mask says why the core refuses a cache
    const v2 = await openPage(lab, "?class=SelfAttention_v2&d_in=3&d_out=2");
    await v2.getByTestId("compare-mode-cache").check();
    await v2.getByTestId("cache-step").click();
    assert.match(await v2.getByTestId("cache-status").textContent(), /no causal mask over its own keys/);
    await finish(v2);
    await finish(page);
  });

  test("the cache's tokens and bytes follow each step, against MultiHeadAttention of the same width: GQA holds its key/value groups, MLA its latent", async () => {
    // GroupedQueryAttention(3, 4, 0.0, 2, 1): one key/value head of 2 per token, 2 x 2 x 4 = 16 bytes; MHA of width 4: 2 x 4 x 4 = 32
    const gqa = await openPage(lab, "?class=GroupedQueryAttention&d_in=3&d_out=4&dropout=0.0&num_heads=2&num_kv_groups=1");
    await gqa.getByTestId("compare-mode-cache").check();
    const facts = gqa.getByTestId("cache-facts");
    for (let i = 1; i <= 3; i++) {
      await gqa.getByTestId("cache-step").click();
      assert.deepEqual(await facts.evaluate((e) => [e.dataset.tokens, e.dataset.bytes, e.dataset.bytesMha]), [String(i), String(16 * i), String(32 * i)], `after ${i} steps`);
    }
    assert.equal(await facts.textContent(), "3 tokens · 48 bytes (keys and values, float32). MultiHeadAttention of the same width would hold 96 bytes for 3 tokens, 2× more.");
    assert.match(await gqa.getByTestId("cache-table").locator("tbody tr").nth(2).textContent(), /3 · 48 B96 B/);
    await finish(gqa);
    // MultiHeadLatentAttention(3, 4, 0.0, 2, latent_dim=2): the latent c_kv alone, 2 x 4 = 8 bytes per token
    const mla = await openPage(lab, "?class=MultiHeadLatentAttention&d_in=3&d_out=4&dropout=0.0&num_heads=2&latent_dim=2");
    await mla.getByTestId("compare-mode-cache").check();
    assert.match(await mla.getByTestId("cache-intro").textContent(), /caches its latent c_kv instead \(ch04\/05_mla\)/);
    for (let i = 0; i < 4; i++) await mla.getByTestId("cache-step").click();
    const latent = mla.getByTestId("cache-facts");
    assert.deepEqual(await latent.evaluate((e) => [e.dataset.tokens, e.dataset.bytes, e.dataset.bytesMha]), ["4", "32", "128"]);
    assert.equal(await latent.textContent(), "4 tokens · 32 bytes (the latent c_kv, 2 floats per token). MultiHeadAttention of the same width would hold 128 bytes for 4 tokens, 4× more.");
    assert.match(await mla.getByTestId("cache-status").textContent(), /4 of 6 tokens fed: the cache holds 4 latent rows c_kv \(32 bytes\)/);
    const seen = await mla.getByTestId("cache-table").locator("tbody tr").evaluateAll((trs) => trs.map((tr) => tr.cells[5].className));
    assert.ok(seen.every((c) => c.includes("agree") && !c.includes("disagree")), "every step equals the full run's row");
    await mla.getByTestId("compare-panel").screenshot({ path: `${await screenshotDir()}/compare-kv-cache-mla.png` });
    await finish(mla);
  });
});
