// The GPT-2 panel given files torch.save wrote (tests/fixtures/torch_save, generate_torch_save.py): the
// file picker offers them, a pytorch_model.bin chosen or dropped loads as model.safetensors does (its
// PyTorch code loads it with torch.load), and a pickled module or a pickle calling os.system is refused
// with its code while the page keeps working; a 1.4 GB sparse .pth loads a layer reading only that layer.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ROOT, afterRun, finish, launchLab, openPage } from "./helpers.mjs";
import { gpt2Tensors } from "../safetensors.mjs";
import { sparseTorchSave } from "../torch-save.mjs";

const DIR = path.join(ROOT, "tests", "fixtures", "torch_save");
const fixture = (name) => path.join(DIR, name);

async function load(page, file, heads = "2") {
  await page.getByTestId("ckpt-layer").fill("1");
  await page.getByTestId("ckpt-heads").fill(heads);
  await page.getByTestId("ckpt-file").setInputFiles(fixture(file));
}

describe("torch.save files in the GPT-2 panel", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("pytorch_model.bin loads as model.safetensors does: the same keys and weights, reading a part of it, torch.load in its code", async () => {
    const page = await openPage(lab);
    assert.equal(await page.getByTestId("ckpt-file").getAttribute("accept"), ".safetensors,.pth,.pt,.bin");
    assert.match(await page.getByTestId("ckpt-drop").textContent(), /Drop a \.safetensors or \.pth file/);
    const seen = {};
    for (const file of ["model.safetensors", "pytorch_model.bin"]) {
      await load(page, file);
      const summary = page.getByTestId("ckpt-summary").filter({ hasText: file });
      await summary.waitFor();
      assert.match(await summary.textContent(), /into MultiHeadAttention\(8, 8, 8, 0\.0, 2, qkv_bias=True\)/);
      const read = Number((await summary.textContent()).match(/Read ([\d,]+) bytes/)[1].replace(/,/g, ""));
      const size = (await readFile(fixture(file))).length;
      assert.ok(read > 1000 && read < size, `${file}: read ${read} of ${size} bytes`);
      seen[file] = {
        used: await page.getByTestId("ckpt-used").locator("li").evaluateAll((lis) => lis.map((li) => li.dataset.key)),
        code: await page.getByTestId("ckpt-code").textContent(),
      };
    }
    assert.deepEqual(seen["pytorch_model.bin"].used, seen["model.safetensors"].used);
    assert.deepEqual(seen["pytorch_model.bin"].used, ["h.1.attn.c_attn.weight", "h.1.attn.c_attn.bias", "h.1.attn.c_proj.weight", "h.1.attn.c_proj.bias"]);
    assert.match(seen["pytorch_model.bin"].code, /sd = torch\.load\("pytorch_model\.bin", map_location="cpu"\)/);
    assert.doesNotMatch(seen["pytorch_model.bin"].code, /safetensors/);
    assert.match(seen["model.safetensors"].code, /sd = load_file\("model\.safetensors"\)/);
    await finish(page);
  });

  test("a dropped file is told apart by its bytes: a .bin named model.safetensors loads as torch.save's", async () => {
    const page = await openPage(lab);
    await page.getByTestId("ckpt-layer").fill("0");
    await page.getByTestId("ckpt-heads").fill("2");
    const bytes = [...await readFile(fixture("pytorch_model.bin"))];
    const dataTransfer = await page.evaluateHandle((data) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(data)], "model.safetensors", { type: "application/octet-stream" }));
      return dt;
    }, bytes);
    await page.getByTestId("ckpt-drop").dispatchEvent("dragover", { dataTransfer });
    await page.getByTestId("ckpt-drop").dispatchEvent("drop", { dataTransfer });
    await page.getByTestId("ckpt-summary").waitFor();
    assert.match(await page.getByTestId("ckpt-summary").textContent(), /Loaded layer 0 of model\.safetensors into MultiHeadAttention\(8, 8, 8, 0\.0, 2, qkv_bias=True\)/);
    assert.match(await page.getByTestId("ckpt-code").textContent(), /torch\.load\("model\.safetensors", map_location="cpu"\)/);
    await finish(page);
  });

  test("a whole pickled module and a pickle calling os.system are refused with their codes; the page keeps working", async () => {
    const page = await openPage(lab);
    for (const [file, code, message] of [
      ["whole_module.pth", "checkpoint_pickled_module", /generate_gpt2\.GPTModel/],
      ["os_system.pth", "checkpoint_pickle_global", /os\.system.*nothing was run/],
      ["legacy_big_endian.pth", "checkpoint_legacy_format", /big-endian/],
    ]) {
      await load(page, file);
      const err = page.getByTestId("ckpt-error").filter({ hasText: code });
      await err.waitFor();
      assert.equal(await err.getAttribute("data-code"), code, file);
      assert.match(await err.textContent(), message, file);
    }
    await afterRun(page, () => page.getByTestId("run").click());
    assert.equal(await page.getByTestId("run-error").textContent(), "");
    await finish(page);
  });

  test("a 1.4 GB sparse gpt2-medium355M-sft.pth loads layer 0 in the panel reading 1.2% of it (that layer and the zip's records)", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "attention-lab-pth-"));
    try {
      const file = path.join(dir, "gpt2-medium355M-sft.pth");
      const size = sparseTorchSave(file, gpt2Tensors({ d: 1024, layers: 24 }));
      const page = await openPage(lab);
      await page.getByTestId("ckpt-layer").fill("0");
      await page.getByTestId("ckpt-file").setInputFiles(file);
      const summary = page.getByTestId("ckpt-summary");
      await summary.waitFor({ timeout: 60_000 });
      const text = await summary.textContent();
      assert.match(text, /Loaded layer 0 of gpt2-medium355M-sft\.pth into MultiHeadAttention\(1024, 1024, 1024, 0\.0, 16, qkv_bias=True\)/);
      const read = Number(text.match(/Read ([\d,]+) bytes/)[1].replace(/,/g, ""));
      // layer 0's attention (4 x 1024 x 1024 floats and biases: 16.8 MB) and the zip's records, nothing more
      assert.ok(read > 16.8e6 && read < 16.8e6 + 200e3, `read ${read} of ${size} bytes`);
      await finish(page);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
