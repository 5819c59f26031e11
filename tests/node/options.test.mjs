// Options and messages (issue 39, item 11): counts a caller gives are whole numbers, refused by name
// with the value as typed (1e-40, 1.5, NaN; never 0.000000 or 1.500000); a too-large latent_dim is
// named latent_dim; a module outlives the dispose() of the generator it was made with.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab, AttentionError } from "attention-lab";
import { gpt2File } from "../gpt2-files.mjs";
import { sameBits, stackTwo } from "./helpers.mjs";

const root = new URL("../../", import.meta.url);
const read = (file) => readFileSync(new URL(file, root), "utf8");
const lab = await loadAttentionLab();
const MHA = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };
const x = stackTwo(lab.bookTokens());  // (2, 6, 3)
const spec = JSON.parse(read("tests/fixtures/gpt2/generate.json")).files.find((f) => f.name === "tiny_f32");
const file = gpt2File(lab, spec);  // GPT-2's layout at width 8, 2 heads, 2 layers
const model = await lab.loadGPT2(file, { num_heads: spec.n_head });

/**
 * {code, slot, message, hint} of what `call` refuses: a throw, a rejection, or (lab.check, which
 * never throws) its first error diagnostic; null when it does not refuse.
 */
async function refusal(call) {
  try {
    const r = await call();
    const d = Array.isArray(r) ? r.find((x) => x.severity === "error") : undefined;
    return d ? { code: d.code, slot: d.slots[0] ?? "", message: d.message, hint: d.hint } : null;
  } catch (e) {
    assert.ok(e instanceof AttentionError, String(e));
    return { code: e.code, slot: e.slot, message: e.message, hint: e.hint };
  }
}

