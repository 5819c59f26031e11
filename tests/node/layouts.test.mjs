// Checkpoint layouts (core/src/checkpoint_layout.cpp): tiny GPT-2s saved as the book's readers save their
// GPTModel (`model.state_dict()`: tok_emb, trf_blocks.{i}.att.W_query ..., out_head) and one of them in
// Hugging Face's layout, against PyTorch (tests/fixtures/generate_layouts.py, torch 1.13): the last
// token's logits within 1e-5, chapter 5's greedy and seeded top-k ids, the classifier's two logits.
// The book's torch.save forms run through the same table: model.pth, model_and_optimizer.pth (its
// model_state_dict under a wrapping dict, beside the optimizer's tensors), book_qkv.pth, review_classifier.pth.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
const DIR = new URL("../fixtures/layouts/", import.meta.url);
const EXPECTED = JSON.parse(readFileSync(new URL("expected.json", DIR), "utf8"));
const caseOf = (name) => EXPECTED.cases.find((c) => c.name === name);
const fileOf = (c) => new Uint8Array(readFileSync(new URL(c.file, DIR)));

function maxDiff(a, b) {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

for (const c of EXPECTED.cases) {
  test(`${c.name}: the last token's logits within 1e-5 of PyTorch's${c.greedy ? ", and the book's greedy and seeded top-k ids" : ""}`, async () => {
    const model = await lab.loadGPT2(fileOf(c), { num_heads: c.n_heads });
    const cfg = model.config;
    assert.equal(cfg.layout, c.name.startsWith("hf") ? "huggingface" : "book");
    assert.equal(cfg.format, c.file.endsWith(".pth") ? "torch" : "safetensors", "told by the file's bytes");
    assert.equal(cfg.qkv_bias, c.qkv_bias);
    assert.equal(cfg.n_ctx, c.context_length, "context_length from pos_emb's rows");
    assert.equal(cfg.n_layer, 2);
    assert.equal(cfg.n_out, c.last_logits.length);
    const r = await model.run(c.prompt);
    assert.ok(maxDiff(r.lastLogits, c.last_logits) <= 1e-5, `logits differ by ${maxDiff(r.lastLogits, c.last_logits)}`);
    if (c.greedy) {
      for (const cache of [true, false]) {
        const g = await model.generate(c.prompt, { maxNewTokens: 8, cache });
        assert.deepEqual(g.tokenIds, c.greedy, `greedy, cache ${cache}`);
        const s = await model.generate(c.prompt, { maxNewTokens: 8, temperature: 1.0, topK: 5, generator: lab.manualSeed(123), cache });
        assert.deepEqual(s.tokenIds, c.sample_t1_k5_seed123, `top-k 5 after torch.manual_seed(123), cache ${cache}`);
      }
    }
    model.dispose();
  });
}

test("the same weights in both layouts give the same logits, every layer's attention alike", async () => {
  const book = await lab.loadGPT2(fileOf(caseOf("book_qkv")), { num_heads: 4 });
  const hf = await lab.loadGPT2(fileOf(caseOf("hf_qkv")), { num_heads: 4 });
  const a = await book.run(caseOf("book_qkv").prompt);
  const b = await hf.run(caseOf("book_qkv").prompt);
  assert.equal(maxDiff(a.lastLogits, b.lastLogits), 0, "the same float32 values, copied as is or split and transposed");
  a.layers.forEach((layer, i) => assert.equal(maxDiff(layer.attnWeights.data, b.layers[i].attnWeights.data), 0, `layer ${i}'s attention weights`));
  book.dispose();
  hf.dispose();
});

test("the mapping text says how each tensor goes into the book's MultiHeadAttention", async () => {
  const hf = await lab.loadGPT2(fileOf(caseOf("hf_qkv")), { num_heads: 4 });
  assert.equal(hf.config.layoutName, "Hugging Face GPT-2");
  assert.ok(hf.config.mapping.includes("transformer.h.0.attn.c_attn.weight (16, 48): split in three along dim 1, each transposed -> W_query.weight (16, 16), W_key.weight (16, 16), W_value.weight (16, 16)"));
  assert.ok(hf.config.mapping.includes("transformer.h.0.attn.c_attn.bias (48,): split in three along dim 0 -> W_query.bias (16,), W_key.bias (16,), W_value.bias (16,)"));
  assert.ok(hf.config.mapping.includes("transformer.h.0.mlp.c_fc.weight (16, 64): transposed -> ff.layers.0.weight (64, 16)"));
  assert.ok(hf.config.mapping.includes("lm_head.weight (96, 16): copied as is -> out_head.weight (96, 16)"));
  const book = await lab.loadGPT2(fileOf(caseOf("book_qkv")), { num_heads: 4 });
  assert.equal(book.config.layoutName, "the book's GPTModel");
  assert.ok(book.config.mapping.includes("module.trf_blocks.0.att.W_query.weight (16, 16): copied as is"), book.config.mapping.join("\n"));
  assert.ok(book.config.mapping.includes("module.out_head.weight (96, 16): copied as is"));
  const noqkv = await lab.loadGPT2(fileOf(caseOf("book_noqkv")), { num_heads: 4 });
  assert.ok(!noqkv.config.mapping.some((line) => line.includes("W_query.bias")), "qkv_bias=False: no q/k/v bias to map");
  for (const m of [hf, book, noqkv]) m.dispose();
});

test("a classifier's head gives classes: run gives its logits, generate is refused naming the head", async () => {
  const c = caseOf("book_classifier");
  const model = await lab.loadGPT2(fileOf(c), { num_heads: 4 });
  assert.equal(model.config.n_out, 2);
  assert.equal(model.config.vocab_size, 96);
  await assert.rejects(model.generate(c.prompt, { maxNewTokens: 2 }), (e) => e.code === "generate_option" && e.slot === "model" && /2 class scores \(out_head\.weight\)/.test(e.message));
  model.dispose();
});

test("num_heads is not in the book's files: asked for, as for any width GPT-2 does not have", async () => {
  await assert.rejects(lab.loadGPT2(fileOf(caseOf("book_qkv"))), (e) => e.code === "checkpoint_num_heads" && /16/.test(e.message));
});

test("one layer from either layout: loadCheckpoint gives the same MultiHeadAttention, checkpointInput the same real input", async () => {
  const book = fileOf(caseOf("book_qkv"));
  const hf = fileOf(caseOf("hf_qkv"));
  const a = await lab.loadCheckpoint(book, { layer: 1, num_heads: 4 });
  const b = await lab.loadCheckpoint(hf, { layer: 1, num_heads: 4 });
  assert.equal(a.report.layout, "book");
  assert.equal(b.report.layout, "huggingface");
  assert.deepEqual(a.report.transposed, [], "the book's nn.Linear weights are copied as is");
  assert.deepEqual(b.report.transposed, ["transformer.h.1.attn.c_attn.weight", "transformer.h.1.attn.c_proj.weight"]);
  assert.equal(a.report.sources.context_length, "module.pos_emb.weight rows (32)");
  assert.match(a.report.ignored.find((i) => i.key === "module.trf_blocks.1.att.mask").reason, /^causal mask buffer \(32, 32\) .*checked, not required/);
  assert.equal(a.module.pythonCall ?? lab.describe(a.module.className, a.module.config).pythonCall, "MultiHeadAttention(16, 16, 32, 0.0, 4, qkv_bias=True)");
  const pa = a.module.parameters(), pb = b.module.parameters();
  assert.deepEqual(pa.map((p) => p.name), pb.map((p) => p.name));
  pa.forEach((p, i) => assert.equal(maxDiff(p.data, pb[i].data), 0, p.name));
  const ids = caseOf("book_qkv").prompt;
  const xa = await lab.checkpointInput(book, { tokenIds: ids, layer: 1, num_heads: 4 });
  const xb = await lab.checkpointInput(hf, { tokenIds: ids, layer: 1, num_heads: 4 });
  assert.equal(maxDiff(xa.data, xb.data), 0, "layer 1's real input");
  const noqkv = await lab.loadCheckpoint(fileOf(caseOf("book_noqkv")), { layer: 0, num_heads: 4 });
  assert.equal(noqkv.module.config.qkv_bias, false, "qkv_bias=False from the keys");
  assert.equal(noqkv.module.config.context_length, 12);
  for (const m of [a.module, b.module, noqkv.module]) m.dispose();
});

test("the PyTorch code reads a .pth as the library does: a wrapping dict flattened to its dotted keys, a plain state dict as is", async () => {
  const { loadCode } = await import("../../web/app/checkpoint-code.js");
  const { modelCode } = await import("../../web/app/gpt2-code.js");
  const lines = async (name) => {
    const file = await lab.openCheckpoint(fileOf(caseOf(name)));
    const { module, report } = await lab.loadCheckpoint(file, { layer: 1, num_heads: 4 });
    const model = await lab.loadGPT2(file, { num_heads: 4 });
    const out = { layer: loadCode(caseOf(name).file, module, report, "MultiHeadAttention(16, 16, 12, 0.0, 4)", file.format), model: modelCode(model.config, caseOf(name).file) };
    model.dispose();
    file.dispose();
    return out;
  };
  const wrapped = await lines("book_model_and_optimizer_pth");
  assert.ok(wrapped.layer.includes('sd = flat(torch.load("model_and_optimizer.pth", map_location="cpu"))'), wrapped.layer.join("\n"));
  assert.ok(wrapped.layer.includes('p = "model_state_dict.trf_blocks.1.att."'));
  assert.ok(wrapped.model.includes('sd = flat(torch.load("model_and_optimizer.pth", map_location="cpu"))'), wrapped.model.join("\n"));
  assert.ok(wrapped.model.includes('model.load_state_dict({k[17:]: v for k, v in sd.items() if k.startswith("model_state_dict.")})  # the keys were saved under "model_state_dict."'));
  const plain = await lines("book_model_pth");
  assert.ok(plain.layer.includes('sd = torch.load("model.pth", map_location="cpu")') && !plain.layer.some((l) => l.startsWith("def flat")), plain.layer.join("\n"));
  assert.ok(plain.model.includes("model.load_state_dict(sd)") && !plain.model.some((l) => l.startsWith("def flat")), plain.model.join("\n"));
});
