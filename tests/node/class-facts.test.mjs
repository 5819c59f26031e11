// The facts about a class (describe(className).class, classFacts, describe's sizes and diagnostics with
// their fixes): the core is their only source, and the facade hands them out as they are.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab } from "attention-lab";
import { stackTwo } from "./helpers.mjs";

const lab = await loadAttentionLab();

test("describe(className).class: input axes, how heads are made, presets and the tolerance, for every class", () => {
  const facts = Object.fromEntries(lab.classes.map((name) => [name, lab.describe(name).class]));
  assert.deepEqual(Object.keys(facts), ["SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention", "MultiHeadAttentionCombinedQKV", "MHAEinsum", "MHAPyTorchScaledDotProduct", "MHAPyTorchSDPAWithoutFlash", "MHAPyTorchFlexAttention", "MHAPyTorchClass", "PyTorchMultiHeadAttention", "GroupedQueryAttention", "MultiHeadLatentAttention", "MultiHeadAttentionWithSWA", "GatedMultiHeadAttention", "MultiHeadAttention@ch05/07_gpt_to_llama"]);
  assert.deepEqual(facts.SelfAttention_v1.inputAxes, ["num_tokens", "d_in"]);
  assert.deepEqual(facts.CausalAttention.inputAxes, ["b", "num_tokens", "d_in"]);
  assert.deepEqual(lab.classes.map((n) => facts[n].heads), ["single", "single", "single", "modules", ...Array(13).fill("fused")]);
  assert.deepEqual(facts.GroupedQueryAttention.inputAxes, ["b", "num_tokens", "d_in"]);
  assert.deepEqual(facts.GroupedQueryAttention.slots.map((s) => [s.name, s.type, s.default]), [
    ["d_in", "int", undefined], ["d_out", "int", undefined], ["dropout", "float", undefined], ["num_heads", "int", undefined],
    ["num_kv_groups", "int", undefined], ["dtype", "torch.dtype | None", null], ["qkv_bias", "bool", false],
  ]);
  assert.deepEqual(facts.MultiHeadLatentAttention.slots.map((s) => [s.name, s.type, s.default]), [
    ["d_in", "int", undefined], ["d_out", "int", undefined], ["dropout", "float", undefined], ["num_heads", "int", undefined],
    ["qkv_bias", "bool", false], ["latent_dim", "int | None", null],
  ]);
  assert.deepEqual(facts.MultiHeadAttentionWithSWA.slots.map((s) => [s.name, s.type, s.default]), [
    ["d_in", "int", undefined], ["d_out", "int", undefined], ["dropout", "float", undefined], ["num_heads", "int", undefined],
    ["qkv_bias", "bool", false], ["sliding_window_size", "int | None", null],
  ]);
  for (const name of lab.classes) {
    assert.equal(facts[name].name, name);
    assert.equal(facts[name].tolerance, 1e-6);
    assert.deepEqual(facts[name].slots, lab.slots(name));
    assert.ok(Object.isFrozen(facts[name]) && Object.isFrozen(facts[name].presets), "the facts cannot be changed by a caller");
    // inputShape follows the axes
    assert.equal(lab.inputShape(name, 6, 3, 2).length, facts[name].inputAxes.length);
    // every preset is a valid setup of its class
    for (const p of facts[name].presets) {
      const config = lab.parseCall(`${name}(${Object.entries(p.slots).map(([k, v]) => `${k}=${v}`).join(", ")})`).config;
      assert.ok(lab.describe(name, config).ok, `${name} preset ${p.key}`);
      assert.ok(p.note.length > 10);
    }
  }
  assert.deepEqual(facts.MultiHeadAttention.presets.map((p) => p.key), ["bookToy", "gpt2Small", "gpt2Medium", "gpt2Large", "gpt2XL"]);
  assert.deepEqual(facts.MultiHeadAttentionWrapper.presets.map((p) => p.key), ["exercise32"]);
  // the order a page lists them in: the book's examples first, then the GPT-2 sizes
  const all = lab.classes.flatMap((n) => facts[n].presets).sort((a, b) => a.order - b.order);
  assert.deepEqual(all.map((p) => p.key), ["bookToy", "exercise32", "gpt2Small", "gpt2Medium", "gpt2Large", "gpt2XL", "gqaToy", "swaToy", "mlaToy", "gqaSmall", "mqaSmall",
    "swaSmall", "mlaSmall", "combinedQkvSmall", "einsumSmall", "sdpaSmall", "sdpaNoFlashSmall", "flexSmall", "nnMhaSmall", "pkgMhaSmall"]);
  assert.deepEqual(facts.GroupedQueryAttention.presets.find((p) => p.key === "mqaSmall").slots.num_kv_groups, "1", "multi-query attention is num_kv_groups = 1");
  // the other facts the page reads instead of naming classes
  assert.deepEqual(lab.classes.map((n) => facts[n].pythonName), ["sa_v1", "sa_v2", "ca", "wrapper", "mha", "mha_combined_qkv", "mha_einsum", "mha_pytorch_scaled",
    "mha_pytorch_sdpa_no_flash", "mha_pytorch_flex", "mha_pytorch_class", "pytorch_mha", "gqa", "mla", "swa", "gated_mha", "mha_llama2"]);
  assert.deepEqual(lab.classes.map((n) => facts[n].bookSeed), [123, 789, ...Array(15).fill(123)]);
  assert.deepEqual(lab.classes.map((n) => facts[n].weights), ["matrix", ...Array(5).fill("linear"), "matrix", ...Array(10).fill("linear")]);
  // where each lives in the book's repository
  assert.deepEqual(facts.MultiHeadAttention.book, { chapter: "3", folder: "ch03/01_main-chapter-code", file: "ch03.ipynb", section: "section 3.6.2" });
  assert.deepEqual(facts.GroupedQueryAttention.book, { chapter: "4", folder: "ch04/04_gqa", file: "gpt_with_kv_gqa.py", section: "" });
  assert.deepEqual(facts.MultiHeadLatentAttention.book, { chapter: "4", folder: "ch04/05_mla", file: "gpt_with_kv_mla.py", section: "" });
  // Llama 2's MultiHeadAttention: the same Python name as the chapter's class, told apart by its folder
  const llama = facts["MultiHeadAttention@ch05/07_gpt_to_llama"];
  assert.deepEqual(llama.book, { chapter: "5", folder: "ch05/07_gpt_to_llama", file: "converting-gpt-to-llama2.ipynb", section: "" });
  assert.deepEqual(llama.slots.map((s) => [s.name, s.type, s.default]), [
    ["d_in", "int", undefined], ["d_out", "int", undefined], ["context_length", "int", undefined], ["num_heads", "int", undefined], ["dtype", "torch.dtype | None", null],
  ]);
  assert.deepEqual(lab.describe("MultiHeadAttention@ch05/07_gpt_to_llama", { d_in: 8, d_out: 8, context_length: 12, num_heads: 2 }).parameters.map((p) => p.name), ["W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight"]);
  assert.equal(lab.describe("MultiHeadAttention@ch05/07_gpt_to_llama", { d_in: 8, d_out: 8, context_length: 12, num_heads: 2 }).pythonCall, "MultiHeadAttention(8, 8, 12, 2)");
  assert.equal(lab.parseCall("MultiHeadAttention(8, 8, 12, 0.0, 2)").className, "MultiHeadAttention", "a bare name is the chapter's class");
  assert.equal(lab.parseCall("MultiHeadAttention@ch05/07_gpt_to_llama(8, 8, 12, 2)").className, "MultiHeadAttention@ch05/07_gpt_to_llama");
  assert.deepEqual(facts.PyTorchMultiHeadAttention.book, { chapter: "3", folder: "pkg/llms_from_scratch", file: "ch03.py", section: "" });
  for (const n of lab.classes.slice(5, 11)) assert.equal(facts[n].book.folder, "ch03/02_bonus_efficient-multihead-attention", n);
  // masks and dropout as rules, not class names
  assert.deepEqual(lab.classes.map((n) => facts[n].mask), ["none", "none", "causal_buffer", "causal_buffer", "causal_buffer", "causal_buffer", "causal_buffer", "causal_tokens",
    "inverted_buffer", "causal_tokens", "causal_buffer", "causal_tokens", "causal_tokens", "causal_tokens", "causal_tokens", "causal_buffer", "causal_buffer"]);
  assert.equal(facts.MHAPyTorchFlexAttention.dropoutRule, "ignored");
  assert.deepEqual(lab.classes.map((n) => facts[n].maskBufferDtype), ["", "", "float32", "float32", "float32", "float32", "float32", "", "bool", "", "bool", "", "", "", "", "float32", "float32"]);
  // MHAEinsum projects x (d_in) to d_out with (d_in, d_out) matrices, as the book's current code does
  assert.deepEqual(lab.classes.filter((n) => facts[n].needsSquare), ["MultiHeadAttentionCombinedQKV", "MHAPyTorchClass"]);
  // FlexAttention's block mask is built for the tokens given: context_length is stored, never read
  assert.deepEqual(lab.classes.filter((n) => facts[n].contextLimit), ["CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention", "MultiHeadAttentionCombinedQKV",
    "MHAEinsum", "MHAPyTorchSDPAWithoutFlash", "MHAPyTorchClass", "GatedMultiHeadAttention", "MultiHeadAttention@ch05/07_gpt_to_llama"]);
  assert.deepEqual(lab.classes.filter((n) => facts[n].copiesFrom.length).map((n) => facts[n].copiesFrom[0].from), Array(9).fill("MultiHeadAttention"));
  assert.deepEqual(facts.SelfAttention_v2.copiesWith, ["SelfAttention_v1"]);
  assert.equal(facts.MultiHeadAttention.convertsTo, "MultiHeadAttentionWrapper");
  assert.equal(facts.CausalAttention.convertsTo, "");
  assert.deepEqual(lab.classes.filter((n) => facts[n].loadsCheckpoints), ["MultiHeadAttention"]);
  // and they hold: copyWeights and equivalentConfig accept exactly those partners
  assert.equal(lab.equivalentConfig("MultiHeadAttention", { d_in: 4, d_out: 4, context_length: 6, dropout: 0, num_heads: 2 }).className, facts.MultiHeadAttention.convertsTo);
  const small = facts.MultiHeadAttention.presets.find((p) => p.key === "gpt2Small");
  assert.deepEqual(small.slots, { d_in: "768", d_out: "768", context_length: "1024", dropout: "0.0", num_heads: "12", qkv_bias: "False" });
  assert.match(small.note, /^qkv_bias=False as in the book's exercise \(2,360,064 parameters for GPT-2 small\); GPT-2 itself has q\/k\/v biases \(qkv_bias=True: 2,362,368\)$/);
  // every GPT-2 size's note gives its own two counts, the ones describe() gives
  const count = (slots, bias) => lab.describe("MultiHeadAttention", { ...Object.fromEntries(Object.entries(slots).map(([k, v]) => [k, Number(v)])), qkv_bias: bias }).parameterCount.toLocaleString("en-US");
  for (const p of facts.MultiHeadAttention.presets.filter((x) => x.key.startsWith("gpt2"))) {
    const { qkv_bias: _, ...slots } = p.slots;
    assert.ok(p.note.includes(`(${count(slots, false)} parameters for GPT-2 `) && p.note.endsWith(`(qkv_bias=True: ${count(slots, true)})`), `${p.key}: ${p.note}`);
  }
  // the counts the note gives are the core's own
  assert.equal(lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0, num_heads: 12 }).parameterCount, 2360064);
  assert.equal(lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0, num_heads: 12, qkv_bias: true }).parameterCount, 2362368);
  // an unknown class has no facts, and says so
  const unknown = lab.describe("Attention");
  assert.equal(unknown.ok, false);
  assert.equal(unknown.class, undefined);
  assert.equal(unknown.diagnostics[0].code, "unknown_class");
  // classFacts: the same frozen object, read without a call into the core
  for (const name of lab.classes) assert.equal(lab.classFacts(name), facts[name]);
  assert.ok(Object.isFrozen(lab.classFacts("MultiHeadAttention").presets[0].slots));
  assert.equal(lab.classFacts("Attention"), undefined);
  assert.equal(lab.classFacts(new String("CausalAttention")), facts.CausalAttention);
});