test("counts and indices are whole numbers, refused by name with the value as typed: seededTokens(1.5), estimateBytes(NaN), batch NaN", async () => {
  const tokens = await refusal(() => lab.seededTokens(1.5, 3, 123));
  assert.deepEqual([tokens.code, tokens.slot, tokens.message], ["tensor_shape", "num_tokens", "num_tokens must be a whole number from 1, got 1.5"]);
  assert.match(tokens.hint, /e\.g\. seededTokens\(6, 3, 123\)/);
  assert.equal((await refusal(() => lab.seededTokens(6, NaN, 123))).message, "d_in must be a whole number from 1, got NaN");
  // sentenceTokens once truncated a width of 1.5 to 1
  assert.deepEqual(Object.values(await refusal(() => lab.sentenceTokens(["Your", "journey"], 1.5, 123))).slice(0, 3), ["tensor_shape", "d_in", "d_in must be a whole number from 1, got 1.5"]);
  // model.estimateBytes(NaN) once estimated one token
  const estimate = await refusal(() => model.estimateBytes(NaN));
  assert.deepEqual([estimate.code, estimate.slot, estimate.message], ["run_option", "num_tokens", "num_tokens must be a whole number from 1 to 1024, got NaN"]);
  assert.match(estimate.hint, /1 to n_ctx \(1024/);
  assert.equal((await refusal(() => model.estimateBytes(2.5))).message, "num_tokens must be a whole number from 1 to 1024, got 2.5");
  assert.ok(model.estimateBytes(4) > 0);
  // a lazy trace's heatmap: "batch nan is outside axis 0" became a sentence naming the option
  const lazy = lab.run("MultiHeadAttention", MHA, x, { trace: "lazy" }).trace;
  assert.deepEqual(Object.values(await refusal(() => lazy.heatmap("attn_weights", { batch: NaN }))).slice(0, 3), ["trace_range", "batch", "batch must be a whole number from 0 to 1, got NaN"]);
  assert.deepEqual(Object.values(await refusal(() => lazy.heatmap("attn_weights", { head: 0.5 }))).slice(0, 3), ["trace_range", "head", "head must be a whole number from 0 to 1, got 0.5"]);
  assert.deepEqual(Object.values(await refusal(() => lazy.heatmap("attn_weights", { width: NaN }))).slice(0, 3), ["trace_range", "width", "width must be a whole number from 1 to 4096, got NaN"]);
  assert.deepEqual(Object.values(await refusal(() => lazy.slice("attn_weights", { offsets: [0, 0, 0, 0], sizes: [1, 1, 6, 1.5] }))).slice(0, 3), ["trace_range", "sizes", "sizes[3] must be a whole number, got 1.5"]);
  lazy.dispose();
  // generate's whole-number options, and a generator's dropout probability
  assert.equal((await refusal(() => model.generate([1], { maxNewTokens: 2.5 }))).message, "maxNewTokens must be a whole number from 1, got 2.5");
  assert.equal((await refusal(() => lab.manualSeed(1).dropout(x, 1.5))).message, "dropout probability must be in [0, 1], got 1.5");
});

test("a temperature of 1e-40 is named as typed (once 'temperature 0.000000') with why the probabilities are not finite", async () => {
  const r = await refusal(() => model.generate([15496, 11], { maxNewTokens: 2, temperature: 1e-40 }));
  assert.deepEqual([r.code, r.slot], ["non_finite_probabilities", "temperature"]);
  assert.equal(r.message, "the probabilities are not finite at temperature 1e-40: logits / temperature overflow float32 (past ~3.4e38)");
  assert.match(r.hint, /temperature 0 for the most likely token \(greedy\)/);
});

test("parameters over the budget name the slot that makes them so: latent_dim = 10**9 is latent_dim's error, not d_in's", async () => {
  const mla = { d_in: 3, d_out: 4, dropout: 0.0, num_heads: 2, latent_dim: 1e9 };
  const d = lab.check("MultiHeadLatentAttention", mla).find((x) => x.code === "too_large");
  assert.deepEqual(d.slots, ["latent_dim"]);
  assert.match(d.hint, /^Use a smaller latent_dim: its parameters alone are over the budget/);
  const created = await refusal(() => lab.create("MultiHeadLatentAttention", mla));
  assert.deepEqual([created.code, created.slot], ["too_large", "latent_dim"]);
  // the wrapper's thousand heads are num_heads' error; two huge widths are both named
  assert.deepEqual(lab.check("MultiHeadAttentionWrapper", { ...MHA, d_in: 768, d_out: 768, num_heads: 1000 }).find((x) => x.code === "too_large").slots, ["num_heads"]);
  assert.deepEqual(lab.check("MultiHeadAttention", { ...MHA, d_in: 100000, d_out: 100000, num_heads: 10 }).find((x) => x.code === "too_large").slots, ["d_in", "d_out"]);
});

test("a module keeps drawing its dropout masks after the generator it was made with is disposed (once: every training forward threw 'disposed')", () => {
  const config = { ...MHA, dropout: 0.5 };
  const disposed = lab.manualSeed(123);
  const kept = lab.manualSeed(123);
  const a = lab.create("MultiHeadAttention", config, { generator: disposed });
  const b = lab.create("MultiHeadAttention", config, { generator: kept });
  disposed.dispose();
  const runs = [0, 1].map(() => [a.forward(x).output.data, b.forward(x).output.data]);
  for (const [i, [mine, twin]] of runs.entries()) assert.ok(sameBits(mine, twin), `run ${i}: the same masks as its twin's`);
  assert.ok(!sameBits(runs[0][0], runs[1][0]), "the stream goes on: the second masks are new ones");
  // a disposed generator passed to forward is still refused by name
  assert.throws(() => a.forward(x, { generator: disposed }), (e) => e.code === "disposed" && e.slot === "generator");
  // fromParameters and convert make modules with a fresh generator of their own: they draw too
  const copy = lab.fromParameters("MultiHeadAttention", config, a.parameters());
  assert.deepEqual(copy.forward(x).output.shape, [2, 6, 2]);
});
