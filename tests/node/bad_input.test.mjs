// The shared bad-input table (tests/fixtures/bad_inputs.json) through the public facade: every case
// throws (or reports) an AttentionError with the exact code and slot, and nothing else ever escapes.
// tests/native/bad_input_test.cpp runs the same table through the core.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab, AttentionError } from "attention-lab";

const lab = await loadAttentionLab();
const table = JSON.parse(readFileSync(new URL("../fixtures/bad_inputs.json", import.meta.url), "utf8"));
const fixtureDir = new URL("../fixtures/checkpoints/", import.meta.url);

/** A string, or {concat: [string | {repeat, times}]}: the 10 MB inputs are built here, not stored. */
function textOf(rule) {
  if (typeof rule === "string") return rule;
  return rule.concat.map((p) => (typeof p === "string" ? p : p.repeat.repeat(p.times))).join("");
}

const SPECIAL = { nan: NaN, inf: Infinity, "-inf": -Infinity };
const special = (v) => (typeof v === "string" && v in SPECIAL ? SPECIAL[v] : v);

/** Config and option values: {$: "nan"} is NaN; everything else is passed as JSON gave it. */
function valuesOf(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) {
    Object.defineProperty(out, k, { value: v !== null && typeof v === "object" && "$" in v ? SPECIAL[v.$] : v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** {shape, data} or {shape, fill, length, set}; shapes and data are passed through as given (bad on purpose). */
function tensorOf(j) {
  if ("data" in j) return { shape: j.shape, data: Array.isArray(j.data) ? j.data.map(special) : j.data };
  const length = j.length ?? j.shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(length).fill(special(j.fill));
  for (const [i, v] of j.set ?? []) data[i] = special(v);
  return { shape: j.shape, data };
}

function fileOf(f) {
  if ("base64" in f) return new Uint8Array(Buffer.from(f.base64, "base64"));
  if ("fixture" in f) {
    const bytes = new Uint8Array(readFileSync(new URL(f.fixture, fixtureDir)));
    return "truncate" in f ? bytes.slice(0, f.truncate) : bytes;
  }
  const header = "header_json" in f ? Buffer.from(JSON.stringify(f.header_json)) : "header_base64" in f ? Buffer.from(f.header_base64, "base64") : Buffer.from(textOf(f.header));
  const bytes = new Uint8Array(8 + header.length + (f.data_bytes ?? 0));
  new DataView(bytes.buffer).setBigUint64(0, BigInt(f.length_field ?? header.length), true);
  bytes.set(header, 8);
  return bytes;
}

function firstError(diagnostics) {
  const d = diagnostics.find((d) => d.severity === "error");
  return d ? { code: d.code, slot: d.slots[0] ?? "" } : { code: null, slot: "" };
}

function outcome(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof AttentionError, `not an AttentionError: ${e?.stack ?? e}`);
    return { code: e.code, slot: e.slot };
  }
  return { code: null, slot: "" };
}

async function asyncOutcome(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof AttentionError, `not an AttentionError: ${e?.stack ?? e}`);
    return { code: e.code, slot: e.slot };
  }
  return { code: null, slot: "" };
}

const build = (spec) => lab.create(spec.className, valuesOf(spec.config));

const run = {
  call: (c) => firstError(lab.parseCall(textOf(c.text)).diagnostics),
  config: (c) => {
    const config = valuesOf(c.config);
    const checked = firstError(lab.check(c.className, config, c.inputShape ? { inputShape: c.inputShape } : {}));
    if (!c.inputShape) assert.deepEqual(outcome(() => lab.create(c.className, config)), checked, "create throws what check reports first");
    return checked;
  },
  forward: (c) => {
    const m = build(c);
    return outcome(() => m.forward(tensorOf(c.input), { training: Boolean(c.training), trace: Boolean(c.trace) }));
  },
  copy: (c) => {
    const from = build(c.from);
    const to = build(c.to);
    const before = to.parameters();
    const got = outcome(() => lab.copyWeights(from, to, c.plan, c.tokens ? { tokens: tensorOf(c.tokens) } : {}));
    assert.deepEqual(to.parameters(), before, "the target is left as it was");
    return got;
  },
  checkpoint: async (c) => {
    const options = valuesOf(c.options ?? {});
    if (c.into) options.into = build(c.into);
    return asyncOutcome(lab.loadCheckpoint(fileOf(c.file), options));
  },
};

test("the table holds at least 60 bad inputs across every kind", () => {
  const bad = table.cases.filter((c) => c.code !== null);
  assert.ok(bad.length >= 60, `${bad.length} cases`);
  assert.deepEqual([...new Set(table.cases.map((c) => c.kind))].sort(), ["call", "checkpoint", "config", "copy", "forward"]);
  assert.equal(new Set(table.cases.map((c) => c.id)).size, table.cases.length, "ids are unique");
});

for (const c of table.cases) {
  if (c.only === "native") continue;
  test(`${c.id}: ${c.code ?? "no error (control)"}${c.slot ? ` on ${c.slot}` : ""}`, { timeout: 20000 }, async () => {
    const got = await run[c.kind](c);
    assert.deepEqual(got, { code: c.code, slot: c.slot });
  });
}

test("after every bad input the library still works: a valid create + forward", () => {
  const m = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 });
  const { output } = m.forward({ shape: [1, 6, 3], data: lab.bookTokens().data }, { training: false });
  assert.deepEqual(output.shape, [1, 6, 2]);
  assert.ok(output.data.every(Number.isFinite));
});

test("fromParameters: a parameter without a string name is an AttentionError, not embind's BindingError", () => {
  const config = { d_in: 3, d_out: 2 };
  for (const params of [[{ shape: [3, 2], data: new Float32Array(6) }], [{ name: 5, shape: [3, 2], data: new Float32Array(6) }], [null]]) {
    const got = outcome(() => lab.fromParameters("SelfAttention_v1", config, params));
    assert.equal(got.code, "unknown_parameter");
  }
});
