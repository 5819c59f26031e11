// The checkpoint panel's file work (web/app/checkpoint-load.js), as its worker runs it: requests on two
// files can be in flight together (a layer load of the file just chosen, a whole-model run or a
// generation of the file chosen before it), and opening one file must not dispose the other under the
// work still reading it. Found as a flaky browser test: the load failed with "this checkpoint file was
// disposed" when the previous file's whole-model run opened its file mid-load.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";
import { loadPlain, gpt2Plain, generatePlain } from "../../web/app/checkpoint-load.js";
import { gpt2File } from "../gpt2-files.mjs";

const lab = await loadAttentionLab();
const dir = new URL("../fixtures/checkpoints/", import.meta.url);
const file = (name) => new File([readFileSync(new URL(name, dir))], name, { lastModified: 1 });
const noSignal = () => new AbortController().signal;
// a whole model (d = 8, 2 heads, 1 layer, 64 ids) beside the one-layer files
const wholeModel = new File([gpt2File(lab, { seed: 5, n_embd: 8, n_layer: 1, n_ctx: 16, vocab_size: 64, dtype: "F16" })], "whole.safetensors", { lastModified: 1 });

test("a layer load is not broken by another file's whole-model run opening that file mid-load", async () => {
  const chosen = file("gpt2_d8_nobias.safetensors");
  // every interleaving of the run's open with the load's steps up to a few turns of the microtask queue
  for (const turns of [0, 1, 2, 3, 5, 8, 13]) {
    const load = loadPlain(lab, { file: chosen, options: { layer: 0, num_heads: 4 } });
    for (let i = 0; i < turns; i++) await Promise.resolve();
    const run = gpt2Plain(lab, { file: wholeModel, ids: [0, 1, 2], numHeads: 2 }, { signal: noSignal(), progress: () => {} });
    const [loaded, ran] = await Promise.all([load, run]);
    assert.equal(loaded.result.className, "MultiHeadAttention", `after ${turns} turns`);
    assert.deepEqual(loaded.result.report.missing, ["h.0.attn.c_attn.bias"], `after ${turns} turns`);
    assert.equal(ran.result.layers.length, ran.result.config.n_layer, `after ${turns} turns`);
  }
});

test("a generation and a load of another file in flight together each finish with their own results", async () => {
  const options = { maxNewTokens: 4, temperature: 0, seed: 123, cache: true };
  const alone = await generatePlain(lab, { file: wholeModel, ids: [0, 1, 2], numHeads: 2, options }, { signal: noSignal(), progress: () => {} });
  const generation = generatePlain(lab, { file: wholeModel, ids: [0, 1, 2], numHeads: 2, options }, { signal: noSignal(), progress: () => {} });
  await Promise.resolve();
  const load = loadPlain(lab, { file: file("gpt2_d8_nobias.safetensors"), options: { layer: 0, num_heads: 4 } });
  const [generated, loaded] = await Promise.all([generation, load]);
  assert.deepEqual(generated.result.tokenIds, alone.result.tokenIds, "the same tokens as a generation alone");
  assert.equal(generated.result.tokenIds.length, 3 + 4);
  assert.deepEqual(loaded.result.report.missing, ["h.0.attn.c_attn.bias"]);
});
