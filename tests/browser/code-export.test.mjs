// The PyTorch code view (what is on screen, copyable, valid Python) and the downloads of a stage
// (JSON, CSV, .npy) and of a heatmap (PNG, SVG).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { loadAttentionLab } from "attention-lab";
import { finish, launchLab, openPage, runPreset } from "./helpers.mjs";
import { PAGE_CASES, applySteps, codePanelFixtures, pageDiff, printedNumber } from "../code-panels.mjs";

/** Fails unless `code` parses as Python (python3's ast; no torch needed). */
function assertPython(code) {
  execFileSync("python3", ["-c", "import ast, sys; ast.parse(sys.stdin.read())"], { input: code });
}

/** A minimal .npy (format 1.0/2.0) reader: {descr, fortranOrder, shape, data: Float32Array}. */
function readNpy(bytes) {
  const magic = String.fromCharCode(...bytes.subarray(1, 6));
  assert.equal(bytes[0], 0x93);
  assert.equal(magic, "NUMPY");
  const major = bytes[6];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder("latin1").decode(bytes.subarray(start, start + headerLength));
  assert.equal((start + headerLength) % 64, 0, "numpy aligns the data to 64 bytes");
  assert.ok(header.endsWith("\n"));
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const fortranOrder = /'fortran_order':\s*(True|False)/.exec(header)[1] === "True";
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(",").map((s) => s.trim()).filter(Boolean).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(count);
  const body = new DataView(bytes.buffer, bytes.byteOffset + start + headerLength, count * 4);
  for (let i = 0; i < count; i++) data[i] = body.getFloat32(i * 4, true);
  return { descr, fortranOrder, shape, data };
}


// One Chromium for the whole file: each test opens pages of its own in it.
let lab;
before(async () => {
  lab = await launchLab();
});
after(async () => { await lab?.close(); });

describe("code view", () => {
  test("the book preset's code has the seed, the constructor, the book's inputs and the forward", async () => {
    const page = await openPage(lab);
    await runPreset(page, "bookToy");
    const code = await page.getByTestId("code-view").textContent();
    assert.match(code, /^import torch\n/);
    assert.match(code, /\ntorch\.manual_seed\(123\)\nmha = MultiHeadAttention\(3, 2, 6, 0\.0, 2\)\n/);
    assert.match(code, /\[\[0\.43, 0\.15, 0\.89\], {2}# Your\n/);
    assert.match(code, /\n {3}\[0\.05, 0\.8, 0\.55\]\] {2}# step\n/);
    assert.match(code, /batch = torch\.stack\(\(inputs, inputs\), dim=0\) {2}# \(2, 6, 3\)/);
    assert.match(code, /context_vecs = mha\(batch\) {2}# \(2, 6, 2\)/);
    assertPython(code);
    // Eval mode and another seed show up at once.
    await page.getByTestId("mode-eval").check();
    await page.getByTestId("seed").fill("7");
    const again = await page.getByTestId("code-view").textContent();
    assert.match(again, /torch\.manual_seed\(7\)/);
    assert.match(again, /\nmha\.eval\(\)\n/);
    // Copyable.
    await lab.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: lab.url });
    await page.getByTestId("code-copy").click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), again);
    await finish(page);
  });

  test("a sentence's code rebuilds the same embeddings; exercise 3.1's copy lines carry .T", async () => {
    const page = await openPage(lab, "?class=SelfAttention_v2&d_in=4&d_out=2&seed=5&tokens=a%20b%20a");
    const code = await page.getByTestId("code-view").textContent();
    assert.match(code, /words = "a b a"\.split\(\)/);
    assert.match(code, /\ng = torch\.Generator\(\)\.manual_seed\(5\)\ninputs = torch\.rand\(len\(vocab\), 4, generator=g\)\[ids\]/);
    assert.match(code, /context_vecs = sa_v2\(inputs\)/);
    await page.getByTestId("copy-button").click();
    await page.getByTestId("copy-verdict").waitFor();
    const withCopy = await page.getByTestId("code-view").textContent();
    assert.match(withCopy, /sa_v1\.W_query = torch\.nn\.Parameter\(sa_v2\.W_query\.weight\.T\)/);
    assertPython(withCopy);
    await finish(page);
  });
});

describe("the code view against PyTorch (tests/fixtures/code_panels.json)", () => {
  const fixtures = codePanelFixtures();
  for (const c of PAGE_CASES) {
    test(`${c.name}: the page shows the code PyTorch ran and its first run gives PyTorch's context_vecs (1e-6)`, async () => {
      const want = fixtures.page.find((f) => f.name === c.name);
      const page = await openPage(lab, c.query, {
        init: () => document.addEventListener("run-complete", (e) => { window.runOutputs = [...(window.runOutputs ?? []), { shape: e.detail.outputShape, data: Array.from(e.detail.output.data) }]; }),
      });
      await page.waitForFunction(() => (window.runOutputs ?? []).length > 0, null, { timeout: 60_000 });
      await applySteps(page, c);
      assert.equal(await page.getByTestId("code-view").textContent(), want.code);
      if (c.diff) {
        // the comparison's own lines print its largest difference: PyTorch's is the page's (printed to 4 digits)
        const shown = await pageDiff(page, c), printed = printedNumber(want.printed);
        assert.ok(Math.abs(shown - printed) <= 1e-6 + 5e-3 * Math.abs(printed), `${c.name}: the page shows ${shown}, PyTorch printed ${want.printed.at(-1)}`);
      }
      const [out] = await page.evaluate(() => window.runOutputs);
      assert.deepEqual(out.shape, want.context_vecs.shape);
      const worst = Math.max(...want.context_vecs.data.map((v, i) => Math.abs(out.data[i] - v)));
      assert.ok(worst <= 1e-6, `${c.name}: off by ${worst}`);
      await finish(page);
    });
  }
});

