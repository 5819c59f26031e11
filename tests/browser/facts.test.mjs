// The facts panel, the code panel and the stage notes for every class, read off the page: the mask
// fact follows the recipe's mask rule (a buffer, built per forward, inverted, none), the code names
// where the class lives in the book's repository, and the mask stage's title says the class's rule.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { afterRun, finish, launchLab, openPage, pasteCall, SCREENSHOT_DIR } from "./helpers.mjs";

// How each class makes its queries, as the queries stage's formula says (the recipe's projection rule).
const QUERIES = {
  SelfAttention_v1: /^queries = x @ W_query$/,
  MultiHeadAttentionWrapper: /heads\[h\]\.W_query\(x\)/,
  MultiHeadAttention: /W_query\(x\)\)\.view\(b, num_tokens, num_heads, head_dim\)/,
  MultiHeadAttentionCombinedQKV: /qkv\(x\)\.view\(b, num_tokens, 3, num_heads, head_dim\)\.permute\(2, 0, 3, 1, 4\)\[0\] {2}\(rows 0:4 of qkv\.weight\)/,
  MHAEinsum: /torch\.einsum\("bnd,do->bno", x, W_query\)/,
  MHAPyTorchClass: /rows 0:4 of multihead_attn\.in_proj_weight/,
  PyTorchMultiHeadAttention: /qkv\(x\)\.view/,
};
// The output projection's title names it when it is not out_proj.
const OUT_PROJ = { MultiHeadAttention: /^Output projection$/, MultiHeadAttentionCombinedQKV: /^Output projection \(proj\)$/, MHAPyTorchClass: /^Output projection \(multihead_attn\.out_proj, no bias\)$/ };

// One small valid call per class (its own slot order), the mask fact and the mask stage's title it must show.
const CASES = [
  ["SelfAttention_v1(3, 2)", /^none \(this class does not mask\)$/, null, /chapter 3 class, section 3\.4\.1 \(ch03\/01_main-chapter-code\/ch03\.ipynb\)/],
  ["SelfAttention_v2(3, 2)", /^none/, null, /section 3\.4\.2/],
  ["CausalAttention(3, 2, 6, 0.0)", /^causal: a 6 × 6 float32 buffer = 144 bytes$/, /top-left 6 x 6 of the 6 x 6 buffer/, /section 3\.5\.3/],
  ["MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)", /^causal: a 6 × 6 float32 buffer/, /top-left 6 x 6 of the 6 x 6 buffer/, /section 3\.6\.1/],
  ["MultiHeadAttention(3, 2, 6, 0.0, 2)", /^causal: a 6 × 6 float32 buffer/, /top-left 6 x 6 of the 6 x 6 buffer/, /section 3\.6\.2/],
  ["MultiHeadAttentionCombinedQKV(4, 4, 2, 6)", /^causal: a 6 × 6 float32 buffer/, /top-left 6 x 6 of the 6 x 6 buffer/, /chapter 3 bonus material \(ch03\/02_bonus_efficient-multihead-attention\/mha-implementations\.ipynb\)/],
  ["MHAEinsum(4, 4, 6, 0.0, 2)", /^causal: a 6 × 6 float32 buffer/, /top-left 6 x 6/, /mha-implementations\.ipynb/],
  ["MHAPyTorchScaledDotProduct(4, 4, 2, 6)", /^causal, built for the tokens given \(no buffer\)$/, /is_causal=True: built by scaled_dot_product_attention/, /mha-implementations\.ipynb/],
  ["MHAPyTorchSDPAWithoutFlash(4, 4, 2, 6)", /^a 6 × 6 bool buffer = 36 bytes, passed where True means “attend”: inverted/, /Inverted mask/, /mha-implementations\.ipynb/],
  ["MHAPyTorchFlexAttention(4, 4, 2, 6)", /^causal, built for the tokens given/, /Causal block mask/, /mha-implementations\.ipynb/],
  ["MHAPyTorchClass(4, 4, 2, 6)", /^causal: a 6 × 6 bool buffer = 36 bytes$/, /of the 6 x 6 bool buffer/, /mha-implementations\.ipynb/],
  ["PyTorchMultiHeadAttention(4, 4, 2)", /^causal, built for the tokens given/, /is_causal=True/, /chapter 3 bonus material \(pkg\/llms_from_scratch\/ch03\.py\)/],
  ["GroupedQueryAttention(3, 4, 0.0, 4, 2)", /^causal, built for the tokens given/, /Causal mask for the 6 tokens given/, /chapter 4 bonus material \(ch04\/04_gqa\/gpt_with_kv_gqa\.py\)/],
  ["MultiHeadLatentAttention(3, 4, 0.0, 2, latent_dim=2)", /^causal, built for the tokens given/, /Causal mask for the 6 tokens given/, /chapter 4 bonus material \(ch04\/05_mla\/gpt_with_kv_mla\.py\)/],
  ["MultiHeadAttentionWithSWA(3, 2, 0.0, 2, sliding_window_size=3)", /^sliding window of 3 keys, built for the tokens given/, /Sliding-window causal mask/, /ch04\/06_swa\/gpt_with_kv_swa\.py/],
  ["GatedMultiHeadAttention(3, 2, 6, 0.0, 2)", /^causal: a 6 × 6 float32 buffer = 144 bytes$/, /top-left 6 x 6 of the 6 x 6 buffer/, /chapter 4 bonus material \(ch04\/08_deltanet\/README\.md\)/],
  // a class told apart from the chapter's by its book folder (its id), with RoPE
  ["MultiHeadAttention@ch05/07_gpt_to_llama(4, 4, 6, 2)", /^causal: a 6 × 6 float32 buffer = 144 bytes$/, /top-left 6 x 6 of the 6 x 6 buffer/,
    /chapter 5 bonus material \(ch05\/07_gpt_to_llama\/converting-gpt-to-llama2\.ipynb\)/],
];

