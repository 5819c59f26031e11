// GPT-2 writes text (model.generate) against the book's chapter 5 `generate` in PyTorch 1.13
// (tests/fixtures/generate_gpt2.py -> tests/fixtures/gpt2/generate.json): greedy ids cached = uncached
// = torch (the context cropped to n_ctx without the cache), sampling at several temperature / top-k
// settings and an eos case with the same ids and the generator's MT19937 state where PyTorch's ends.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab } from "attention-lab";
import { gpt2File, sha256 } from "../gpt2-files.mjs";

const FIXTURES = JSON.parse(readFileSync(new URL("../fixtures/gpt2/generate.json", import.meta.url), "utf8"));
const lab = await loadAttentionLab();
const models = new Map();
async function modelOf(name) {
  if (!models.has(name)) {
    const spec = FIXTURES.files.find((f) => f.name === name);
    const file = gpt2File(lab, spec);
    assert.equal(sha256(file), spec.sha256, "the file is the one PyTorch ran");
    models.set(name, await lab.loadGPT2(file, { num_heads: spec.n_head }));
  }
  return models.get(name);
}
const optionsOf = (c) => ({ maxNewTokens: c.max_new_tokens, temperature: c.temperature, topK: c.top_k, eosId: c.eos_id });

for (const c of FIXTURES.cases.filter((x) => x.seed === null)) {
  test(`${c.name}: greedy ids as the book's generate (temperature 0), with and without the KV cache`, async () => {
    const model = await modelOf(c.file);
    const cacheFits = c.prompt.length + c.max_new_tokens - 1 <= model.config.n_ctx;
    for (const cache of cacheFits ? [true, false] : [false]) {
      const r = await model.generate(c.prompt, { ...optionsOf(c), cache });
      assert.deepEqual(r.tokenIds, c.token_ids, `cache ${cache}`);
      assert.equal(r.steps.length, c.max_new_tokens);
      assert.equal(r.stoppedBy, "maxNewTokens");
      r.steps.forEach((s, i) => {
        assert.equal(s.token, c.token_ids[c.prompt.length + i]);
        assert.equal(s.top.length, 5);
        assert.equal(s.top[0].id, s.token, "greedy: the pick is the most likely");
        assert.ok(Math.abs(s.top[0].prob - s.prob) < 1e-12);
        assert.equal(s.cacheTokens, cache ? c.prompt.length + i : 0);
        assert.equal(s.cacheBytes, 2 * model.config.n_layer * s.cacheTokens * model.config.n_embd * 4);
        assert.ok(s.ms >= 0);
      });
    }
    if (!cacheFits) {
      await assert.rejects(model.generate(c.prompt, optionsOf(c)), (e) => e.code === "cache_context" && e.slot === "maxNewTokens" && e.message.includes(`n_ctx is ${model.config.n_ctx}`));
    }
  });
}

for (const c of FIXTURES.cases.filter((x) => x.seed !== null)) {
  test(`${c.name}: temperature ${c.temperature}, topK ${c.top_k}, eosId ${c.eos_id}: PyTorch's ids and its generator state afterwards`, async () => {
    const model = await modelOf(c.file);
    const cacheFits = c.prompt.length + c.max_new_tokens - 1 <= model.config.n_ctx;
    for (const cache of cacheFits ? [true, false] : [false]) {
      const generator = lab.manualSeed(c.seed);
      const seen = [];
      const r = await model.generate(c.prompt, { ...optionsOf(c), generator, cache, onToken: (s) => seen.push(s.token) });
      assert.deepEqual(r.tokenIds, c.token_ids, `cache ${cache}`);
      assert.deepEqual(seen, c.token_ids.slice(c.prompt.length));
      assert.equal(r.stoppedBy, c.eos_id === null ? "maxNewTokens" : "eos");
      assert.deepEqual([...generator._state], c.state_after, "the generator is where PyTorch's is");
      for (const s of r.steps) {
        assert.ok(s.prob > 0 && s.prob <= 1);
        if (c.top_k !== null) assert.ok(s.top.filter((t) => t.prob > 0).length <= c.top_k);
      }
      generator.dispose();
    }
  });
}