test("diagnostics carry structured fixes: {slot, value} as the reader would type them", () => {
  const fixesOf = (className, config, code, inputShape) => lab.check(className, config, { inputShape }).find((d) => d.code === code).fixes;
  // d_out = 768 with 10 heads: the four head counts that divide 768 nearest 10 (ascending), then d_out for 10 heads
  assert.deepEqual(fixesOf("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0, num_heads: 10 }, "heads_divisibility"), [
    { slot: "num_heads", value: "4", call: "" }, { slot: "num_heads", value: "6", call: "" }, { slot: "num_heads", value: "8", call: "" }, { slot: "num_heads", value: "12", call: "" },
    { slot: "d_out", value: "760", call: "" }, { slot: "d_out", value: "770", call: "" },
  ]);
  assert.deepEqual(fixesOf("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 12, num_heads: 0.1 }, "slots_swapped"),
    [{ slot: "", value: "", call: "MultiHeadAttention(768, 768, 1024, 0.1, 12)" }]);
  assert.deepEqual(fixesOf("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0 }, "input_width", [2, 6, 4]), [{ slot: "d_in", value: "4", call: "" }]);
  assert.deepEqual(fixesOf("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0 }, "context_too_short", [2, 9, 3]), [{ slot: "context_length", value: "9", call: "" }]);
  assert.deepEqual(fixesOf("MultiHeadAttentionWrapper", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0, num_heads: 12 }, "wrapper_total_width"), [{ slot: "d_out", value: "64", call: "" }]);
  // a diagnostic without a known fix has an empty list
  assert.deepEqual(lab.check("MultiHeadAttention", { d_in: 3 }).find((d) => d.code === "missing_slot").fixes, []);
});

test("MultiHeadAttention's slot order pasted into GroupedQueryAttention, MultiHeadLatentAttention or MultiHeadAttentionWithSWA is one mha_slot_order diagnosis, with the fix", () => {
  for (const [call, fixed] of [
    ["GroupedQueryAttention(768, 768, 1024, 0.0, 12)", "GroupedQueryAttention(768, 768, 0.0, 12, 4)"],
    ["MultiHeadAttentionWithSWA(768, 768, 1024, 0.0, 12)", "MultiHeadAttentionWithSWA(768, 768, 0.0, 12)"],
    ["MultiHeadLatentAttention(768, 768, 1024, 0.0, 12)", "MultiHeadLatentAttention(768, 768, 0.0, 12)"],
  ]) {
    const p = lab.parseCall(call);
    const diagnostics = lab.check(p.className, p.config);
    assert.deepEqual(diagnostics.map((d) => d.code), ["mha_slot_order"], call);
    const [d] = diagnostics;
    assert.match(d.message, new RegExp(`^slot 3 of ${p.className} is dropout; 1024, 0.0, 12 looks like MultiHeadAttention's order`));
    assert.ok(d.hint.includes(fixed), d.hint);
    assert.equal(d.pytorch, "ZeroDivisionError: float modulo");
    // one fix, the whole call (set dropout alone and num_heads stays 0.0); a valid one
    assert.deepEqual(d.fixes, [{ slot: "", value: "", call: fixed }]);
    assert.deepEqual(lab.parseCall(fixed).diagnostics.filter((x) => x.severity === "error"), []);
  }
});

test("GroupedQueryAttention's slots are checked, its call written, and describe says what its key/value cache saves", () => {
  const codes = (config) => lab.check("GroupedQueryAttention", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 4, ...config }).map((d) => d.code);
  const groups = lab.check("GroupedQueryAttention", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 4, num_kv_groups: 3 });
  assert.equal(groups[0].code, "kv_groups_divisibility");
  assert.deepEqual(groups[0].fixes.map((f) => f.value), ["1", "2", "4"]);
  assert.equal(groups[0].pytorch, "AssertionError: num_heads must be divisible by num_kv_groups");
  assert.ok(codes({ num_kv_groups: 2, d_out: 10 }).includes("heads_divisibility"));
  assert.deepEqual(codes({ num_kv_groups: 2, dtype: "torch.bfloat16" }), ["dtype"]);
  assert.ok(!codes({ num_kv_groups: 2, dtype: "torch.float32" }).includes("dtype"));
  assert.ok(codes({}).includes("missing_slot"));
  assert.ok(codes({ num_kv_groups: 2, context_length: 6 }).includes("unknown_slot"), "no context_length slot");
  const d = lab.describe("GroupedQueryAttention", { d_in: 768, d_out: 768, dropout: 0.0, num_heads: 12, num_kv_groups: 4, qkv_bias: true });
  assert.equal(d.pythonCall, "GroupedQueryAttention(768, 768, 0.0, 12, 4, qkv_bias=True)");
  assert.equal(d.headDim, 64);
  assert.equal(d.keyValueHeads, 4);
  assert.equal(d.kvCacheBytesPerToken, 2 * 4 * 64 * 4);
  assert.equal(d.kvCacheBytesPerTokenMha, 2 * 768 * 4);
  // W_key and W_value are (num_kv_groups * head_dim, d_in); out_proj has no bias
  assert.deepEqual(d.parameters.map((p) => [p.name, p.shape]), [
    ["W_key.weight", [256, 768]], ["W_key.bias", [256]], ["W_value.weight", [256, 768]], ["W_value.bias", [256]],
    ["W_query.weight", [768, 768]], ["W_query.bias", [768]], ["out_proj.weight", [768, 768]],
  ]);
  assert.equal(lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0, num_heads: 12 }).kvCacheBytesPerToken, d.kvCacheBytesPerTokenMha);
});

