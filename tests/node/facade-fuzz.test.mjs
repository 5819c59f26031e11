// The facade's argument handling: every public call answers with an AttentionError carrying a documented code, never a raw
// error, whatever it is given: random argument kinds per parameter (getters and Proxies that throw,
// Symbols, BigInts, typed arrays with an own `length`, detached buffers, huge array-likes, disposed
// modules, ...) over 20,000+ calls. Afterwards the WASM heap is flat and the library still gives
// the same bits for a valid forward. The documented codes are the `ErrorCode` union of the .d.ts
// (generated from core/include/attention_lab/error_codes.hpp), less the page's own codes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadAttentionLab, AttentionError } from "attention-lab";
import { collectGarbage, random, sameBits } from "./helpers.mjs";
import { gpt2File } from "../gpt2-files.mjs";
import { BEGIN, END, readTable } from "../../scripts/error-codes.mjs";

const lab = await loadAttentionLab();
const dts = readFileSync(new URL("../../web/lib/attention-lab.d.ts", import.meta.url), "utf8");
const union = dts.slice(dts.indexOf(BEGIN), dts.indexOf(END));
const PAGE_ONLY = new Set(readTable().codes.filter((c) => c.group === "page").map((c) => c.code)); // the library never raises these
const DOCUMENTED = new Set([...union.matchAll(/\| "([a-z0-9_]+)"/g)].map((m) => m[1]).filter((code) => !PAGE_ONLY.has(code)));
const checkpoint = readFileSync(new URL("../fixtures/checkpoints/gpt2_d4_h2.safetensors", import.meta.url));
// a whole GPT-2 of width 8, 1 block, 16 positions and 64 tokens (GPT-2's layout; quick to run)
const wholeModel = gpt2File(lab, { seed: 5, n_embd: 8, n_layer: 1, n_ctx: 16, vocab_size: 64, dtype: "F16" });

function detached() {
  const b = new ArrayBuffer(72);
  structuredClone(b, { transfer: [b] });
  return b;
}

/** A Float32Array of 18 values whose buffer was then transferred away. */
function detachedFloats() {
  const f = new Float32Array(18);
  structuredClone(f.buffer, { transfer: [f.buffer] });
  return f;
}

const throwing = { get d_in() { throw new Error("getter"); }, get shape() { throw new Error("getter"); }, get layer() { throw new Error("getter"); } };
const trap = () => { throw new Error("trap"); };
const hostileProxy = new Proxy({}, { get: trap, ownKeys: trap, has: trap, getOwnPropertyDescriptor: trap, getPrototypeOf: trap });
const lyingLength = new Float32Array(6);
Object.defineProperty(lyingLength, "length", { value: 1e9 });
const disposedModule = lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 });
disposedModule.dispose();
const disposedGenerator = lab.manualSeed(1);
disposedGenerator.dispose();

