// The GPT-2 forward's memory: a real-sized GPT-2 small file (498 MB of float32 weights, sparse: the header of GPT-2 small's layout, then
// zeros that take no disk) runs with memory bounded by one block plus the activations: the WASM heap's
// peak stays under the core's estimate, and both under 400 MB (the tied wte alone is 154 MB). Measured
// in a fresh process with a capped JS heap; the file is read by slices through a Blob, never whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync, ftruncateSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gpt2Tensors, safetensorsHeader } from "../safetensors.mjs";

const child = fileURLToPath(new URL("./children/gpt2-peak.mjs", import.meta.url));

test("GPT-2 small at its real size (498 MB of weights) runs 20 and 1024 tokens within the estimate, and both stay under 400 MB", (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-gpt2-"));
  try {
    const file = path.join(dir, "model.safetensors");
    const { head, dataBytes } = safetensorsHeader(gpt2Tensors());
    const fd = openSync(file, "w");
    writeSync(fd, head);
    ftruncateSync(fd, head.length + dataBytes); // sparse: zeros the disk does not hold
    closeSync(fd);
    assert.ok(head.length + dataBytes > 497e6, `${head.length + dataBytes} bytes`); // 124M float32 weights (the Hub file adds mask buffers: 548 MB)
    for (const numTokens of [20, 1024]) {
      const out = execFileSync(process.execPath, ["--max-old-space-size=2048", child, JSON.stringify({ path: file, numTokens })], { encoding: "utf8" });
      const { estimate, peak, size, layers, nextTokens } = JSON.parse(out);
      t.diagnostic(`${numTokens} tokens: peak ${(peak / 1048576).toFixed(1)} MiB, estimate ${(estimate / 1048576).toFixed(1)} MiB`);
      assert.equal(size, "small");
      assert.equal(layers, 12);
      // zero weights: every logit is 0, so the next token is a tie broken by the lowest id, at 1/50257
      assert.deepEqual(nextTokens.map((x) => x.id), [0, 1, 2, 3, 4]);
      assert.ok(Math.abs(nextTokens[0].prob - 1 / 50257) < 1e-9);
      assert.ok(peak <= estimate, `${numTokens} tokens: peak ${peak} > estimate ${estimate}`);
      assert.ok(estimate <= 1.5 * peak, `${numTokens} tokens: estimate ${estimate} is more than 1.5x the peak ${peak}`);
      assert.ok(estimate < 400 * 1048576, `${numTokens} tokens: estimate ${(estimate / 1048576).toFixed(0)} MiB`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
