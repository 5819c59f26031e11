// The GPT-2 forward's memory: a real-sized GPT-2 small file (498 MB of float32 weights, sparse: the header of GPT-2 small's layout, then
// zeros that take no disk) runs with memory bounded by one block plus the activations and the results:
// the WASM heap's peak plus what the result holds in JS stays under the core's estimate. With the
// "thumbnails" results (what the page asks for) both stay under 400 MB (the tied wte alone is 154 MB);
// with "full" results every layer's T x T weights are counted too. Measured in a fresh process with a
// capped JS heap; the file is read by slices through a Blob, never whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { sparseFile } from "./helpers.mjs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gpt2Tensors, safetensorsHeader } from "../safetensors.mjs";

const child = fileURLToPath(new URL("./children/gpt2-peak.mjs", import.meta.url));

test("GPT-2 small at its real size (498 MB of weights) runs 20 and 1024 tokens within the estimate, results included; thumbnails stay under 400 MB", (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-gpt2-"));
  try {
    const file = sparseFile(dir, gpt2Tensors());
    const { head, dataBytes } = safetensorsHeader(gpt2Tensors());
    assert.ok(head.length + dataBytes > 497e6, `${head.length + dataBytes} bytes`); // 124M float32 weights (the Hub file adds mask buffers: 548 MB)
    for (const [numTokens, attention] of [[20, "full"], [1024, "thumbnails"], [1024, "full"]]) {
      const out = execFileSync(process.execPath, ["--max-old-space-size=2048", child, JSON.stringify({ path: file, numTokens, attention })], { encoding: "utf8" });
      const { estimate, peak: heap, resultBytes, size, layers, nextTokens } = JSON.parse(out);
      const peak = heap + resultBytes;
      t.diagnostic(`${numTokens} tokens, ${attention}: peak ${(heap / 1048576).toFixed(1)} MiB + results ${(resultBytes / 1048576).toFixed(1)} MiB, estimate ${(estimate / 1048576).toFixed(1)} MiB`);
      assert.equal(size, "small");
      assert.equal(layers, 12);
      // zero weights: every logit is 0, so the next token is a tie broken by the lowest id, at 1/50257
      assert.deepEqual(nextTokens.map((x) => x.id), [0, 1, 2, 3, 4]);
      assert.ok(Math.abs(nextTokens[0].prob - 1 / 50257) < 1e-9);
      assert.ok(peak <= estimate, `${numTokens} tokens: peak ${peak} > estimate ${estimate}`);
      assert.ok(estimate <= 1.5 * peak, `${numTokens} tokens: estimate ${estimate} is more than 1.5x the peak ${peak}`);
      if (attention === "thumbnails" || numTokens === 20) assert.ok(estimate < 400 * 1048576, `${numTokens} tokens: estimate ${(estimate / 1048576).toFixed(0)} MiB`);
      // 12 layers x 12 heads x 1024 x 1024 weights and 12 x 1024 x 768 inputs: 642 MB the result holds
      if (attention === "full" && numTokens === 1024) assert.ok(resultBytes > 640e6, `${resultBytes} result bytes`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

function measure(file, numTokens, numHeads) {
  return JSON.parse(execFileSync(process.execPath, ["--max-old-space-size=2048", child, JSON.stringify({ path: file, numTokens, numHeads })], { encoding: "utf8" }));
}

test("the estimate bounds the peak with mixed dtypes (F16 wte, F32 blocks) and with a 4 M-row vocabulary (the top tokens' index, 8 bytes a row)", (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-gpt2-"));
  try {
    // GPT-2 small's width and vocabulary, 2 blocks, wte in F16: each block is read at 4 bytes per value, not wte's 2
    const mixed = gpt2Tensors({ d: 768, layers: 2 }).map(([key, dtype, shape]) => [key, key === "wte.weight" ? "F16" : dtype, shape]);
    const m = measure(sparseFile(dir, mixed), 20); // few tokens: the block, not the activations, makes the peak
    const d = 768;
    const blockAtWteDtype = 2 * (12 * d * d + 13 * d); // what an estimate at wte's 2 bytes per value leaves out
    t.diagnostic(`F16 wte, F32 blocks: peak ${(m.peak / 1048576).toFixed(1)} MiB, estimate ${(m.estimate / 1048576).toFixed(1)} MiB (at wte's dtype: ${((m.estimate - blockAtWteDtype) / 1048576).toFixed(1)} MiB)`);
    assert.equal(m.layers, 2);
    assert.ok(m.peak <= m.estimate, `peak ${m.peak} > estimate ${m.estimate}`);
    assert.ok(m.peak > m.estimate - blockAtWteDtype, "the block's raw bytes at 4 per value are what bounds this peak");
    assert.ok(m.estimate <= 1.5 * m.peak, `estimate ${m.estimate} is more than 1.5x the peak ${m.peak}`);
    // 4,194,304 rows of width 1 (one head): the logits, then the index of every row for the top tokens
    const rows = 4 * 1048576;
    const wide = measure(sparseFile(dir, gpt2Tensors({ d: 1, layers: 1, vocab: rows, nCtx: 16 })), 4, 1);
    t.diagnostic(`${rows} rows: peak ${(wide.peak / 1048576).toFixed(1)} MiB, estimate ${(wide.estimate / 1048576).toFixed(1)} MiB`);
    assert.equal(wide.layers, 1);
    assert.ok(wide.peak <= wide.estimate, `peak ${wide.peak} > estimate ${wide.estimate}`);
    assert.ok(wide.peak > 4 * rows + 4 * rows, "the logits and the index were both held");
    assert.ok(wide.estimate <= 1.5 * wide.peak, `estimate ${wide.estimate} is more than 1.5x the peak ${wide.peak}`);
    // 300 M rows: 1.1 GiB of logits fit the 1.5 GiB budget, with their 2.2 GiB index they do not: refused before any read
    const huge = measure(sparseFile(dir, gpt2Tensors({ d: 1, layers: 1, vocab: 300e6, nCtx: 16 }).map(([key, , shape]) => [key, "F16", shape])), 1, 1);
    t.diagnostic(`300 M rows: ${huge.code}, estimate ${(huge.estimate / 1048576).toFixed(0)} MiB, peak ${(huge.peak / 1048576).toFixed(1)} MiB`);
    assert.equal(huge.code, "too_large");
    assert.ok(huge.estimate >= 12 * 300e6);
    assert.ok(huge.peak < 1048576, "nothing was allocated for the refused run");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
