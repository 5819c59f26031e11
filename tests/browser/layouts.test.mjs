// Checkpoint layouts on the page: a tiny GPT-2 saved as the book's GPTModel (`model.state_dict()`, keys
// under "module.") and the same weights in Hugging Face's layout (tests/fixtures/generate_layouts.py),
// loaded in the checkpoint panel: the layout it found, how each tensor maps into the book's
// MultiHeadAttention (the core's report), the note that both layouts give the same logits, the
// PyTorch code for the book's file, and the same layer output from both files.
import assert from "node:assert/strict";
import path from "node:path";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { ROOT, finish, launchLab, openPage, runCheckpointIds, screenshotDir } from "./helpers.mjs";

const DIR = path.join(ROOT, "tests", "fixtures", "layouts");
const EXPECTED = JSON.parse(readFileSync(path.join(DIR, "expected.json"), "utf8"));
const caseOf = (name) => EXPECTED.cases.find((c) => c.name === name);

/** Chooses `file` with the panel's file picker (layer 1, 4 heads) and waits for its summary. */
async function load(page, file, layer = "1") {
  await page.getByTestId("ckpt-layer").fill(layer);
  await page.getByTestId("ckpt-heads").fill("4");
  await page.getByTestId("ckpt-file").setInputFiles(path.join(DIR, file));
  await page.getByTestId("ckpt-summary").filter({ hasText: file }).waitFor({ timeout: 60_000 });
}

/** Runs the loaded layer on token ids; resolves to the first row of its output stage. */
async function outputRow(page, ids) {
  const cards = await runCheckpointIds(page, ids, 60_000);
  const cells = await cards.locator("[data-stage=output] table.grid tbody tr").first().locator("td").allTextContents();
  return cells.map((t) => Number(t.trim().replace("−", "-")));
}

