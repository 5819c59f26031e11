// lab.checkModule over the real WASM core: each catalogue cause's line and fix as the reader's class
// writes them (core/src/check_lines.cpp). For a class and the mistake written into its forward
// (tests/fixtures/check_readers.py), the explaining cause shows the [line, fix] of
// tests/fixtures/check_lines.json, written by hand from the class's source in the book's repository.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
const { cases } = JSON.parse(readFileSync(new URL("../fixtures/check_module_fixtures.json", import.meta.url), "utf8"));
const { _about, ...LINES } = JSON.parse(readFileSync(new URL("../fixtures/check_lines.json", import.meta.url), "utf8"));

const tensor = (t) => ({ shape: t.shape, data: Float32Array.from(t.data, (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v)) });
function fileOf(c) {
  const file = { call: c.call, stateDict: Object.fromEntries(c.state_dict.map((t) => [t.name, tensor(t)])), x: tensor(c.x), output: tensor(c.output) };
  if (c.stages) file.stages = Object.fromEntries(Object.entries(c.stages).map(([id, t]) => [id, tensor(t)]));
  if (c.seed !== undefined) file.seed = c.seed;
  return file;
}
const classOf = (c) => c.call.slice(0, c.call.indexOf("("));

for (const [className, lines] of Object.entries(LINES)) {
  test(`${className}: the explaining cause quotes the class's own line and the book's line`, () => {
    const shown = new Set();
    for (const c of cases.filter((x) => classOf(x) === className && typeof x.expect.explains === "string" && x.expect.explains in lines)) {
      const cause = lab.checkModule(fileOf(c)).causes.find((x) => x.id === c.expect.explains);
      assert.ok(cause?.explains, c.name);
      assert.deepEqual([cause.line, cause.fix], lines[c.expect.explains], c.name);
      shown.add(c.expect.explains);
    }
    assert.deepEqual([...shown].sort(), Object.keys(lines).sort());  // every line of the table shown by a case of the class
  });
}

test("the six lines the issue names, as their classes write them", () => {
  const cause = (className, mistake) => {
    const c = cases.find((x) => classOf(x) === className && x.expect.explains === mistake);
    const found = lab.checkModule(fileOf(c)).causes.find((x) => x.id === mistake);
    return [found.line, found.fix];
  };
  assert.deepEqual(cause("MultiHeadAttention", "missing_out_proj"), ["return context_vec  # without self.out_proj", "context_vec = self.out_proj(context_vec)"]);
  assert.deepEqual(cause("MultiHeadAttentionCombinedQKV", "missing_out_proj"), ["return context_vec  # without self.proj", "context_vec = self.proj(context_vec)"]);
  assert.deepEqual(cause("MHAEinsum", "query_from_key"), ['Q = torch.einsum("bnd,do->bno", x, self.W_key)', 'Q = torch.einsum("bnd,do->bno", x, self.W_query)']);
  assert.deepEqual(cause("SelfAttention_v1", "query_from_key"), ["queries = x @ self.W_key", "queries = x @ self.W_query"]);
  assert.deepEqual(cause("GroupedQueryAttention", "mask_diagonal"),
    ["mask = q_positions.unsqueeze(-1) <= k_positions.unsqueeze(0)", "mask = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)"]);
  assert.deepEqual(cause("MHAPyTorchScaledDotProduct", "mask_not_passed"), [
    "context_vec = nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=None, dropout_p=use_dropout)",
    "context_vec = nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=None, dropout_p=use_dropout, is_causal=True)",
  ]);
});

test("no class is shown a line its forward does not have", () => {
  for (const c of cases.filter((x) => x.mistake === null && x.seed === undefined)) {
    const className = classOf(c);
    for (const cause of lab.checkModule(fileOf(c)).causes) {
      const at = `${c.name}: ${cause.id}`;
      assert.notEqual(cause.line, cause.fix, at);
      if (["MultiHeadAttentionCombinedQKV", "MHAPyTorchScaledDotProduct"].includes(className)) assert.ok(!`${cause.line} ${cause.fix}`.includes("out_proj"), at);
      if (["SelfAttention_v1", "MHAEinsum"].includes(className)) assert.ok(!cause.fix.includes("W_query(x)"), at);
      if (["SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper"].includes(className)) assert.ok(!cause.line.includes("head_dim"), at);
      if (className === "MHAEinsum") assert.ok(!`${cause.line} ${cause.fix}`.includes("attn_scores"), at);
    }
  }
});