for (const c of FIXTURES.window_cases) {
  test(`${c.name}: greedy with a window of ${c.window} positions, as gpt_with_kv_cache_optimized.py's kv_window_size: PyTorch's ids`, async () => {
    const model = await modelOf(c.file);
    const r = await model.generate(c.prompt, { maxNewTokens: c.max_new_tokens, window: c.window });
    assert.deepEqual(r.tokenIds, c.token_ids);
    r.steps.forEach((s, i) => {
      assert.equal(s.cacheTokens, Math.min(c.window, c.prompt.length + i), "the window holds at most its size");
      assert.equal(s.cacheBytes, 2 * model.config.n_layer * s.cacheTokens * model.config.n_embd * 4);
    });
    const plain = FIXTURES.cases.find((x) => x.name === "greedy");
    if (c.window >= c.prompt.length + c.max_new_tokens - 1) assert.deepEqual(c.token_ids, plain.token_ids, "a window holding every position changes nothing");
    else assert.notDeepEqual(c.token_ids, plain.token_ids.slice(0, c.token_ids.length), "shifting keys out changes what the model writes");
  });
}

test("a window bounds the keys held, not the positions: past n_ctx, a prompt longer than the window, or no cache are refused by name", async () => {
  const model = await modelOf("ctx8_f32");
  await assert.rejects(model.generate([1, 2, 3], { maxNewTokens: 7, window: 4 }), (e) => e.code === "cache_context" && e.slot === "maxNewTokens" && /9 positions/.test(e.message) && /n_ctx is 8/.test(e.message));
  await assert.rejects(model.generate([1, 2, 3, 4, 5], { maxNewTokens: 2, window: 4 }), (e) => e.code === "cache_window" && e.slot === "window" && /5 tokens/.test(e.message) && /window of 4/.test(e.message));
  await assert.rejects(model.generate([1], { maxNewTokens: 2, window: 9 }), (e) => e.code === "generate_option" && e.slot === "window" && /n_ctx 8/.test(e.message));
  await assert.rejects(model.generate([1], { maxNewTokens: 2, window: 0 }), { code: "generate_option", slot: "window" });
  await assert.rejects(model.generate([1], { maxNewTokens: 2, window: 2, cache: false }), { code: "generate_option", slot: "window" });
  const r = await model.generate([1, 2, 3], { maxNewTokens: 6, window: 3 });  // 8 positions (all wpe has), 3 held
  assert.equal(r.tokenIds.length, 9);
  assert.deepEqual(r.steps.map((s) => s.cacheTokens), [3, 3, 3, 3, 3, 3]);
});

test("the weights stay resident by default when they fit, and re-reading them per token gives the same tokens", async () => {
  const c = FIXTURES.cases.find((x) => x.name === "sample_t07_k50");
  const model = await modelOf(c.file);
  const resident = await model.generate(c.prompt, { ...optionsOf(c), generator: lab.manualSeed(c.seed) });
  const reread = await model.generate(c.prompt, { ...optionsOf(c), generator: lab.manualSeed(c.seed), resident: false });
  assert.equal(resident.resident, true);
  assert.equal(reread.resident, false);
  assert.deepEqual(reread.tokenIds, resident.tokenIds);
  assert.ok(reread.estimateBytes < resident.estimateBytes);
  // without a generator, sampling draws on a fresh manualSeed(123)
  const a = await model.generate(c.prompt, { ...optionsOf(c) });
  const b = await model.generate(c.prompt, { ...optionsOf(c), generator: lab.manualSeed(123) });
  assert.deepEqual(a.tokenIds, b.tokenIds);
});

