// Issue 17, item 2: one Setup per edit (lab.setup: check, describe and estimateBytes of the edit in one
// call into the core) and a run in one call (lab.run: manual_seed, the constructor, a traced forward).
import { test } from "node:test";
import assert from "node:assert/strict";
import { AttentionError, loadAttentionLab } from "attention-lab";
import { LabApp } from "../../web/app/lab-app.js";
import { MAX_TOKENS, buildInput, seedValue, slotsPatch } from "../../web/app/lab-model.js";
import { mib } from "../../web/app/format.js";
import { S } from "../../web/app/strings.js";
import { sameBits } from "./helpers.mjs";

const lab = await loadAttentionLab();

/** Slot values for a class without presets (each class takes the ones it has). */
const FALLBACK = { d_in: 4, d_out: 4, context_length: 6, dropout: 0.0, num_heads: 2, num_kv_groups: 1 };

/** The class's first preset (slot texts, read by the core as a call's literals), else FALLBACK's values. */
function configOf(name) {
  const preset = lab.classFacts(name).presets[0];
  if (preset) return { ...preset.slots };
  return Object.fromEntries(lab.slots(name).filter((s) => s.name in FALLBACK).map((s) => [s.name, FALLBACK[s.name]]));
}

/** setup(...) against check, describe and estimateBytes on the same arguments, field by field. */
function assertAgrees(className, config, options = {}) {
  const setup = lab.setup(className, config, options);
  const where = `${className}(${JSON.stringify(config)}) ${JSON.stringify(options)}`;
  const { inputShape, training, trace } = options;
  assert.deepEqual(setup.diagnostics, lab.check(className, config, { inputShape, training }), `diagnostics of ${where}`);
  const described = lab.describe(className, config);
  assert.deepEqual(Object.keys(setup.description).sort(), Object.keys(described).sort(), `description fields of ${where}`);
  for (const key of Object.keys(described)) assert.deepEqual(setup.description[key], described[key], `description.${key} of ${where}`);
  assert.equal(setup.ok, described.ok);
  if (described.ok) {
    assert.deepEqual(setup.memory, lab.estimateBytes(className, config, inputShape, { trace }), `memory of ${where}`);
  } else {
    assert.equal(setup.memory, null);
    assert.throws(() => lab.estimateBytes(className, config, inputShape), AttentionError);
  }
  return setup;
}

test("lab.setup agrees with check, describe and estimateBytes field by field for every class (its first preset)", () => {
  for (const name of lab.classes) {
    const config = configOf(name);
    const setup = assertAgrees(name, config);
    assert.ok(setup.ok, `${name}'s first preset is valid: ${JSON.stringify(setup.diagnostics)}`);
    assert.equal(setup.className, name);
    assert.equal(setup.description.class, lab.classFacts(name));
    const dIn = Number(setup.description.config.d_in);
    for (const shape of [lab.inputShape(name, 6, dIn, 2), lab.inputShape(name, 6, dIn + 1, 1)]) {
      for (const training of [true, false]) {
        assertAgrees(name, config, { inputShape: shape, training });
        assertAgrees(name, config, { inputShape: shape, training, trace: false });
      }
    }
  }
});

test("lab.setup agrees on configurations with problems: errors, only the dropout wrong, an unknown class, a missing slot", () => {
  const mha = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };
  const heads = assertAgrees("MultiHeadAttention", { ...mha, d_out: 3 }, { inputShape: [2, 6, 3], training: true });
  assert.ok(heads.diagnostics.some((d) => d.code === "heads_divisibility"));
  assert.equal(heads.description.parameterCount, undefined);
  const dropout = assertAgrees("MultiHeadAttention", { ...mha, dropout: 1.5 }, { inputShape: [2, 6, 3] });
  assert.equal(dropout.ok, false);
  assert.equal(dropout.description.headDim, 1, "the sizes are still described");
  assertAgrees("MultiHeadAttention", { ...mha, dropout: 0.5 }, { inputShape: [2, 7, 3], training: false });
  assertAgrees("MultiheadAttention", mha);
  assertAgrees("CausalAttention", { d_in: 3, d_out: 2 }, { inputShape: [2, 6, 3] });
  assertAgrees("MultiHeadAttention", { ...mha, d_in: 100000, d_out: 100000 }, { inputShape: [1, 6, 100000] });
  assert.throws(() => lab.setup("MultiHeadAttention", mha, { inputShape: [2, "6", 3] }), (e) => e instanceof AttentionError && e.code === "tensor_shape");
  assert.throws(() => lab.setup("MultiHeadAttention", mha, 5), (e) => e instanceof AttentionError && e.code === "bad_options");
});