describe("facts, code and stage notes for every class", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("every class of lab.classes has a case here", async () => {
    const page = await openPage(lab);
    const names = await page.locator("#class-select option").evaluateAll((os) => os.map((o) => o.value));
    assert.deepEqual(names, CASES.map(([call]) => call.slice(0, call.indexOf("("))));
    // grouped by the folder of the book's repository
    const groups = await page.locator("#class-select optgroup").evaluateAll((gs) => gs.map((g) => g.label));
    assert.deepEqual(groups, ["Chapter 3: ch03/01_main-chapter-code", "Chapter 3 bonus: ch03/02_bonus_efficient-multihead-attention", "Chapter 3 bonus: pkg/llms_from_scratch",
      "Chapter 4 bonus: ch04/04_gqa", "Chapter 4 bonus: ch04/05_mla", "Chapter 4 bonus: ch04/06_swa", "Chapter 4 bonus: ch04/08_deltanet", "Chapter 5 bonus: ch05/07_gpt_to_llama"]);
    await finish(page);
  });

  for (const [call, maskFact, maskTitle, home] of CASES) {
    test(`${call}: the mask fact, the code panel's class home and the mask stage`, async () => {
      const page = await openPage(lab);
      await pasteCall(page, call);
      await page.getByTestId("source-sentence").check();  // seeded embeddings of width d_in: every class runs
      assert.match((await page.getByTestId("mask-bytes").textContent()).trim(), maskFact);
      await afterRun(page, () => page.getByTestId("run").click());
      const code = await page.locator("#code-view").textContent();
      const className = call.slice(0, call.indexOf("("));
      assert.match(code.split("\n")[1], new RegExp(`^# ${className}: `));
      assert.match(code.split("\n")[1], home);
      const mask = page.locator("[data-stage=mask]");
      if (maskTitle) {
        assert.match(await mask.locator("h3").textContent(), maskTitle);
        // the sliding window's mask also hides keys too far back: its note says what 1 marks there
        const note = className === "MultiHeadAttentionWithSWA" ? /^1 marks a hidden key: a future position \(key after query\), or a key \d+ or more positions before the query/ : /^1 marks a future position/;
        if (className !== "MHAPyTorchSDPAWithoutFlash") assert.match(await mask.getByTestId("mask-note").textContent(), note);
      }
      else assert.equal(await mask.count(), 0);
      if (QUERIES[className]) assert.match(await page.locator("[data-stage=queries] .stage-formula").first().textContent(), QUERIES[className]);
      if (OUT_PROJ[className]) assert.match((await page.locator("[data-stage=out_proj] h3").textContent()).replace(/^out_proj\s*/, ""), OUT_PROJ[className]);
      if (className === "MultiHeadLatentAttention") {
        // the cache holds the latent alone; keys and values come from it, and the note says what that equals
        assert.match(await page.getByTestId("kv-cache").textContent(), /^8 bytes \(the latent c_kv: latent_dim = 2 floats, float32; .*4× less than MultiHeadAttention of this width \(32 bytes\)$/);
        const latent = page.locator("[data-stage=c_kv]");
        assert.match(await latent.getByTestId("stage-shape").textContent(), /\(b=2, num_tokens=6, latent_dim=2\)/);
        assert.match(await latent.locator(".stage-formula").textContent(), /^c_kv = W_DKV\(x\)/);
        assert.match(await latent.getByTestId("latent-note").textContent(), /equals a MultiHeadAttention whose W_key\.weight is W_UK\.weight @ W_DKV\.weight/);
        assert.match(await page.locator("[data-stage=keys] .stage-formula").textContent(), /^keys = W_UK\(c_kv\)\.view/);
        await page.getByTestId("facts").screenshot({ path: `${SCREENSHOT_DIR}/facts-mla.png` });
        await latent.screenshot({ path: `${SCREENSHOT_DIR}/mla-latent-stage.png` });
      }
      if (className.includes("@")) {
        // Python's name in the code, the id in the picker and the call box; the RoPE tables and the rotated queries and keys as stages
        assert.match(code, /^mha_llama2 = MultiHeadAttention\(4, 4, 6, 2\)$/m);
        assert.equal(await page.locator("#class-select").inputValue(), className);
        assert.equal(await page.getByTestId("call-box").inputValue(), call);
        assert.match(await page.locator("[data-stage=cos] h3").textContent(), /RoPE table cos: rows 0 to 5 of the \(6, 2\) buffer \(theta = 10000\)/);
        assert.match(await page.locator("[data-stage=sin] .stage-formula").textContent(), /^sin = torch\.sin\(angles\)/);
        assert.match(await page.locator("[data-stage=queries_rope] .stage-formula").first().textContent(), /^queries = compute_rope\(queries, self\.cos, self\.sin\)/);
        assert.match(await page.locator("[data-stage=keys_rope] h3").textContent(), /Keys after RoPE per head/);
        assert.match((await page.locator("[data-stage=out_proj] h3").textContent()).replace(/^out_proj\s*/, ""), /^Output projection \(no bias\)$/);
        await page.locator("[data-stage=queries_rope]").screenshot({ path: `${SCREENSHOT_DIR}/llama2-queries-rope-stage.png` });
      }
      if (className === "GatedMultiHeadAttention") {
        // the mask fills torch.finfo(float32).min, and the stage says so; the gate comes between the merge and out_proj
        assert.match(await page.locator("[data-stage=attn_scores_masked] h3").textContent(), /set to torch\.finfo\(float32\)\.min = -3\.4028e\+38, not -inf\): their weights are still exactly 0/);
        const gate = page.locator("[data-stage=gate]");
        assert.match(await gate.locator("h3").textContent(), /Gated context: the merged heads times sigmoid\(gate\)/);
        assert.match(await gate.locator(".stage-formula").textContent(), /^heads_concat \* torch\.sigmoid\(gate\), gate = W_gate\(x\)/);
        const order = await page.locator("[data-stage]").evaluateAll((cards) => cards.map((c) => c.dataset.stage));
        assert.equal(order.indexOf("gate"), order.indexOf("heads_concat") + 1);
        assert.equal(order.indexOf("out_proj"), order.indexOf("gate") + 1);
        assert.match(await page.getByTestId("facts").textContent(), /W_gate\.weight/);
        await gate.screenshot({ path: `${SCREENSHOT_DIR}/gated-gate-stage.png` });
      }
      if (className === "MHAPyTorchSDPAWithoutFlash") {
        // the pitfall, stage by stage: the inverted mask, then the last query's NaN row and its warning
        assert.match(await mask.getByTestId("mask-note").textContent(), /every key at or before the query: the mask is inverted/);
        assert.match(await page.locator("[data-stage=attn_weights]").getByTestId("row-sums").textContent(), /^1 of the 6 rows is NaN/);
        assert.equal(await page.locator(".diag[data-code=inverted_mask]").count() > 0, true);
        await page.getByTestId("facts").screenshot({ path: `${SCREENSHOT_DIR}/facts-inverted-mask.png` });
        await mask.screenshot({ path: `${SCREENSHOT_DIR}/inverted-mask-stage.png` });
      }
      await finish(page);
    });
  }
});