/** What any parameter may receive. Functions make a fresh value each time (modules, Blobs). */
const VALUES = [
  undefined, null, 0, -1, 0.5, 3, 6, NaN, Infinity, 2 ** 53, 1n, Symbol("s"), "", "SelfAttention_v1", "MultiHeadAttention",
  "CausalAttention", "stacked", "1", "W_query.weight", true, [], [1, 2], [6, 3], [1, 6, 3], [2 ** 40, 2 ** 40], {}, throwing, hostileProxy,
  new Proxy({ d_in: 3, d_out: 2 }, {}), { d_in: 3, d_out: 2 }, { d_in: 3, d_out: 2, context_length: 6, dropout: 0.5, num_heads: 2 },
  { d_in: 3, get d_out() { throw new Error("getter"); } }, () => lab.bookTokens(), { shape: [2, 3], data: lyingLength },
  { shape: [1, 3], data: { length: 2 ** 27 } }, { shape: [2, 3], data: [1, 2, 3, 4, 5, "6"] }, { shape: [6, 3], data: new BigInt64Array(18) },
  { shape: ["6", 3], data: new Float32Array(18) }, () => ({ shape: [6, 3], data: detachedFloats() }), () => ({ W_query: { copy: true, transpose: true } }),
  { W_query: { get copy() { throw new Error("getter"); } } }, { training: false, trace: true }, { training: true }, { layer: 0.5 }, { layer: "1" },
  { layer: 1, num_heads: 2 }, { num_heads: 2 }, { generator: {} }, { layout: 5 }, { layout: "interleaved" }, { tokenIds: [1, 2, 3] },
  { tokenIds: { length: 2 ** 31 } }, { inputShape: [6, 3], training: false }, () => lab.manualSeed(7), () => disposedGenerator, () => disposedModule,
  () => lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 }), () => lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.5, num_heads: 2 }),
  () => lab.create("MultiHeadAttentionWrapper", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }),
  () => detached(), () => { const u = new Uint8Array(8); structuredClone(u.buffer, { transfer: [u.buffer] }); return u; }, () => checkpoint.buffer.slice(checkpoint.byteOffset, checkpoint.byteOffset + checkpoint.length),
  () => new Blob([checkpoint]), () => new Blob([new Uint8Array(40)]), () => [{ name: "W_query", shape: [2, 3], data: new Float32Array(6) }],
  () => lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 }).parameters(), function named() {}, new Date(0), /re/,
  () => wholeModel, () => new Blob([wholeModel]), [0, 63, 5], [64], { signal: AbortSignal.abort() }, { onProgress: trap }, { signal: hostileProxy },
  // run and generate options: in and out of range, of the wrong kind, callbacks that throw, signals
  { maxNewTokens: 2 }, { maxNewTokens: 0 }, { maxNewTokens: 2.5 }, { maxNewTokens: "2" }, { maxNewTokens: 2, cache: false }, { maxNewTokens: 2, resident: true },
  { temperature: -1 }, { temperature: NaN }, { temperature: 1.5, topK: 3 }, { temperature: 1, generator: {} }, () => ({ temperature: 1, generator: lab.manualSeed(3) }),
  { topK: 0 }, { topK: 1e9 }, { eosId: 63 }, { eosId: -1 }, { cache: "yes" }, { resident: 1 }, { onToken: 5 }, { onToken: trap, maxNewTokens: 2 }, { onProgress: 5 },
  { onProgress: () => {} }, { signal: { aborted: true } }, { signal: { get aborted() { throw new Error("getter"); } } }, () => ({ signal: new AbortController().signal }),
  { get maxNewTokens() { throw new Error("getter"); } }, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
];

/** The public calls and how many arguments each takes. */
const CALLS = {
  slots: (a) => lab.slots(a[0]),
  parseCall: (a) => lab.parseCall(a[0]),
  check: (a) => lab.check(a[0], a[1], a[2]),
  describe: (a) => lab.describe(a[0], a[1]),
  manualSeed: (a) => lab.manualSeed(a[0]),
  create: (a) => lab.create(a[0], a[1], a[2]),
  copyWeights: (a) => lab.copyWeights(a[0], a[1], a[2], a[3]),
  loadCheckpoint: (a) => lab.loadCheckpoint(a[0], a[1]),
  checkpointInput: (a) => lab.checkpointInput(a[0], a[1]),
  equivalentConfig: (a) => lab.equivalentConfig(a[0], a[1]),
  convert: (a) => lab.convert(a[0], a[1]),
  compare: (a) => lab.compare(a[0], a[1], a[2]),
  estimateBytes: (a) => lab.estimateBytes(a[0], a[1], a[2], a[3]),
  fromParameters: (a) => lab.fromParameters(a[0], a[1], a[2], a[3]),
  copyCode: (a) => lab.copyCode(a[0], a[1], a[2]),
  sentenceTokens: (a) => lab.sentenceTokens(a[0], a[1], a[2]),
  seededTokens: (a) => lab.seededTokens(a[0], a[1], a[2]),
  inputShape: (a) => lab.inputShape(a[0], a[1], a[2], a[3]),
  forward: (a, m) => m.forward(a[0], a[1]),
  setParameter: (a, m) => m.setParameter(a[0], a[1]),
  parameters: (_a, m) => m.parameters(),
  rand: (a, _m, g) => g.rand(a[0]),
  dropout: (a, _m, g) => g.dropout(a[0], a[1]),
  loadGPT2: async (a) => (await lab.loadGPT2(a[0], a[1])).dispose(),
  gpt2Run: (a) => withModel((model) => model.run(a[0], a[1])),
  gpt2AttentionInput: (a) => withModel((model) => model.attentionInput(a[0], a[1], a[2])),
  gpt2Estimate: (a) => withModel((model) => model.estimateBytes(a[0])),
  // on one model kept open: these must return a promise whatever they are given (never throw at the call)
  modelRun: (a) => sharedModel.run(a[0], a[1]),
  modelGenerate: (a) => sharedModel.generate(a[0], a[1]),
  modelAttentionInput: (a) => sharedModel.attentionInput(a[0], a[1], a[2]),
};
/** The calls whose answer is a promise: a bad argument rejects it, never throws synchronously. */
const MUST_REJECT = new Set(["loadCheckpoint", "checkpointInput", "modelRun", "modelGenerate", "modelAttentionInput"]);
const sharedModel = await lab.loadGPT2(wholeModel, { num_heads: 2 });