test("MultiHeadLatentAttention: latent_dim=None is max(16, d_out // 8); W_DKV (latent, d_in), W_UK and W_UV (d_out, latent), all with qkv_bias; its cache is the latent alone", () => {
  const d = lab.describe("MultiHeadLatentAttention", { d_in: 768, d_out: 768, dropout: 0.0, num_heads: 12, qkv_bias: true });
  assert.equal(d.pythonCall, "MultiHeadLatentAttention(768, 768, 0.0, 12, qkv_bias=True)");
  assert.equal(d.config.latent_dim, null, "None as given");
  assert.equal(d.latentDim, 96);
  assert.equal(d.headDim, 64);
  assert.equal(d.outputWidthRule, "d_out = 768, shared by 12 heads of 64 (keys and values re-projected from a latent of 96)");
  assert.deepEqual(d.parameters.map((p) => [p.name, p.shape]), [
    ["W_query.weight", [768, 768]], ["W_query.bias", [768]], ["W_DKV.weight", [96, 768]], ["W_DKV.bias", [96]],
    ["W_UK.weight", [768, 96]], ["W_UK.bias", [768]], ["W_UV.weight", [768, 96]], ["W_UV.bias", [768]], ["out_proj.weight", [768, 768]], ["out_proj.bias", [768]],
  ]);
  assert.equal(d.kvCacheBytesPerToken, 96 * 4);  // latent_dim x 4 (float32) per token and layer
  assert.equal(d.kvCacheBytesPerTokenMha, 2 * 768 * 4);  // 16x more
  assert.equal(lab.describe("MultiHeadLatentAttention", { d_in: 64, d_out: 64, dropout: 0.0, num_heads: 4 }).latentDim, 16, "max(16, 64 // 8)");
  const given = lab.describe("MultiHeadLatentAttention", { d_in: 768, d_out: 768, dropout: 0.0, num_heads: 12, latent_dim: 32 });
  assert.equal(given.pythonCall, "MultiHeadLatentAttention(768, 768, 0.0, 12, latent_dim=32)");
  assert.equal(given.kvCacheBytesPerToken, 32 * 4);
  assert.equal(lab.describe("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0, num_heads: 2 }).latentDim, null, "no latent elsewhere");
  const codes = (config) => lab.check("MultiHeadLatentAttention", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 2, ...config }).map((x) => x.code);
  assert.deepEqual(codes({ latent_dim: 0 }), ["non_positive"]);
  assert.ok(codes({ latent_dim: 2.5 }).includes("wrong_type"));
  assert.ok(codes({ d_out: 9 }).includes("heads_divisibility"));
});

test("each copy note names every matrix it copies, and a preset's note does not repeat its title", () => {
  // the weights the copy moves are each one parameter of the target: a note naming only W_query told half the story
  for (const className of lab.classes) {
    for (const { from, note } of lab.classFacts(className).copiesFrom) {
      const qkv = lab.describe(className, lab.classFacts(className).presets[0]?.slots ?? {}).parameters?.map((p) => p.name) ?? [];
      if (qkv.some((n) => /^W_key/.test(n))) assert.match(note, /W_query.*W_key.*W_value/, `${from} -> ${className}: ${note}`);
    }
  }
  assert.match(lab.classFacts("MHAEinsum").copiesFrom[0].note, /^W_query, W_key, W_value = each W_\*\.weight\.T .*bias_q, bias_k, bias_v/);
  for (const className of lab.classes) {
    for (const p of lab.classFacts(className).presets) assert.doesNotMatch(p.note, /^exercise \d|^preset/i, `${p.key}: "${p.note}" would read "Exercise 3.2: exercise 3.2: ..."`);
  }
});

test("the mask's fill is a class fact (GatedMultiHeadAttention: torch.finfo(float32).min), and the masked scores' summaries count it as masked, out of min, max and mean", () => {
  const fills = Object.fromEntries(lab.classes.map((name) => [name, lab.classFacts(name).maskFill]));
  assert.equal(fills.GatedMultiHeadAttention, -3.4028234663852886e38);  // float32's lowest: torch.finfo(torch.float32).min
  assert.equal(fills.GatedMultiHeadAttention, -((2 - 2 ** -23) * 2 ** 127));
  for (const [name, fill] of Object.entries(fills)) if (name !== "GatedMultiHeadAttention") assert.equal(fill, -Infinity, name);
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2, qkv_bias: true };
  const x = stackTwo(lab.bookTokens());  // (2, 6, 3): 2 x 2 query x key slices of 6 x 6, 15 masked keys each (the strict upper triangle)
  for (const className of ["GatedMultiHeadAttention", "MultiHeadAttention"]) {
    const fill = fills[className];
    const r = lab.run(className, config, x, { seed: 123, trace: true });
    const masked = r.trace.find((s) => s.id === "attn_scores_masked");
    const kept = Array.from(masked.data).filter((v) => v !== fill);
    assert.equal(masked.data.length - kept.length, 60, className);
    assert.deepEqual({ masked: masked.summary.masked, negInf: masked.summary.negInf, nonFinite: masked.summary.nonFinite }, className === "MultiHeadAttention" ? { masked: 60, negInf: 60, nonFinite: 60 } : { masked: 60, negInf: 0, nonFinite: 0 });
    assert.deepEqual(masked.sliceSummaries.map((s) => s.masked), [15, 15, 15, 15]);
    // min, max and mean over the 84 scores a query sees: the fill would have made min -3.4e38 and mean about -1e38
    assert.equal(masked.summary.min, Math.min(...kept), className);
    assert.equal(masked.summary.max, Math.max(...kept), className);
    assert.ok(Math.abs(masked.summary.mean - kept.reduce((a, v) => a + v, 0) / kept.length) < 1e-6, `${className}: mean ${masked.summary.mean}`);
    assert.ok(masked.summary.min > -10, `${className}: min ${masked.summary.min}`);
    // the lazy trace's (the masked scores a view of the scores and the mask) says the same
    const lazy = lab.run(className, config, x, { seed: 123, trace: "lazy" });
    const view = lazy.trace.stages.find((s) => s.id === "attn_scores_masked");
    assert.deepEqual(view.summary, masked.summary, className);
    assert.deepEqual(view.sliceSummaries, masked.sliceSummaries, className);
    // the weights: the masked positions exactly 0 either way (exp underflows from finfo.min)
    assert.equal(r.trace.find((s) => s.id === "attn_weights").summary.zeros, 60, className);
    lazy.trace.dispose();
  }
});

