// The GPT-2 section's Generate: a whole GPT-2 file chosen in the checkpoint panel writes text on the
// panel's tokens, in the worker, token by token, as the book's chapter 5 generate does in PyTorch 1.13
// (tests/fixtures/gpt2/generate.json): greedy with and without the KV cache, then sampling on
// torch.manual_seed(123), with the PyTorch call that gives the same ids.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { loadAttentionLab } from "../../web/lib/attention-lab.js";
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
  before(async () => {
    lab = await launchLab();
    await screenshotDir();
    dir = await mkdtemp(path.join(os.tmpdir(), "attention-lab-generate-"));
    file = path.join(dir, "tiny-gpt2.safetensors");
    await writeFile(file, gpt2File(await loadAttentionLab(), spec));
  });
  after(async () => {
    await lab?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const runs = (page, n) => page.waitForFunction((k) => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-generate]").dataset.runs === String(k), n);

  test("greedy (cached and not) and sampled tokens appear one by one, as PyTorch's, with the book's generate call", async () => {
    const page = await openPage(lab);
    await page.getByTestId("ckpt-heads").fill(String(spec.n_head));
    await page.getByTestId("ckpt-file").setInputFiles(file);
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-section]").dataset.runs === "1");
    await page.getByTestId("ckpt-ids").fill(greedy.prompt.join(", "));
    const section = page.getByTestId("gpt2-generate");
    const newIds = () => section.getByTestId("gen-token").evaluateAll((spans) => spans.map((s) => Number(s.dataset.id)));

    await page.getByTestId("gen-max").fill(String(greedy.max_new_tokens));
    await page.getByTestId("gen-run").click();
    await runs(page, 1);
    assert.deepEqual(await newIds(), greedy.token_ids.slice(greedy.prompt.length));
    assert.equal(await section.getByTestId("gen-steps").locator("li").count(), greedy.max_new_tokens);
    assert.match(await section.getByTestId("gen-status").textContent(), /^10 new tokens; with the KV cache; the weights stayed in memory/);
    assert.match(await section.getByTestId("gen-steps").locator("li").nth(2).textContent(), /cache 6 tokens, 0\.8 KiB/);
    assert.match(await section.getByTestId("gen-code").textContent(), /generate\(model, idx, max_new_tokens=10, context_size=1024, temperature=0\.0, top_k=None, eos_id=None\)/);

    await page.getByTestId("gen-cache").uncheck();
    await page.getByTestId("gen-run").click();
    await runs(page, 2);
    assert.deepEqual(await newIds(), greedy.token_ids.slice(greedy.prompt.length), "without the cache: the same ids");
    assert.match(await section.getByTestId("gen-status").textContent(), /without the cache/);

    await page.getByTestId("gen-cache").check();
    await page.getByTestId("gen-temperature").fill(String(sampled.temperature));
    await page.getByTestId("gen-seed").fill(String(sampled.seed));
    await page.getByTestId("gen-run").click();
    await runs(page, 3);
    assert.deepEqual(await newIds(), sampled.token_ids.slice(sampled.prompt.length), "torch.manual_seed(123) + multinomial: PyTorch's ids");
    assert.match(await section.getByTestId("gen-code").textContent(), /^# the book's chapter 5 generate[^\n]*\ntorch\.manual_seed\(123\)\nidx = torch\.tensor\(\[\[15496, 11, 616, 1438\]\]\)\nout = generate\(model, idx, max_new_tokens=10, context_size=1024, temperature=1\.0, top_k=None, eos_id=None\)$/);
    await section.screenshot({ path: `${SCREENSHOT_DIR}/gpt2-generate.png` });

    // Cancel stops a long generation between tokens; what was written stays on the page
    await page.getByTestId("gen-max").fill("1000");
    await page.getByTestId("gen-temperature").fill("0");
    await page.getByTestId("gen-run").click();
    await page.waitForFunction(() => Number(document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=gpt2-generate]").dataset.tokens) >= 2);
    await page.getByTestId("gen-cancel").click();
    await page.getByTestId("gen-diag").waitFor();
    assert.equal(await page.getByTestId("gen-diag").getAttribute("data-code"), "cancelled");
    const written = await section.getByTestId("gen-token").count();
    assert.ok(written >= 2 && written < 1000, `${written} tokens before the cancel`);
    assert.equal(await page.getByTestId("gen-run").isDisabled(), false);

    // an option out of range is the core's coded error, naming it
    await page.getByTestId("gen-max").fill("0");
    await page.getByTestId("gen-run").click();
    await page.getByTestId("gen-diag").waitFor();
    assert.equal(await page.getByTestId("gen-diag").getAttribute("data-code"), "generate_option");
    await finish(page);
  });
});