/** Runs `use` on a freshly opened whole model, then frees it. */
async function withModel(use) {
  const model = await lab.loadGPT2(wholeModel, { num_heads: 2 });
  try {
    return await use(model);
  } finally {
    model.dispose();
  }
}
const NEVER_THROW = new Set(["parseCall", "check", "describe", "inputShape"]);

async function fuzz(rounds, seed) {
  const pick = random(seed);
  const names = Object.keys(CALLS);
  const seen = new Map();
  let calls = 0;
  for (let i = 0; i < rounds; i++) {
    const name = names[pick(names.length)];
    const args = Array.from({ length: 4 }, () => {
      const v = VALUES[pick(VALUES.length)];
      return typeof v === "function" && v.name !== "named" ? v() : v;
    });
    const m = pick(4) === 0 ? disposedModule : lab.create("SelfAttention_v2", { d_in: 3, d_out: 2 });
    const g = pick(4) === 0 ? disposedGenerator : lab.manualSeed(pick(100));
    let error = null;
    let returned = false;
    try {
      const r = CALLS[name](args, m, g);
      returned = true;
      if (MUST_REJECT.has(name)) assert.ok(r instanceof Promise, `${name} returned ${typeof r}, not a promise`);
      if (r instanceof Promise) await r;
    } catch (err) {
      error = err;
    }
    calls++;
    if (error === null) continue;
    const what = `${name}(${args.map((a) => typeof a).join(", ")}) threw ${error?.name}: ${error?.message}`;
    assert.ok(returned || !MUST_REJECT.has(name), `${name} threw synchronously instead of rejecting: ${what}`);
    assert.ok(error instanceof AttentionError, `raw error: ${what}\n${error?.stack}`);
    assert.ok(DOCUMENTED.has(error.code), `undocumented code '${error.code}': ${what}`);
    assert.ok(error.code !== "internal" && error.code !== "out_of_memory", what);
    assert.ok(!NEVER_THROW.has(name), `${name} must not throw: ${what}`);
    assert.equal(typeof error.message, "string");
    seen.set(error.code, (seen.get(error.code) ?? 0) + 1);
  }
  return { calls, seen };
}

test("20,000 calls with random argument kinds: every throw is an AttentionError with a documented code; heap and handles flat; same bits after", async () => {
  assert.ok(DOCUMENTED.size >= 60, `the .d.ts lists ${DOCUMENTED.size} codes`);
  const x = { shape: [2, 6, 3], data: new Float32Array([...lab.bookTokens().data, ...lab.bookTokens().data]) };
  const reference = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }).forward(x).output;
  await fuzz(2000, 1); // warm-up: the allocator and the handle table reach their working size
  await collectGarbage();
  const heap = lab.heapInUse();
  const handles = lab.handlesInUse();
  const { calls, seen } = await fuzz(20000, 2);
  await collectGarbage();
  assert.ok(calls >= 20000);
  assert.ok(seen.size >= 15, `only ${seen.size} codes were seen: ${[...seen.keys()]}`);
  for (const code of ["unreadable_argument", "bad_options", "tensor_size", "checkpoint_source", "disposed", "seed", "generate_option", "cancelled"]) assert.ok(seen.has(code), `never saw ${code}: ${JSON.stringify([...seen])}`);
  assert.equal(lab.handlesInUse(), handles, "every module and generator made by the calls was released");
  assert.ok(lab.heapInUse() <= heap + 64 * 1024, `heap in use grew from ${heap} to ${lab.heapInUse()} bytes`);
  const after = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }).forward(x).output;
  assert.ok(sameBits(after.data, reference.data));
});