test("generate's options are checked by name; one run at a time; a signal cancels between tokens; onToken throwing stops it", async () => {
  const model = await modelOf("tiny_f32");
  const bad = async (options, code, slot) => assert.rejects(model.generate([1, 2], options), (e) => e.code === code && e.slot === slot, JSON.stringify(options));
  await bad({}, "generate_option", "maxNewTokens");
  await bad({ maxNewTokens: 0 }, "generate_option", "maxNewTokens");
  await bad({ maxNewTokens: 2.5 }, "generate_option", "maxNewTokens");
  await bad({ maxNewTokens: "3" }, "generate_option", "maxNewTokens");
  await bad({ maxNewTokens: 2, temperature: -1 }, "generate_option", "temperature");
  await bad({ maxNewTokens: 2, temperature: NaN }, "generate_option", "temperature");
  await bad({ maxNewTokens: 2, topK: 0 }, "generate_option", "topK");
  await bad({ maxNewTokens: 2, topK: 50258 }, "generate_option", "topK");
  await bad({ maxNewTokens: 2, eosId: -1 }, "generate_option", "eosId");
  await bad({ maxNewTokens: 2, cache: "yes" }, "generate_option", "cache");
  await bad({ maxNewTokens: 2, resident: 1 }, "generate_option", "resident");
  await bad({ maxNewTokens: 2, onToken: 5 }, "generate_option", "onToken");
  await bad({ maxNewTokens: 2, temperature: 1, generator: {} }, "generator", "generator");
  await bad(5, "bad_options", "generate");
  await assert.rejects(model.generate([50257], { maxNewTokens: 1 }), { code: "checkpoint_token" });
  await assert.rejects(model.generate([], { maxNewTokens: 1 }), { code: "input_empty" });

  const controller = new AbortController();
  const steps = [];
  const running = model.generate([1, 2], { maxNewTokens: 20, onToken: (s) => {
    steps.push(s);
    if (steps.length === 3) controller.abort();
  }, signal: controller.signal });
  await assert.rejects(model.generate([1, 2], { maxNewTokens: 1 }), { code: "busy" });
  await assert.rejects(running, { code: "cancelled" });
  assert.equal(steps.length, 3);
  await assert.rejects(model.generate([1], { maxNewTokens: 3, onToken: () => { throw new Error("mine"); } }), (e) => e.code === "callback" && e.slot === "onToken");
  // the model stays usable
  const r = await model.generate([15496, 11, 616, 1438], { maxNewTokens: 2 });
  assert.deepEqual(r.tokenIds, FIXTURES.cases[0].token_ids.slice(0, 6));
  const run = await model.run([15496, 11, 616, 1438]);
  assert.equal(run.nextTokens[0].id, r.tokenIds[4], "the first generated token is the whole-model run's most likely");
  assert.ok(Math.abs(run.nextTokens[0].prob - r.steps[0].prob) <= 1e-4 * run.nextTokens[0].prob, "the same probability (torch.softmax in float32 here, double there)");
});

test("attention: true gives each new token's attn_weights rows, the last row of model.run's on the same ids (within 1e-6), cached or not", async () => {
  const c = FIXTURES.cases.find((x) => x.name === "greedy");
  const model = await modelOf(c.file);
  const { n_layer: L, n_head: H } = model.config;
  const plain = await model.generate(c.prompt, { maxNewTokens: 4 });
  assert.equal(plain.steps[0].attention, null, "off by default");
  await assert.rejects(model.generate(c.prompt, { maxNewTokens: 2, attention: "yes" }), (e) => e.code === "generate_option" && e.slot === "attention");
  for (const cache of [true, false]) {
    const r = await model.generate(c.prompt, { maxNewTokens: 4, cache, attention: true });
    assert.deepEqual(r.tokenIds, plain.tokenIds, "the rows change nothing");
    const without = cache ? plain : await model.generate(c.prompt, { maxNewTokens: 4, cache }); // the same mode: without the cache nothing is kept between forwards
    assert.ok(r.estimateBytes > without.estimateBytes, "the rows are counted in the estimate");
    for (const [i, s] of r.steps.entries()) {
      const T = c.prompt.length + i;
      assert.deepEqual(s.attention.shape, [L, H, T]);
      assert.ok(s.attention.data instanceof Float32Array);
      const run = await model.run(r.tokenIds.slice(0, T));
      let worst = 0;
      for (let layer = 0; layer < L; layer++) {
        const w = run.layers[layer].attnWeights.data; // (1, H, T, T)
        for (let head = 0; head < H; head++) {
          for (let j = 0; j < T; j++) worst = Math.max(worst, Math.abs(s.attention.data[(layer * H + head) * T + j] - w[(head * T + T - 1) * T + j]));
        }
      }
      assert.ok(worst <= 1e-6, `cache ${cache}, token ${i}: ${worst}`);
    }
  }
});