describe("checkpoint layouts on the page", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("the book's GPTModel file and Hugging Face's of the same weights: the layout, each tensor's mapping, the same layer output", async () => {
    const page = await openPage(lab);
    await load(page, "book_qkv.safetensors");
    const mapping = page.getByTestId("ckpt-mapping");
    assert.equal(await mapping.getAttribute("data-layout"), "book");
    assert.match(await page.getByTestId("ckpt-mapping-title").textContent(), /^Layout: the book's GPTModel\. How each tensor goes into the book’s MultiHeadAttention$/);
    const bookLines = await mapping.locator("li").allTextContents();
    assert.deepEqual(bookLines.slice(0, 3), [
      "module.trf_blocks.1.att.W_query.weight (16, 16): copied as is",
      "module.trf_blocks.1.att.W_key.weight (16, 16): copied as is",
      "module.trf_blocks.1.att.W_value.weight (16, 16): copied as is",
    ]);
    assert.ok(bookLines.includes("module.trf_blocks.1.att.out_proj.weight (16, 16): copied as is"));
    assert.match(await page.getByTestId("ckpt-mapping-same").textContent(), /same weights give the same logits either way/);
    assert.match(await page.getByTestId("ckpt-sources").locator("[data-source=prefix] dd").textContent(), /'module\.'/);
    assert.match(await page.getByTestId("ckpt-sources").locator("[data-source=context_length] dd").textContent(), /^module\.pos_emb\.weight rows \(32\)$/);
    assert.match(await page.getByTestId("ckpt-ignored").locator('tr[data-key="module.trf_blocks.1.att.mask"]').textContent(), /causal mask buffer \(32, 32\).*checked, not required/);
    const bookRow = await outputRow(page, "5, 17, 42");
    const code = await page.getByTestId("ckpt-code").textContent();
    assert.match(code, /mha\.load_state_dict\(\{k\[len\(p\):\]: v for k, v in sd\.items\(\) if k\.startswith\(p\)\}, strict=False\)/);
    assert.match(code, /p = "module\.trf_blocks\.1\.att\."/);
    assert.match(code, /x = sd\["module\.tok_emb\.weight"\]\[ids\] \+ sd\["module\.pos_emb\.weight"\]\[:3\]/);
    await page.getByTestId("ckpt-layout").screenshot({ path: path.join(await screenshotDir(), "checkpoint-layout-book.png") });

    await load(page, "hf_qkv.safetensors");
    assert.equal(await mapping.getAttribute("data-layout"), "huggingface");
    assert.match(await page.getByTestId("ckpt-mapping-title").textContent(), /^Layout: Hugging Face GPT-2/);
    const hfLines = await page.getByTestId("ckpt-mapping").locator("li").allTextContents();
    assert.deepEqual(hfLines, [
      "transformer.h.1.attn.c_attn.weight (16, 48): split in three along dim 1, each transposed -> W_query.weight (16, 16), W_key.weight (16, 16), W_value.weight (16, 16)",
      "transformer.h.1.attn.c_attn.bias (48,): split in three along dim 0 -> W_query.bias (16,), W_key.bias (16,), W_value.bias (16,)",
      "transformer.h.1.attn.c_proj.weight (16, 16): transposed -> out_proj.weight (16, 16)",
      "transformer.h.1.attn.c_proj.bias (16,): copied as is -> out_proj.bias (16,)",
    ]);
    const hfRow = await outputRow(page, "5, 17, 42");
    assert.equal(bookRow.length, 16);
    assert.deepEqual(hfRow, bookRow, "the same layer output from both layouts");
    await page.getByTestId("ckpt-layout").screenshot({ path: path.join(await screenshotDir(), "checkpoint-layout-hf.png") });
    await finish(page);
  });

  /** Runs the whole model on the panel's token ids; resolves when the GPT-2 section has run `n` times. */
  async function runWhole(page, ids, n) {
    await page.getByTestId("ckpt-kind-ids").check();
    await page.getByTestId("ckpt-ids").fill(ids);
    await page.getByTestId("gpt2-run").click();
    await page.waitForFunction((k) => Number(document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]")?.dataset.runs ?? 0) >= k, n, { timeout: 60_000 });
  }

  test("the book's file runs whole and generates PyTorch's seeded top-k ids; its PyTorch code is GPTModel(cfg) + load_state_dict; a classifier shows classes", async () => {
    const page = await openPage(lab);
    const c = caseOf("book_qkv");
    await load(page, "book_qkv.safetensors", "0");
    await runWhole(page, c.prompt.join(", "), 1);
    assert.equal(await page.getByTestId("gpt2-next").locator("ol").getAttribute("data-kind"), "tokens");
    assert.match(await page.getByTestId("gpt2-next").locator("p").textContent(), /\(final_norm, then out_head\)/);
    const section = page.getByTestId("gpt2-generate");
    await page.getByTestId("gen-max").fill("8");
    await page.getByTestId("gen-temperature").fill("1");
    await page.getByTestId("gen-topk").fill("5");
    await page.getByTestId("gen-seed").fill("123");
    await page.getByTestId("gen-run").click();
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-generate]")?.dataset.runs === "1", null, { timeout: 60_000 });
    const ids = await section.getByTestId("gen-token").evaluateAll((spans) => spans.map((s) => Number(s.dataset.id)));
    assert.deepEqual(ids, c.sample_t1_k5_seed123.slice(c.prompt.length), "torch.manual_seed(123), temperature 1, top_k 5: PyTorch's ids");
    const code = await section.getByTestId("gen-code").textContent();
    assert.match(code, /cfg = \{"vocab_size": 96, "context_length": 32, "emb_dim": 16, "n_heads": 4, "n_layers": 2, "drop_rate": 0\.0, "qkv_bias": True\}\nmodel = GPTModel\(cfg\)/);
    assert.match(code, /model\.load_state_dict\(\{k\[7:\]: v for k, v in sd\.items\(\) if k\.startswith\("module\."\)\}\) {2}# the keys were saved under "module\."/);
    assert.match(code, /torch\.manual_seed\(123\)\nidx = torch\.tensor\(\[\[5, 17, 42, 88, 3\]\]\)\nout = generate\(model, idx, max_new_tokens=8, context_size=32, temperature=1\.0, top_k=5/);
    await section.screenshot({ path: path.join(await screenshotDir(), "gpt2-generate-book.png") });

    const k = caseOf("book_classifier");
    await load(page, "book_classifier.safetensors", "0");
    await runWhole(page, k.prompt.join(", "), 2);
    const next = page.getByTestId("gpt2-next");
    assert.equal(await next.locator("ol").getAttribute("data-kind"), "classes");
    const items = await next.locator("li code").allTextContents();
    const best = k.last_logits[0] >= k.last_logits[1] ? 0 : 1;
    assert.deepEqual(items, [`class ${best}`, `class ${1 - best}`]);
    assert.match(await next.locator("h4").textContent(), /The 2 classes/);
    assert.match(await next.locator("p").textContent(), /chapter 6 out_head = Linear\(emb_dim, num_classes\)/);
    await finish(page);
  });
});