test("the named argument cases each give their AttentionError, and check never throws", async () => {
  const code = (f) => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof AttentionError, String(e));
      return e.code;
    }
    return "none";
  };
  const rejected = async (p) => {
    try {
      await p;
    } catch (e) {
      assert.ok(e instanceof AttentionError, String(e));
      return e.code;
    }
    return "none";
  };
  const m = lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 });
  // a config whose getter throws, a Proxy, a copy plan with a throwing getter; 120,000 of them leave
  // the library working (they once leaked WASM stack until the module died after about 109,000)
  for (let i = 0; i < 120000; i++) lab.check("SelfAttention_v1", { d_in: 3, get d_out() { throw new Error(); } });
  assert.equal(lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 }).forward(lab.bookTokens()).output.shape.join(), "6,2");
  assert.equal(code(() => lab.create("SelfAttention_v1", { d_in: 3, get d_out() { throw new Error(); } })), "unreadable_argument");
  assert.equal(lab.check("SelfAttention_v1", { d_in: 3, get d_out() { throw new Error(); } })[0].code, "unreadable_argument");
  assert.equal(lab.check("SelfAttention_v1", hostileProxy)[0].code, "unreadable_argument");
  assert.equal(code(() => lab.copyWeights(m, m, { W_query: { get copy() { throw new Error(); } } })), "unreadable_argument");
  // a Float32Array with an own length: its real length counts
  assert.equal(code(() => m.forward({ shape: [2, 3], data: lyingLength })), "none");
  assert.equal(code(() => m.forward({ shape: [1e9, 1], data: lyingLength })), "tensor_size");
  // a String object is its string; a layout of 5 is refused by name
  assert.equal(lab.create(new String("SelfAttention_v1"), { d_in: 3, d_out: 2 }).className, "SelfAttention_v1");
  assert.equal(code(() => lab.convert(m, { layout: 5 })), "convert_layout");
  // null options are no options
  assert.equal(m.forward(lab.bookTokens(), null).output.shape.join(), "6,2");
  assert.equal(await rejected(lab.loadCheckpoint(checkpoint, null)), "checkpoint_num_heads");
  assert.equal(await rejected(lab.checkpointInput(checkpoint, null)), "input_empty");
  // a generator that manualSeed did not make
  assert.equal(code(() => lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 }, { generator: {} })), "generator");
  assert.equal(code(() => lab.create("SelfAttention_v1", { d_in: 3, d_out: 2 }, { generator: hostileProxy })), "generator");
  // a detached buffer, BigInt and Symbol seeds
  assert.equal(await rejected(lab.loadCheckpoint(detached())), "checkpoint_source");
  assert.equal(code(() => lab.manualSeed(1n)), "seed");
  assert.equal(code(() => lab.manualSeed(Symbol("s"))), "seed");
  // {shape: [1, 3], data: {length: 2 ** 27}} is refused at once, before anything is copied
  // (no element is read: a Proxy counts the reads)
  let reads = 0;
  const counted = (length) => new Proxy({ length }, { get: (t, k) => { if (typeof k === "string" && /^\d+$/.test(k)) reads += 1; return t[k]; } });
  assert.equal(code(() => m.forward({ shape: [1, 3], data: counted(2 ** 27) })), "tensor_size");
  assert.equal(code(() => m.forward({ shape: [1, 3], data: counted(2 ** 50) })), "tensor_size");
  assert.equal(reads, 0, "no value was read before the refusal");
  // checkpointInput takes the layer by loadCheckpoint's rule
  for (const layer of [0.5, "1", -1]) {
    assert.equal(await rejected(lab.checkpointInput(checkpoint, { tokenIds: [1, 2], layer })), "checkpoint_layer");
    assert.equal(await rejected(lab.loadCheckpoint(checkpoint, { num_heads: 2, layer })), "checkpoint_layer");
  }
  assert.deepEqual((await lab.checkpointInput(checkpoint, { tokenIds: [1, 2], layer: 0 })).shape, [1, 2, 4]);
  assert.equal(await rejected(lab.checkpointInput(checkpoint, { tokenIds: [1, 2], layer: 1, num_heads: 2 })), "checkpoint_missing_key"); // layer 1 needs block 0's MLP
});
