// The compare panel's "Check your own module" mode, tried as a new reader would: the snippet and its
// copy button, then the check.pt the snippet saved (tests/fixtures/check_files, from
// generate_check_fixtures.py) chosen in the file input: the verdict, the first differing stage, the
// line to question and its fix on screen; a file without "output" refused with its code and the line.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, finish, launchLab, openPage } from "./helpers.mjs";

const fixture = (name) => path.join(ROOT, "tests", "fixtures", "check_files", name);

describe("compare: check your own module", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("a file with the scale_d_out mistake: disagrees, first at attn_weights, the line and the fix shown; a correct one agrees", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=4&d_out=4&context_length=6&dropout=0.0&num_heads=2");
    await page.getByTestId("compare-mode-check").check();
    assert.match(await page.getByTestId("check-snippet").textContent(), /torch\.save\(\{"call": "MultiHeadAttention\(768, 768, 1024, 0\.0, 12\)"/);
    await page.getByTestId("check-file").setInputFiles(fixture("mha_scale_d_out.pt"));
    const verdict = page.getByTestId("check-verdict");
    await verdict.waitFor();
    assert.equal(await verdict.getAttribute("data-agree"), "false");
    assert.match(await verdict.textContent(), /does not compute the book’s: the output differs by up to [\d.e+-]+; the first tensor that differs is attn_weights/);
    assert.equal(await page.getByTestId("check-cause").getAttribute("data-cause"), "scale_d_out");
    assert.equal(await page.getByTestId("check-line").textContent(), "attn_weights = torch.softmax(attn_scores / self.d_out**0.5, dim=-1)");
    assert.equal(await page.getByTestId("check-fix").textContent(), "attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)");
    // The public reports as links to their threads.
    assert.deepEqual(await page.getByTestId("check-cause").locator("a").evaluateAll((as) => as.map((a) => a.href)),
      ["https://github.com/lucidrains/vit-pytorch/issues/65", "https://github.com/Graylab/DL4Proteins-notebooks/issues/12", "https://github.com/omihub777/ViT-CIFAR/issues/11"]);
    // The first differing value, the reader's row above the book's, the differing cell marked.
    const difference = page.getByTestId("check-difference");
    assert.equal(await difference.getAttribute("data-stage"), "attn_weights");
    assert.match(await difference.textContent(), /Where it first differs: attn_weights\[0, 0, 1, \d\] \(b, num_heads, num_tokens, num_keys\)/);
    const rows = await difference.locator("tbody tr").allTextContents();
    assert.equal(rows.length, 2);
    assert.match(rows[0], /^yours/);
    assert.match(rows[1], /^the book’s/);
    assert.equal(await difference.locator("td.check-diff").count(), 2);
    // The PyTorch that confirms it: the book's module from the file, and the line to change.
    const confirm = await page.getByTestId("check-confirm").textContent();
    assert.match(confirm, /ck = torch\.load\("mha_scale_d_out\.pt"\)\n/);
    assert.match(confirm, /^from llms_from_scratch\.ch03 import MultiHeadAttention as BookMultiHeadAttention {2}# MultiHeadAttention: the book's chapter 3 class/m);
    assert.match(confirm, /book = BookMultiHeadAttention\(4, 4, 6, 0\.0, 2\)\n/);
    assert.match(confirm, /# {5}attn_weights = torch\.softmax\(attn_scores \/ self\.d_out\*\*0\.5, dim=-1\)\n# to the book's/);
    await page.getByTestId("check-own").screenshot({ path: path.join(ROOT, "build", "check-module-panel.png") });
    await page.getByTestId("check-file").setInputFiles(fixture("mha_correct.pt"));
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=check-verdict]")?.dataset.agree === "true", null, { timeout: 30_000 });
    assert.match(await page.getByTestId("check-verdict").textContent(), /agrees with the book’s/);
    assert.equal(await page.getByTestId("check-cause").count(), 0);
    // a module in training mode saved with "seed": 123 (torch.manual_seed(123) right before the forward): self.dropout never applied
    await page.getByTestId("check-file").setInputFiles(fixture("mha_dropout_missing_seed.pt"));
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=check-cause]")?.dataset.cause === "dropout_missing", null, { timeout: 30_000 });
    assert.match(await page.getByTestId("check-verdict").textContent(), /the first tensor that differs is attn_weights/);
    assert.equal(await page.getByTestId("check-fix").textContent(), "attn_weights = self.dropout(attn_weights)");
    await finish(page);
  });

  test("a file without output is refused with check_file and the snippet's line that writes it", async () => {
    const page = await openPage(lab, "?class=MultiHeadAttention&d_in=4&d_out=4&context_length=6&dropout=0.0&num_heads=2");
    await page.getByTestId("compare-mode-check").check();
    await page.getByTestId("check-file").setInputFiles(fixture("mha_no_output.pt"));
    const error = page.getByTestId("check-error");
    await error.waitFor();
    assert.equal(await error.getAttribute("data-code"), "check_file");
    assert.match(await error.textContent(), /no tensor "output".*"output": context_vecs/s);
    await finish(page);
  });
});
