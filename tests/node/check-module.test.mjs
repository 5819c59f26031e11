// lab.checkModule over the real WASM core, on readers' modules written in PyTorch with each catalogue
// mistake (tests/fixtures/generate_check_fixtures.py): the one mistake named as the one that explains,
// the first divergent stage when stages are given, the correct module agreeing, a mistake outside the
// catalogue with no cause claimed; and the file's problems refused by name.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab, AttentionError } from "attention-lab";

const lab = await loadAttentionLab();
const { cases } = JSON.parse(readFileSync(new URL("../fixtures/check_module_fixtures.json", import.meta.url), "utf8"));

/** A fixture tensor ({shape, data} with "nan"/"inf"/"-inf" strings) as a TensorLike. */
const tensor = (t) => ({ shape: t.shape, data: Float32Array.from(t.data, (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v)) });

/** What the page's snippet saves, as lab.checkModule takes it: the state dict as an object of name -> tensor. */
function fileOf(c) {
  const stateDict = Object.fromEntries(c.state_dict.map((t) => [t.name, tensor(t)]));
  const file = { call: c.call, stateDict, x: tensor(c.x), output: tensor(c.output) };
  if (c.stages) file.stages = Object.fromEntries(Object.entries(c.stages).map(([id, t]) => [id, tensor(t)]));
  if (c.seed !== undefined) file.seed = c.seed;  // torch.manual_seed(123) right before the forward, training mode
  return file;
}
const byName = (name) => cases.find((c) => c.name === name);
const explaining = (report) => report.causes.filter((c) => c.explains).map((c) => c.id);

/** The AttentionError `f` throws, as {code, slot}, with its message and hint. */
function refusal(f) {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof AttentionError, String(e));
    return { code: e.code, slot: e.slot, message: e.message, hint: e.hint };
  }
  return null;
}

