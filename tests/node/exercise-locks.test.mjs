// The rules behind an exercise's locks, over the real core (the browser paths are in
// tests/browser/exercise-locks.test.mjs): a call never changes what `locked` holds, from any class to
// any class; an incomplete call changes nothing; an accepted url-prefix can never spell another key.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab } from "attention-lab";
import { callPatch, currentConfig, initialState, slotsPatch } from "../../web/app/lab-model.js";
import { lockConflicts, urlKeys, urlPrefixProblem } from "../../web/app/url-state.js";
import { predictExample } from "../../web/app/format.js";

const lab = await loadAttentionLab();

/** The config the module gets (currentConfig), defaults filled in: a call may leave a default out. */
function configOf(s) {
  const config = currentConfig(lab, s);
  for (const spec of lab.slots(s.className)) if (config[spec.name] === undefined && spec.default !== undefined) config[spec.name] = spec.default;
  return config;
}

/** A state on `className` with its first preset's slots (or the start's). */
function stateOn(className) {
  const s = initialState();
  const preset = lab.classFacts(className).presets[0];
  return { ...s, ...slotsPatch(lab, className, { ...s.slotTexts, ...(preset?.slots ?? {}) }) };
}

test("a call from any class to any class keeps every locked slot: the config the module gets has the locked value", () => {
  let held = 0;
  for (const from of lab.classes) {
    for (const to of lab.classes) {
      const preset = lab.classFacts(to).presets[0];
      if (!preset) continue;
      const s = stateOn(from);
      const call = lab.describe(to, Object.fromEntries(lab.slots(to).filter((x) => preset.slots[x.name] !== undefined).map((x) => [x.name, Number(preset.slots[x.name]) || preset.slots[x.name]]))).pythonCall;
      if (!call) continue;
      for (const slot of lab.slots(to).map((x) => x.name)) {
        const kept = String(s.slotTexts[slot] ?? "").trim();
        const locked = new Set([slot]);
        const next = { ...s, ...callPatch(lab, s, call, locked) };
        assert.equal(next.className, to, `${call} from ${from}: the class is free`);
        assert.equal(String(next.slotTexts[slot] ?? "").trim(), kept, `${slot} locked, ${call} from ${from}`);
        const spec = lab.slots(to).find((x) => x.name === slot);
        const value = configOf(next)[slot];
        const expected = configOf({ ...next, parsed: null })[slot]; // the slots' own texts, read one by one
        assert.deepEqual(value, expected, `${slot} (${spec.type}) runs with the locked ${kept}, ${call} from ${from}`);
        held += next.held.length;
        for (const h of next.held) assert.deepEqual([h.name, h.kept, h.by], [slot, kept, "call"]);
        assert.equal(next.call, call, "the box keeps the text");
      }
    }
  }
  assert.ok(held > 50, `${held} calls asked a locked slot for another value`);
});

test("an incomplete call (each prefix of a call typed key by key) changes neither the class nor a slot", () => {
  const s = stateOn("SelfAttention_v2");
  const call = "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)";
  for (let n = 1; n < call.length; n++) {
    const next = { ...s, ...callPatch(lab, s, call.slice(0, n), new Set(["num_heads"])) };
    assert.equal(next.className, "SelfAttention_v2", call.slice(0, n));
    assert.deepEqual(next.slotTexts, s.slotTexts, call.slice(0, n));
    assert.deepEqual(configOf(next), configOf(s), call.slice(0, n));
    assert.ok(next.parsed.diagnostics.every((d) => !d.slots?.length), "only the call's own errors show, none at a slot");
  }
  const done = { ...s, ...callPatch(lab, s, call, new Set(["num_heads"])) };
  assert.equal(done.className, "MultiHeadAttentionWrapper");
  assert.deepEqual(configOf(done), { d_in: 3, d_out: 1, context_length: 6, dropout: 0, num_heads: 2, qkv_bias: false });
});

test("a locked class keeps the class and every slot against a call of another class, and says so", () => {
  const s = stateOn("MultiHeadAttentionWrapper");
  const next = { ...s, ...callPatch(lab, s, "CausalAttention(3, 4, 6, 0.0)", new Set(["class"]), "call-attr") };
  assert.equal(next.className, "MultiHeadAttentionWrapper");
  assert.deepEqual(next.slotTexts, s.slotTexts);
  assert.deepEqual(configOf(next), configOf(s));
  assert.deepEqual(next.held, [{ name: "class", kept: "MultiHeadAttentionWrapper", asked: "CausalAttention", by: "call-attr" }]);
});

test("lockConflicts names what a link asks of locked values, and nothing that agrees or is open", () => {
  const s = stateOn("MultiHeadAttention");
  const locked = new Set(["class", "num_heads", "seed", "mode"]);
  const read = { className: "CausalAttention", slotTexts: { num_heads: "4", d_out: "8" }, seed: " 123 ", training: false };
  assert.deepEqual(lockConflicts(read, s, locked, "url"), [
    { name: "class", kept: "MultiHeadAttention", asked: "CausalAttention", by: "url" },
    { name: "num_heads", kept: s.slotTexts.num_heads, asked: "4", by: "url" },
    { name: "mode", kept: "train", asked: "eval", by: "url" },
  ]);
  assert.deepEqual(lockConflicts({ slotTexts: { num_heads: s.slotTexts.num_heads } }, s, locked, "url"), []);
});

test("url-prefix: an accepted prefix never spells another widget's key (prefixed or not); num_ and ex1 are refused", () => {
  const keys = urlKeys(lab);
  assert.match(urlPrefixProblem("num_"), /^url-prefix="num_" is not used: .*\(num_ \+ tokens = num_tokens\)\. Try url-prefix="num-"\.$/);
  assert.match(urlPrefixProblem("ex1"), /Try url-prefix="ex1-"\.$/);
  assert.equal(urlPrefixProblem(""), "");
  assert.equal(urlPrefixProblem("ex1-"), "");
  // every prefix made of key pieces and separators: the accepted ones give keys no other prefix gives
  const pieces = ["", "num", "num_", "_", "-", ".", "ex", "ex-", "d_", "tokens", "x"];
  const prefixes = [...new Set(pieces.flatMap((a) => pieces.map((b) => a + b)))];
  const accepted = prefixes.filter((p) => urlPrefixProblem(p) === "");
  assert.ok(accepted.length > 10 && accepted.length < prefixes.length, `${accepted.length} of ${prefixes.length}`);
  const owner = new Map();
  for (const p of accepted) {
    for (const k of keys) {
      const full = p + k;
      assert.ok(!owner.has(full) || owner.get(full) === p, `${JSON.stringify(p)} + ${k} is also ${JSON.stringify(owner.get(full))}'s key`);
      owner.set(full, p);
    }
  }
});

test("the predict box's example is never the answer, nor its width", () => {
  for (const answer of [null, [2, 6, 2], [2, 6, 8], [6, 8], [1, 3, 6], [4, 5, 8]]) {
    const { shape, width } = predictExample(answer);
    if (answer) {
      assert.notEqual(shape, `(${answer.join(", ")})`);
      assert.notEqual(width, String(answer.at(-1)));
    }
  }
  assert.deepEqual(predictExample([2, 6, 2]), { shape: "(4, 5, 8)", width: "8" });
  assert.deepEqual(predictExample([2, 6, 8]), { shape: "(3, 7, 6)", width: "6" });
});