test("lab.run is manual_seed, create and a traced forward in one call: the same bits, warnings always an array", () => {
  const x = { shape: [2, 6, 3], data: new Float32Array([...lab.bookTokens().data, ...lab.bookTokens().data]) };
  for (const [dropout, training] of [[0.0, true], [0.5, true], [0.5, false]]) {
    const config = { d_in: 3, d_out: 2, context_length: 6, dropout, num_heads: 2 };
    const r = lab.run("MultiHeadAttention", config, x, { seed: 789, training });
    const gen = lab.manualSeed(789);
    const expected = lab.create("MultiHeadAttention", config, { generator: gen }).forward(x, { training, generator: gen, trace: true });
    assert.ok(sameBits(r.output.data, expected.output.data), `dropout ${dropout}, training ${training}`);
    assert.deepEqual(r.trace.map((s) => s.id), expected.trace.map((s) => s.id));
    for (const [i, s] of r.trace.entries()) assert.ok(sameBits(s.data, expected.trace[i].data), s.id);
    assert.deepEqual(r.warnings, []);
    assert.equal(r.pythonCall, `MultiHeadAttention(3, 2, 6, ${dropout.toFixed(1)}, 2)`);
    assert.equal(r.outputWidth, 2);
    assert.equal(r.headDim, 1);
  }
  const handles = lab.handlesInUse();
  const untraced = lab.run("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, x, { trace: false });
  assert.equal(untraced.trace, undefined);
  const code = (f) => { try { f(); } catch (e) { return e instanceof AttentionError ? e.code : `not an AttentionError: ${e}`; } return "no error"; };
  assert.equal(code(() => lab.run("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0.0, num_heads: 2 }, x)), "heads_divisibility");
  assert.equal(code(() => lab.run("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 4, dropout: 0.0, num_heads: 2 }, x)), "context_too_short");
  assert.equal(code(() => lab.run("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, x, { seed: 1.5 })), "seed");
  assert.equal(code(() => lab.run("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, { shape: [6, 3] })), "tensor_shape");
  assert.equal(lab.handlesInUse(), handles, "a run keeps no module or generator");
});

/** The element as LabApp uses it: its dataset, and dispatchEvent recording what it sends (setup-change). */
function host(events = []) {
  return { dataset: {}, dispatchEvent: (e) => { events.push(e); return true; } };
}

test("the page's app: an edit of one slot makes one setup; a Run click (derive, run, derive) at most two core calls", async () => {
  const calls = [];
  const core = lab._core;
  const originals = new Map();
  for (const name of Object.keys(core)) {
    if (typeof core[name] !== "function") continue;
    const f = core[name];
    originals.set(name, f);
    core[name] = (...args) => {
      calls.push(name);
      return f.apply(core, args);
    };
  }
  try {
    const app = new LabApp({ getElementById: () => null }, host(), lab, { autorun: false });
    app.panels = [{ render() {} }];  // derive() runs on every render, as on the page
    const s = app.state;
    app.setState(slotsPatch(lab, "MultiHeadAttention", { ...s.slotTexts, d_in: "3", d_out: "2", context_length: "6", dropout: "0.0", num_heads: "2" }), { edit: true });
    assert.equal(app.state.call, "MultiHeadAttention(3, 2, 6, 0.0, 2)");
    assert.equal(app.derived.blocked, false, app.derived.reason);

    /** What the run panel does for one click: a render as it starts, the run, a render with its result. */
    const click = async () => {
      const d = app.derived;
      app.setState({ running: true });
      const x = buildInput(lab, app.state, d.config, app.tokensFor(d.config.d_in));
      const r = await app.runner.run({ className: app.state.className, config: d.config, x, seed: seedValue(app.lab, app.state), training: app.state.training }, { bytes: d.memory, fullConfig: d.description.config });
      app.setState({ running: false, lastRun: { key: d.key, seq: 1 } });
      return r;
    };
    calls.length = 0;
    const first = await click();
    assert.deepEqual(first.output.shape, [2, 6, 2]);
    assert.ok(calls.length <= 2, `the first Run click made ${calls.join(", ")}`);
    assert.equal(calls.filter((n) => n === "runModule").length, 1);
    calls.length = 0;
    await click();
    assert.deepEqual(calls, ["runModule"], "a second click: the Setup and the tokens are the edit's");

    calls.length = 0;
    app.setState(slotsPatch(lab, app.state.className, { ...app.state.slotTexts, d_out: "4" }), { edit: true });
    assert.equal(calls.filter((n) => n === "setup").length, 1, `the edit made ${calls.join(", ")}`);
    assert.ok(!calls.some((n) => ["describe", "check", "estimateBytes"].includes(n)), calls.join(", "));
    assert.equal(app.derived.description.outputWidth, 4);
    calls.length = 0;
    app.render();
    assert.deepEqual(calls, [], "a render with no edit calls nothing");
    await click();
    assert.deepEqual(calls, ["runModule"]);
  } finally {
    for (const [name, f] of originals) core[name] = f;
  }
});

test("one memory budget: the page's app refuses a run exactly where the core's estimate passes the core's budget (Setup.memory.budget), by the core's too_large", () => {
  const events = [];
  const app = new LabApp({ getElementById: () => null }, host(events), lab, { autorun: false });
  app.panels = [{ render() {} }];
  const config = { d_in: 8, d_out: 8, context_length: 4096, dropout: 0.0, num_heads: 4 };
  app.setState(slotsPatch(lab, "MultiHeadAttention", { ...app.state.slotTexts, d_in: "8", d_out: "8", context_length: "4096", dropout: "0.0", num_heads: "4" }), { edit: true });
  const at = (n) => lab.estimateBytes("MultiHeadAttention", config, [1, n, 8]);
  const { budget } = at(1);
  // The most tokens whose traced run fits the core's budget (the estimate grows with the tokens).
  let fits = 1;
  for (let hi = MAX_TOKENS; fits < hi;) {
    const mid = Math.ceil((fits + hi) / 2);
    if (at(mid).bytes <= budget) fits = mid;
    else hi = mid - 1;
  }
  assert.ok(fits < MAX_TOKENS, "the page can ask for more tokens than fit");
  assert.ok(at(fits).bytes > 1024 * 1048576, "it fits where the page's own 1 GiB budget used to refuse it");

  app.setState({ source: "random", count: String(fits), batch: 1 }, { edit: true });
  let d = app.derived;
  assert.equal(d.budget, budget, "the page shows the core's budget");
  assert.equal(d.memory, at(fits).bytes);
  assert.equal(d.blocked, false, d.reason);
  assert.ok(!d.inputDiags.some((x) => x.code === "too_large"));

  app.setState({ count: String(fits + 1) }, { edit: true });
  d = app.derived;
  assert.ok(d.memory > budget);
  assert.equal(d.blocked, true);
  assert.equal(d.reason, S.reasonMemory);
  const tooLarge = d.inputDiags.filter((x) => x.code === "too_large");
  assert.equal(tooLarge.length, 1, "one refusal, the core's");
  assert.match(tooLarge[0].message, new RegExp(`over the ${mib(budget)} MiB budget`));
  assert.deepEqual(d.tokens.problems.map((p) => p.code), [], "the page adds no refusal of its own");
  // the host hears it: setup-change turned invalid, with the core's too_large among its diagnostics
  const last = events.at(-1);
  assert.equal(last.type, "setup-change");
  assert.equal(last.detail.valid, false);
  assert.equal(last.detail.reason, S.reasonMemory);
  assert.deepEqual(last.detail.diagnostics.filter((x) => x.code === "too_large").map((x) => x.slot), [tooLarge[0].slots?.[0] ?? ""]);
  assert.equal(events.filter((e) => e.detail.valid).at(-1).detail.config.context_length, 4096);
});

test("the page's seed check and the core's agree at the edges: one range, the core's (lab.seedRange)", () => {
  const highest = 2 ** 53 - 1;
  assert.deepEqual(lab.seedRange, { lowest: -highest, highest });
  const core = (seed) => {
    try {
      lab.manualSeed(seed).dispose();
      return "taken";
    } catch (e) {
      return e instanceof AttentionError && e.slot === "seed" ? e.code : `not an AttentionError: ${e}`;
    }
  };
  const page = (seed) => (seedValue(lab, { seed: String(seed) }) === seed ? "taken" : "seed");
  const edges = { 0: "taken", [highest]: "taken", [2 ** 53]: "seed", [-1]: "taken", 1.5: "seed", [-highest]: "taken", [-(2 ** 53)]: "seed" };
  for (const [text, verdict] of Object.entries(edges)) {
    const seed = Number(text);
    assert.equal(core(seed), verdict, `the core on ${text}`);
    assert.equal(page(seed), verdict, `the page on ${text}`);
  }
  const book = lab.bookTokens();
  const x = { shape: [1, ...book.shape], data: book.data };
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 };
  assert.throws(() => lab.run("MultiHeadAttention", config, x, { seed: 2 ** 53 }), { code: "seed", message: `the seed must be a whole number from -${highest} to ${highest} (2**53 - 1), got 9007199254740992` });
  assert.equal(lab.run("MultiHeadAttention", config, x, { seed: highest, trace: false }).output.shape.join(), "1,6,2");
  assert.equal(seedValue(lab, { seed: "9007199254740993" }), null, "2**53 + 1 reads as 2**53: refused, not rounded");
  assert.equal(S.reasonSeed(lab.seedRange), `the seed must be a whole number from -${highest} to ${highest}.`);
});

test("a preset's title is the call the core writes for its slots, then what the call does not say", async () => {
  const { presetTitle, presetsOf } = await import("../../web/app/setup-panel.js");
  const titles = Object.fromEntries(presetsOf(lab).map((p) => [p.key, presetTitle(lab, p)]));
  assert.equal(titles.bookToy, "MultiHeadAttention(3, 2, 6, 0.0, 2) on the book’s six tokens");
  assert.equal(titles.swaToy, "MultiHeadAttentionWithSWA(3, 2, 0.0, 2, sliding_window_size=3) on the book’s six tokens");
  assert.equal(titles.gqaSmall, "GroupedQueryAttention(768, 768, 0.0, 12, 4): 12 query heads, 4 key/value heads");
  assert.equal(titles.einsumSmall, "MHAEinsum(768, 768, 1024, 0.0, 12)");
  assert.equal(titles.gpt2Small, "768 wide, 12 heads of 64, context 1024");
  for (const p of presetsOf(lab)) {
    if (typeof S.presetTitles[p.key] === "function") continue;
    const call = lab.describe(p.className, Object.fromEntries(Object.entries(lab.parseCall(titles[p.key].split(/ on |: /)[0]).config))).pythonCall;
    assert.ok(titles[p.key].startsWith(`${call}`) && call.startsWith(`${p.className}(`), `${p.key}: ${titles[p.key]}`);
  }
  // the strings table restates no call: only the words the call does not say
  const restated = Object.entries(S.presetTitles).filter(([, t]) => typeof t === "string" && /\b[A-Z]\w*\(/.test(t));
  assert.deepEqual(restated, []);
});