describe("export", () => {
  async function download(page, locator) {
    const [d] = await Promise.all([page.waitForEvent("download"), locator.click()]);
    return { name: d.suggestedFilename(), bytes: await readFile(await d.path()) };
  }

  test("a stage downloads as JSON and CSV with its axes; −inf survives as -inf", async () => {
    const page = await openPage(lab);
    await runPreset(page, "bookToy");
    const card = page.locator("[data-stage=attn_scores_masked]");
    const json = await download(page, card.getByTestId("export-json").last());
    assert.equal(json.name, "attn_scores_masked.json");
    const body = JSON.parse(json.bytes.toString("utf8"));
    assert.deepEqual(body.shape, [2, 2, 6, 6]);
    assert.deepEqual(body.axes, ["b", "num_heads", "query", "key"]);
    assert.equal(body.data[0][0][0][1], "-inf");
    assert.equal(typeof body.data[0][0][0][0], "number");
    const csv = await download(page, card.getByTestId("export-csv").last());
    const lines = csv.bytes.toString("utf8").trim().split("\n");
    assert.equal(lines[0], "b,num_heads,query,key=0,key=1,key=2,key=3,key=4,key=5");
    assert.equal(lines.length, 1 + 2 * 2 * 6);
    assert.match(lines[1], /^0,0,0,[-0-9.e]+,-inf,-inf,-inf,-inf,-inf$/);
    await finish(page);
  });

  test("attn_weights exported as .npy loads with the right shape and values", async () => {
    const page = await openPage(lab);
    await runPreset(page, "bookToy");
    const card = page.locator("[data-stage=attn_weights]");
    const [download] = await Promise.all([page.waitForEvent("download"), card.getByTestId("export-npy").last().click()]);
    assert.equal(download.suggestedFilename(), "attn_weights.npy");
    const npy = readNpy(new Uint8Array(await readFile(await download.path())));
    assert.equal(npy.descr, "<f4");
    assert.equal(npy.fortranOrder, false);
    assert.deepEqual(npy.shape, [2, 2, 6, 6]);
    // The same values as the library computes for MultiHeadAttention(3, 2, 6, 0.0, 2), seed 123, book tokens
    // stacked twice: the page's own library (the binary the page runs: Chromium loads the relaxed-SIMD one).
    const expected = await page.evaluate(async () => {
      const { loadAttentionLab } = await import("/lib/attention-lab.js");
      const core = await loadAttentionLab();
      const gen = core.manualSeed(123);
      const mha = core.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, { generator: gen });
      const x = core.bookTokens();
      const { trace } = mha.forward({ shape: [2, 6, 3], data: new Float32Array([...x.data, ...x.data]) }, { trace: true, generator: gen });
      return { kernel: core.kernel, data: Array.from(trace.find((s) => s.id === "attn_weights").data) };
    });
    assert.equal(expected.kernel, "relaxed_madd");
    assert.deepEqual(Array.from(npy.data), expected.data, "bit for bit");
    // and within 1e-6 of what the plain binary gives in Node
    const core = await loadAttentionLab();
    const gen = core.manualSeed(123);
    const mha = core.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, { generator: gen });
    const x = core.bookTokens();
    const plain = mha.forward({ shape: [2, 6, 3], data: new Float32Array([...x.data, ...x.data]) }, { trace: true, generator: gen }).trace.find((s) => s.id === "attn_weights").data;
    assert.ok(npy.data.every((v, i) => Math.abs(v - plain[i]) <= 1e-6), "within 1e-6 of the plain binary");
    // And as the grid on screen reads them: row "journey" of head 0.
    const shown = Number(await card.getByTestId("grid").first().locator("tbody tr").nth(1).locator("td").first().textContent());
    assert.ok(Math.abs(shown - npy.data[6]) <= 5e-5, `grid shows ${shown}, file holds ${npy.data[6]}`);
    assert.equal(npy.data[2], 0, "masked weights are exactly 0");
    await finish(page);
  });

  test("a heatmap downloads as PNG and SVG", async () => {
    const page = await openPage(lab);
    await runPreset(page, "bookToy");
    const heat = page.locator("[data-stage=attn_weights]").getByTestId("heatmap").first();
    const png = await download(page, heat.getByTestId("export-png"));
    assert.equal(png.name, "attn_weights-head0.png");
    assert.deepEqual([...png.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(png.bytes.readUInt32BE(16), 6 * 16, "16 px per cell");
    const svg = await download(page, heat.getByTestId("export-svg"));
    const text = svg.bytes.toString("utf8");
    assert.match(text, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.equal((text.match(/<rect /g) ?? []).length, 36);
    await finish(page);
  });
});