test("each catalogue mistake, with and without stages and qkv_bias, is the one cause that explains, at the first divergent stage", () => {
  // MultiHeadAttention and CausalAttention here (11 + 6, and the 2 seeded dropout mistakes of each, two
  // configurations each); the lab's other classes in check-classes.test.mjs
  const mistakes = cases.filter((c) => c.expect.explains !== null && /^(MultiHeadAttention|CausalAttention)\(/.test(c.call));
  assert.equal(mistakes.length, 42);
  for (const c of mistakes) {
    const r = lab.checkModule(fileOf(c));
    assert.equal(r.agree, false, c.name);
    assert.ok(r.maxAbsDiff > 1e-5, c.name);
    assert.equal(r.firstStage, c.expect.first_stage, c.name);
    assert.deepEqual(explaining(r), [c.expect.explains], c.name);
    const cause = r.causes.find((x) => x.id === c.expect.explains);
    assert.ok(cause.line.length > 0 && cause.fix.length > 0 && cause.source.includes("#"), c.name);
  }
});

test("the correct module agrees; a mistake outside the catalogue disagrees with no cause claimed", () => {
  const right = lab.checkModule(fileOf(byName("MultiHeadAttention correct qkv_bias=False with stages")));
  assert.equal(right.agree, true);
  assert.equal(right.firstStage, null);
  assert.ok(right.maxAbsDiff <= 1e-6, String(right.maxAbsDiff));
  assert.deepEqual(explaining(right), []);
  assert.deepEqual(right.causes.map((c) => c.id), ["scale_d_out", "no_scale", "scale_after_softmax", "mask_diagonal", "mask_discarded", "softmax_dim", "heads_view_no_transpose",
    "merge_view_no_transpose", "query_from_key", "missing_out_proj", "linear_no_transpose"]);  // every entry but mask_not_passed (PyTorch's attention call)
  const offset = lab.checkModule(fileOf(byName("MultiHeadAttention mask_offset qkv_bias=False with stages")));
  assert.deepEqual([offset.agree, offset.firstStage, explaining(offset)], [false, "attn_weights", []]);
  assert.match(offset.notes[0], /^mask\[0, 1\] is 0, the book's torch\.triu\(torch\.ones\(6, 6\), diagonal=1\) has 1/);
  const twice = lab.checkModule(fileOf(byName("MultiHeadAttention bias_twice qkv_bias=True")));
  assert.deepEqual([twice.agree, twice.firstStage, explaining(twice)], [false, "output", []]);
});

test("with the seed the dropout stream is reproduced: the seeded correct modules agree, dropout applied twice is explained by nothing", () => {
  for (const name of ["MultiHeadAttention correct seed=123 qkv_bias=False with stages", "CausalAttention correct seed=123 qkv_bias=True"]) {
    const r = lab.checkModule(fileOf(byName(name)));
    assert.deepEqual([r.agree, r.firstStage, explaining(r)], [true, null, []], name);
    assert.deepEqual(r.causes.slice(-2).map((c) => c.id), ["dropout_missing", "dropout_on_scores"], name);
  }
  const twice = lab.checkModule(fileOf(byName("MultiHeadAttention dropout_twice seed=123 qkv_bias=False with stages")));
  assert.deepEqual([twice.agree, twice.firstStage, explaining(twice)], [false, "attn_weights", []]);
  const { seed: _seed, ...eval_ } = fileOf(byName("MultiHeadAttention correct seed=123 qkv_bias=True"));
  assert.equal(lab.checkModule(eval_).agree, false, "without the seed the book's forward runs in eval mode");
  assert.equal(lab.checkModule({ ...eval_, seed: 124 }).agree, false, "another seed, another stream");
  // dropout 0 with a seed: training with p = 0 is eval, and the dropout entries do not apply
  const zero = lab.checkModule({ ...fileOf(byName("MultiHeadAttention correct qkv_bias=True")), seed: 123 });
  assert.deepEqual([zero.agree, zero.causes.length], [true, 11]);
});

test("dropout_on_scores: a dropped masked -inf is NaN (-inf * 0), so whole rows are NaN, and only that variant has them there", () => {
  const c = byName("MultiHeadAttention dropout_on_scores seed=123 qkv_bias=True");
  const file = fileOf(c);
  assert.ok(file.output.data.some(Number.isNaN));
  const r = lab.checkModule(file);
  assert.equal(r.maxAbsDiff, Infinity);
  assert.deepEqual(explaining(r), ["dropout_on_scores"]);
});

test("a module left in training mode, checked without the seed: no cause claimed, and a note says how to check it with the seed", () => {
  const r = lab.checkModule(fileOf(byName("MultiHeadAttention eval_forgotten qkv_bias=False with stages")));
  assert.deepEqual([r.agree, r.firstStage, explaining(r)], [false, "attn_weights", []]);
  assert.equal(r.causes.length, 11);
  assert.equal(r.notes.length, 1);
  assert.match(r.notes[0], /^dropout = 0\.1 may be acting/);
  assert.match(r.notes[0], /torch\.manual_seed\(123\) right before mha\(batch\) and save "seed": 123 in the check file/);
  assert.deepEqual(lab.checkModule(fileOf(byName("MultiHeadAttention scale_d_out qkv_bias=True"))).notes, [], "dropout 0: no such note");
});

test("a seed outside lab.seedRange, or not a whole number, is refused with the seed rule", () => {
  const good = fileOf(byName("MultiHeadAttention correct seed=123 qkv_bias=True"));
  for (const seed of [lab.seedRange.highest + 2, 1.5, NaN, "123", true]) {
    const r = refusal(() => lab.checkModule({ ...good, seed }));
    assert.deepEqual([r?.code, r?.slot], ["seed", "seed"], String(seed));
    assert.match(r.hint, /torch\.manual_seed takes an int/);
  }
  assert.match(refusal(() => lab.checkModule({ ...good, seed: 2 ** 60 })).message, /from -9007199254740991 to 9007199254740991/);
  assert.equal(lab.checkModule({ ...good, seed: lab.seedRange.highest }).agree, false);  // in range: checked (another stream)
  assert.equal(lab.checkModule({ ...good, seed: null }).agree, false);  // null: eval mode
});

test("the diagonal mistake's NaN row counts as agreeing only where the book's variant has NaN", () => {
  const c = byName("MultiHeadAttention mask_diagonal qkv_bias=True");
  const file = fileOf(c);
  assert.ok(Number.isNaN(file.output.data[0]));  // token 0 sees no key: its row is NaN
  assert.equal(lab.checkModule(file).maxAbsDiff, Infinity);
  file.output.data.fill(0, 0, 4);  // the NaN row replaced by zeros: no variant has that
  assert.deepEqual(explaining(lab.checkModule(file)), []);
});

test("the file's problems are refused by name, with the copy rule that fixes a key", () => {
  const c = byName("MultiHeadAttention correct qkv_bias=True");
  const good = fileOf(c);
  assert.deepEqual(refusal(() => lab.checkModule({ ...good, state_dict: good.stateDict })).slot, "state_dict");
  assert.equal(refusal(() => lab.checkModule({ ...good, state_dict: good.stateDict })).message, 'lab.checkModule\'s file has no field "state_dict": did you mean stateDict?');
  assert.equal(refusal(() => lab.checkModule(null)).code, "bad_options");
  const syntax = refusal(() => lab.checkModule({ ...good, call: "MultiHeadAttention(4, 4, 6, 0.0, 3, qkv_bias=True)" }));
  assert.deepEqual([syntax.code, syntax.slot], ["heads_divisibility", "d_out"]);
  const { "W_key.weight": key, ...rest } = good.stateDict;
  const flipped = { ...rest, "W_key.weight": key, "out_proj.weight": { shape: [4, 4], data: new Float32Array(16) }, "W_value.bias": { shape: [1, 4], data: new Float32Array(4) } };
  const shape = refusal(() => lab.checkModule({ ...good, stateDict: flipped }));
  assert.deepEqual([shape.code, shape.slot], ["parameter_shape", "W_value.bias"]);
  assert.match(shape.message, /W_value\.bias has shape \(1, 4\); W_value\.bias of this call has \(4,\)/);
  const missing = refusal(() => lab.checkModule({ ...good, stateDict: rest }));
  assert.deepEqual([missing.code, missing.slot], ["missing_parameter", "W_key.weight"]);
  const stage = refusal(() => lab.checkModule({ ...good, stages: { context_vec: { shape: [2, 2, 5, 2], data: new Float32Array(40) } } }));
  assert.deepEqual([stage.code, stage.slot], ["check_tensor", "context_vec"]);
  assert.match(stage.message, /gives \(2, 5, 4\) \(b, num_tokens, num_heads \* head_dim\)/);
  const size = refusal(() => lab.checkModule({ ...good, output: { shape: [2, 5, 4], data: new Float32Array(3) } }));
  assert.deepEqual([size.code, size.slot], ["tensor_size", "output"]);
});

test("v1's matrix given to SelfAttention_v2 is named with the transpose that converts it", () => {
  const x = lab.bookTokens();
  const m = { shape: [3, 2], data: new Float32Array(6) };
  const r = refusal(() => lab.checkModule({ call: "SelfAttention_v2(3, 2)", stateDict: { W_query: m, W_key: m, W_value: m }, x, output: { shape: [6, 2], data: new Float32Array(12) } }));
  assert.deepEqual([r.code, r.slot], ["unknown_parameter", "W_query"]);
  assert.equal(r.hint, 'Copy it transposed: state_dict["W_query.weight"] = state_dict.pop("W_query").T');
});

test("files of every wrong kind give an AttentionError, never another throw, and leave the heap flat", () => {
  const trap = () => { throw new Error("trap"); };
  const hostile = new Proxy({}, { get: trap, ownKeys: trap, has: trap, getOwnPropertyDescriptor: trap, getPrototypeOf: trap });
  const good = fileOf(byName("CausalAttention correct qkv_bias=True"));
  const FIELD_VALUES = [undefined, null, 5, "", "CausalAttention(4, 3, 6, 0.0)", [], [null], {}, hostile, { get shape() { throw new Error("getter"); } },
    { shape: [2, 5, 3], data: new Float32Array(29) }, { shape: [2, 5, 3], data: new Float32Array(30) }, { attn_scores: 1 }, { mask: good.stateDict.mask }];
  const fields = ["call", "stateDict", "x", "output", "stages", "seed"];
  const codes = new Map();
  const before = lab.heapInUse();
  for (let i = 0; i < 600; i++) {
    const file = { ...good };
    const field = fields[i % fields.length];
    file[field] = FIELD_VALUES[Math.floor(i / fields.length) % FIELD_VALUES.length];
    try {
      lab.checkModule(file);
    } catch (e) {
      assert.ok(e instanceof AttentionError, `${field}: ${e}`);
      codes.set(e.code, (codes.get(e.code) ?? 0) + 1);
    }
  }
  for (const code of ["empty", "bad_options", "unreadable_argument", "tensor_shape", "tensor_size", "missing_parameter", "check_tensor", "input_width", "seed"]) assert.ok(codes.has(code), `${code}: ${[...codes.keys()]}`);
  assert.ok(lab.heapInUse() <= before + 1024 * 1024, `${lab.heapInUse() - before} bytes more`);
});