test("GatedMultiHeadAttention (ch04/08_deltanet): W_gate made right after W_query, its gate stage before out_proj, the mask's finfo.min fill in the stage text, W_gate kept by a copy", () => {
  const facts = lab.describe("GatedMultiHeadAttention").class;
  assert.deepEqual(facts.book, { chapter: "4", folder: "ch04/08_deltanet", file: "README.md", section: "" });
  assert.deepEqual(facts.slots.map((s) => s.name), ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"]);
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2, qkv_bias: true };
  const d = lab.describe("GatedMultiHeadAttention", config);
  assert.equal(d.pythonCall, "GatedMultiHeadAttention(3, 2, 6, 0.0, 2, qkv_bias=True)");
  // registration (and torch.manual_seed draw) order: W_query, W_gate, W_key, W_value, out_proj
  assert.deepEqual(d.parameters.map((p) => [p.name, p.shape]), [
    ["W_query.weight", [2, 3]], ["W_query.bias", [2]], ["W_gate.weight", [2, 3]], ["W_gate.bias", [2]], ["W_key.weight", [2, 3]], ["W_key.bias", [2]],
    ["W_value.weight", [2, 3]], ["W_value.bias", [2]], ["out_proj.weight", [2, 2]], ["out_proj.bias", [2]],
  ]);
  assert.equal(d.parameterCount, 4 * (2 * 3 + 2) + 2 * 2 + 2);  // 38: MultiHeadAttention's 30 and W_gate's 8
  const m = lab.create("GatedMultiHeadAttention", config, { generator: lab.manualSeed(123) });
  const { trace } = m.forward(stackTwo(lab.bookTokens()), { training: false, trace: true });
  const ids = trace.map((s) => s.id);
  assert.deepEqual(ids.slice(ids.indexOf("heads_concat")), ["heads_concat", "gate", "out_proj", "output"]);
  const masked = trace.find((s) => s.id === "attn_scores_masked");
  assert.match(masked.title, /set to torch\.finfo\(float32\)\.min = -3\.4028e\+38, not -inf\): their weights are still exactly 0/);
  assert.equal(masked.formula, "attn_scores.masked_fill_(mask.bool(), torch.finfo(attn_scores.dtype).min)");
  assert.equal(masked.data[1], -3.4028234663852886e38, "query 0, key 1: float32's lowest, not -inf");
  assert.equal(trace.find((s) => s.id === "attn_weights").data[1], 0);
  const gate = trace.find((s) => s.id === "gate");
  assert.match(gate.title, /^Gated context: the merged heads times sigmoid\(gate\)/);
  assert.equal(gate.formula, "heads_concat * torch.sigmoid(gate), gate = W_gate(x)  (x @ weight.T + bias; weight is (d_out, d_in))");
  assert.deepEqual(gate.shape, [2, 6, 2]);
  // MultiHeadAttention's masked scores still say -inf
  const mha = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(123) });
  assert.match(mha.forward(stackTwo(lab.bookTokens()), { training: false, trace: true }).trace.find((s) => s.id === "attn_scores_masked").title, /^Masked scores \(future keys set to -inf\)$/);
  // copied from the chapter's MultiHeadAttention: W_gate has no source, and the report says it is kept
  const report = lab.copyWeights(mha, m, {});
  assert.deepEqual(report.matrices.map((r) => [r.name, r.action]), [
    ["W_query.weight", "copied"], ["W_query.bias", "copied"], ["W_gate.weight", "kept"], ["W_gate.bias", "kept"], ["W_key.weight", "copied"], ["W_key.bias", "copied"],
    ["W_value.weight", "copied"], ["W_value.bias", "copied"], ["out_proj.weight", "copied"], ["out_proj.bias", "copied"],
  ]);
  assert.equal(report.matrices[2].hint, "W_gate.weight has no counterpart in MultiHeadAttention: it keeps its own values.");
  assert.equal(report.agree, false);
  assert.match(report.notes[0], /W_gate has no counterpart and keeps its own values/);
});
