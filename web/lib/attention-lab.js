// attention-lab: the library API (the one module that calls the raw WASM bindings).
// Types and docs: ./attention-lab.d.ts. The page, the widget and the tests use only this facade.
//
// Lifetimes: modules and generators live in WASM memory under numeric handles. Their parameters are
// written once (create, setParameter, fromParameters, loadCheckpoint, copyWeights) and a forward
// passes only its input. A FinalizationRegistry releases a handle when its JS object is
// garbage-collected, and `dispose()` releases it at once: nothing needs .delete().
//
// Every JS argument is read into plain values (numbers, strings, plain arrays, Float32Arrays) here,
// before the call into WASM, so no user code (a getter, a toString) runs inside a call.
import { unknownOption } from "./options.js";
import { heldResults } from "./held-results.js";
import { checkArguments } from "./check-module.js";
import { AttentionError, isArrayBuffer, isTrustedTypesRefusal, isTypedArray, reading, typedBuffer, typedByteLength, typedLength, typedName, typedOffset, valueText } from "./values.js";
import { loadCore } from "./load-core.js";

export { AttentionError, isTrustedTypesRefusal };

/** A core call's {ok, error, value} as its value; AttentionError when the core refused. */
function unwrap(result) {
  if (!result.ok) throw new AttentionError(result.error);
  return result.value;
}

/** A module's facts as the core states them ({className, config, pythonCall, headDim, outputWidth, outputWidthRule}). */
function moduleFacts(info) {
  return info.module;
}

/** A Setup's description, flat as describe gives it (null when the config is not valid). */
function flatDescription(d) {
  if (!d) return null;
  const { module: { className: _name, ...facts }, ...rest } = d;
  return { ...facts, ...rest };
}

/** AttentionError "seed" for a seed that is not a number (the core refuses numbers outside its range). */
function notASeed(seed) {
  return new AttentionError({ code: "seed", slot: "seed", message: `the seed must be a whole number, got ${valueText(seed)}`, hint: "torch.manual_seed takes an int, e.g. 123." });
}

/**
 * An optional option as the core reads it (NumberOption): given or not (null and undefined are not), a
 * number (its value) or true/false (value 1 or 0); anything else reaches the core as text.
 */
function numberOption(v) {
  const p = v === null || v === undefined ? undefined : plainValue(v);
  return { given: p !== undefined, number: typeof p === "number", boolean: typeof p === "boolean", value: typeof p === "number" ? p : p === true ? 1 : 0 };
}

/** The primitive inside a String, Number or Boolean object (read from its internal slot: no user code, no Proxy trap); undefined otherwise. */
function boxedValue(v) {
  for (const valueOf of [String.prototype.valueOf, Number.prototype.valueOf, Boolean.prototype.valueOf]) {
    try {
      return valueOf.call(v);
    } catch {
      // not that kind of box
    }
  }
  return undefined;
}

/** A string argument as a string: a string, a String object or a number/boolean; null when it is anything else. */
function plainString(v) {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  const boxed = v !== null && typeof v === "object" ? boxedValue(v) : undefined;
  return typeof boxed === "string" ? boxed : null;
}

/**
 * An options argument of the call `where` (a key of options.js's OPTION_NAMES, e.g. "model.generate")
 * as a plain object of its own enumerable values (read once, here): undefined and null give {};
 * anything else that is not an object is AttentionError "bad_options"; a name the call has no option
 * of (a misspelt "tempreature") is "unknown_option" with the nearest valid name, never ignored.
 * `what`: how its messages name the object (default `where`).
 */
function readOptions(options, where, what = where) {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object") {
    throw new AttentionError({ code: "bad_options", slot: where.slice(where.lastIndexOf(".") + 1), message: `the options of ${where} must be an object, got ${valueText(options)}`, hint: "Pass an object such as {training: false}, or nothing." });
  }
  const plain = reading(`${where} options`, () => ({ ...options }));
  const unknown = unknownOption(where, Object.keys(plain), what);
  if (unknown !== null) throw new AttentionError(unknown);
  return plain;
}

/** model.run's `attention` option as a plain string for the core, which checks it ("full" when absent). */
function attentionMode(v) {
  if (v === undefined || v === null) return "full";
  return typeof v === "string" ? v : `<${typeof v}>`;
}

/** A slot value as a plain value: numbers, strings, booleans, null stay; anything else becomes "<type>". */
function plainValue(v) {
  if (v === null || v === undefined || typeof v === "number" || typeof v === "string" || typeof v === "boolean") return v;
  const boxed = typeof v === "object" ? boxedValue(v) : undefined;
  return boxed !== undefined ? boxed : `<${typeof v}>`;
}

/** A config as a plain object of plain values (own enumerable keys, read once, here). */
function plainConfig(config) {
  if (config === null || typeof config !== "object") return {};
  return reading("config", () => {
    const out = {};
    // defineProperty: a key such as "__proto__" stays an own key that the core can name
    for (const key of Object.keys(config)) Object.defineProperty(out, key, { value: plainValue(config[key]), enumerable: true, writable: true, configurable: true });
    return out;
  });
}

/** A shape as a plain array: sizes that are not numbers become NaN, which the core refuses by name. */
function plainShape(shape, what = "shape") {
  return reading(what, () => {
    const length = Array.isArray(shape) ? shape.length : 0;
    if (length > 64) return [NaN];
    return Array.from({ length }, (_, i) => (typeof shape[i] === "number" ? shape[i] : NaN));
  });
}

/**
 * A copy plan {W_query: {copy, transpose}, ...} as plain entries [{name, copy, transpose, object}]; an
 * entry that is not an object is marked so the core names it, and a name an entry has not
 * ({tranpose: true}) is unknown_option naming the entry.
 */
function plainPlan(plan) {
  if (plan === null || typeof plan !== "object") return [];
  return reading("plan", () =>
    Object.keys(plan).map((name) => {
      const e = plan[name];
      const object = e !== null && typeof e === "object";
      const { copy, transpose } = object ? readOptions(e, "copy plan entry", `the copy plan entry ${name}`) : {};
      return { name, copy: copy === true, transpose: transpose === true, object };
    }));
}

/**
 * Reads a TensorLike into {shape: number[], data: Float32Array} (a fresh view or copy that nothing
 * outside can change); AttentionError on a bad tensor. Sizes are checked before anything is copied.
 */
function toTensor(t, what = "x") {
  if (t === null || typeof t !== "object") throw notATensor(what);
  const { shape: rawShape, data: rawData } = reading(what, () => ({ shape: t.shape, data: t.data }));
  if (!Array.isArray(rawShape) || rawData === null || rawData === undefined) throw notATensor(what);
  const shape = plainShape(rawShape, `${what}.shape`);
  const numel = shape.reduce((n, d) => n * d, 1);
  const typed = isTypedArray(rawData);
  const length = typed ? typedLength.call(rawData) : Array.isArray(rawData) ? rawData.length : reading(`${what}.data`, () => (typeof rawData === "object" && typeof rawData.length === "number" ? rawData.length : NaN));
  if (!(length === numel)) {
    const valid = shape.every((d) => Number.isInteger(d) && d >= 0);
    throw new AttentionError({
      code: valid ? "tensor_size" : "tensor_shape",
      slot: what,
      message: valid ? `${what} has shape (${shape.join(", ")}) (${numel} values) but data holds ${Number.isFinite(length) ? length : "no readable length"}` : `${what}.shape is not a list of sizes`,
      hint: valid ? "Give exactly as many values as the product of the shape, row-major." : "Sizes are whole numbers, 0 or more.",
    });
  }
  let data;
  if (typed && typedName.call(rawData) === "Float32Array") {
    data = new Float32Array(typedBuffer.call(rawData), typedOffset.call(rawData), length);  // a view: no copy, no own properties
  } else if (typed) {
    data = reading(`${what}.data`, () => new Float32Array(rawData));  // BigInt64Array throws here
  } else {
    data = reading(`${what}.data`, () => Float32Array.from({ length }, (_, i) => rawData[i]));
  }
  return { shape, data };
}

function notATensor(what) {
  return new AttentionError({
    code: "tensor_shape",
    slot: what,
    message: `${what} must be a tensor {shape, data}`,
    hint: "For example {shape: [6, 3], data: new Float32Array(18)} (row-major).",
  });
}

function deepFreeze(v) {
  if (v !== null && typeof v === "object") {
    for (const key of Object.keys(v)) deepFreeze(v[key]);
    Object.freeze(v);
  }
  return v;
}

function firstError(diagnostics) {
  return diagnostics.find((d) => d.severity === "error");
}

function disposedError(what) {
  return new AttentionError({ code: "disposed", slot: what, message: `this ${what} was disposed`, hint: what === "module" ? "Create it again with lab.create." : "Make a new one with lab.manualSeed(seed)." });
}

class Generator {
  #core;
  #handle;
  /** Whether v is a Generator of this library (a brand check: runs no user code, not even a Proxy trap). */
  static is(v) {
    return v !== null && typeof v === "object" && #handle in v;
  }
  constructor(core, seed) {
    this.#core = core;
    this.seed = seed;
    this.#handle = unwrap(core.manualSeed(seed));
    heldResults(core).hold(this, this.#handle);
  }
  /** @internal the handle of the generator's state in WASM memory */
  get _handle() {
    if (this.#handle === 0) throw disposedError("generator");
    return this.#handle;
  }
  /** @internal the MT19937 state (Uint32Array of 625 words), for tests */
  get _state() {
    return unwrap(this.#core.generatorState(this._handle));
  }
  rand(shape) {
    if (!Array.isArray(shape)) throw new AttentionError({ code: "tensor_shape", slot: "shape", message: "shape must be an array of sizes", hint: "For example [6, 3]." });
    const plain = plainShape(shape);
    return unwrap(this.#core.rand(this._handle, plain));
  }
  dropout(tensor, p) {
    const t = toTensor(tensor, "tensor");
    return unwrap(this.#core.dropout(this._handle, t, typeof p === "number" ? p : NaN));
  }
  /** Frees the generator's WASM memory now (otherwise garbage collection does it). */
  dispose() {
    if (this.#handle === 0) return;
    heldResults(this.#core).release(this, this.#handle);
    this.#handle = 0;
  }
}

class AttentionModule {
  #core;
  #handle;
  /** Whether v is a module of this library (a brand check: runs no user code, not even a Proxy trap). */
  static is(v) {
    return v !== null && typeof v === "object" && #handle in v;
  }
  constructor(lab, info, generator) {
    this.#core = lab._core;
    this.#handle = info.handle;
    // The generator its training forwards draw on when given none: the core shares it with the module,
    // so generator.dispose() later leaves the stream to the module (it goes on drawing from it).
    unwrap(lab._core.useGenerator(info.handle, generator._handle));
    heldResults(lab._core).hold(this, info.handle, "module", 4 * info.parameterCount);
    const facts = moduleFacts(info);
    this.className = facts.className;
    this.config = Object.freeze({ ...facts.config });
    this.headDim = facts.headDim;
    this.outputWidth = facts.outputWidth;
    this.outputWidthRule = facts.outputWidthRule;
    this.parameterCount = info.parameterCount;
    this.notes = Object.freeze([...(info.notes ?? [])]);
    Object.freeze(this);
  }

  /** @internal the handle of the module in WASM memory */
  get _handle() {
    if (this.#handle === 0) throw disposedError("module");
    return this.#handle;
  }

  parameters() {
    return unwrap(this.#core.parameters(this._handle));
  }

  setParameter(name, tensor) {
    const key = plainString(name);
    if (key === null) throw new AttentionError({ code: "unknown_parameter", slot: "", message: `a parameter name is a string, got ${valueText(name)}`, hint: "Use a PyTorch name such as 'W_query.weight' (see module.parameters())." });
    const t = toTensor(tensor, key);
    unwrap(this.#core.setParameter(this._handle, key, t));
  }

  forward(x, options) {
    const { training = true, generator, trace = false, cache } = readOptions(options, "module.forward");
    if (cache !== undefined && cache !== null && !KvCache.is(cache)) {
      throw new AttentionError({ code: "cache_module", slot: "cache", message: `cache must come from module.newCache(), got ${valueText(cache)}`, hint: "Pass {cache: module.newCache()}, or leave it out." });
    }
    // Only dropout in training draws; otherwise the generator is left alone (as in PyTorch). Without
    // one (0), the core draws on the module's own (useGenerator), even after that one's dispose().
    const draws = Boolean(training) && this.config.dropout > 0;
    const gen = draws ? generator ?? null : null;
    if (gen !== null && !Generator.is(gen)) {
      throw new AttentionError({ code: "generator", slot: "generator", message: `generator must come from lab.manualSeed, got ${valueText(gen)}`, hint: "Pass {generator: lab.manualSeed(123)}, or leave it out." });
    }
    const input = toTensor(x, "x");
    const held = heldResults(this.#core);
    const need = () => estimateOf(this.#core, this.className, plainConfig(this.config), input.shape, trace);
    if (isLazy(trace)) {
      const r = unwrap(held.attempt(() => this.#core.forwardResident(this._handle, input, Boolean(training), gen ? gen._handle : 0, cache ? cache._handle : 0), need, "this forward"));
      if (r.cache) cache._update(r.cache);
      const out = { output: r.output, trace: new Trace(this.#core, r.trace) };
      if (r.warnings?.length) out.warnings = r.warnings;
      return out;
    }
    const r = unwrap(held.attempt(() => this.#core.forward(this._handle, input, Boolean(training), gen ? gen._handle : 0, Boolean(trace), cache ? cache._handle : 0), need, "this forward"));
    if (r.cache) cache._update(r.cache);
    const out = trace ? { output: r.output, trace: r.trace } : { output: r.output };
    if (r.warnings?.length) out.warnings = r.warnings;
    return out;
  }

  /**
   * The shares of the heads a forward splits into over at most `parts` plain Workers (the core's
   * head_shares: whole key/value groups; one share of every head where the forward cannot split).
   */
  headShares(parts, options) {
    return this.#split("headShares", options, (h, training) => this.#core.headShares(h, plainNumber(parts, NaN), training));
  }

  /** One share's columns of heads_concat, (b, num_tokens, count * head_dim), untraced (see the .d.ts). */
  forwardShare(x, share, options) {
    const [first, count] = share !== null && typeof share === "object" ? reading("share", () => [share.first, share.count]) : [];
    return this.#split("forwardShare", options, (h, training) => this.#core.forwardShare(h, toTensor(x, "x"), plainNumber(first, NaN), plainNumber(count, NaN), training));
  }

  /** forward's {output, warnings?} from every share's forwardShare output, in head order (see the .d.ts). */
  projectHeads(x, parts, options) {
    const list = reading("parts", () => (parts !== null && typeof parts === "object" && parts.length <= 4096 ? Array.from(parts) : null));
    if (list === null) throw new AttentionError({ code: "head_share", slot: "heads_concat", message: `parts must be an array of forwardShare outputs, got ${valueText(parts)}`, hint: "Pass each share's forwardShare output, in head order." });
    const r = this.#split("projectHeads", options, (h, training) => this.#core.projectHeads(h, toTensor(x, "x"), list.map((t) => toTensor(t, "heads_concat")), training));
    return r.warnings?.length ? { output: r.output, warnings: r.warnings } : { output: r.output };
  }

  /** A number that changes whenever this module's parameters may have changed (a Worker's copy is then stale). */
  get revision() {
    return this.#split("revision", undefined, (h) => this.#core.moduleRevision(h));
  }

  /** A head-split call: its options' training, then the raw call; "no_head_split" on a lean lab (whose binary has none). */
  #split(method, options, call) {
    const { training = true } = readOptions(options, `module.${method}`);
    if (typeof this.#core.headShares !== "function") {
      throw new AttentionError({ code: "no_head_split", slot: method, message: `module.${method} is part of the head split, which the lean binary (loadAttentionLab({checkpoints: false})) has not`, hint: "Load the lab without {checkpoints: false}, or run module.forward whole." });
    }
    return unwrap(call(this._handle, Boolean(training)));
  }

  /** An empty KV cache for this module (see the .d.ts): pass it as forward(chunk, {cache}). */
  newCache(options) {
    const { window } = readOptions(options, "module.newCache");
    return new KvCache(this.#core, unwrap(this.#core.newCache(this._handle, numberOption(window))));
  }

  /** Frees the module's WASM memory now (otherwise garbage collection does it); later calls throw `disposed`. */
  dispose() {
    if (this.#handle === 0) return;
    heldResults(this.#core).release(this, this.#handle);
    this.#handle = 0;
  }
}

/**
 * The core's {bytes, budget} for a forward of (className, config) on `shape` (null: the module alone) with
 * `trace` as run and forward take it; AttentionError when the core cannot estimate it.
 */
function estimateOf(core, className, config, shape, trace) {
  if (isLazy(trace)) return unwrap(core.estimateResidentBytes(className, config, shape));
  return unwrap(core.estimateBytes(className, config, shape, trace === undefined ? true : Boolean(trace)));
}

/** Whether a trace option asks for the lazy (resident) trace: the string "lazy"; anything else is read as a boolean, as always. */
function isLazy(trace) {
  return trace === "lazy";
}

/** A trace query's index or size as a number for the core, which checks it (NaN when it is none). */
function plainNumber(v, fallback) {
  if (v === undefined || v === null) return fallback;
  const p = plainValue(v);
  return typeof p === "number" ? p : NaN;
}

/** A list of numbers for a trace query (offsets, sizes), read once here. */
function plainNumbers(v, what) {
  if (!Array.isArray(v)) throw new AttentionError({ code: "trace_range", slot: what, message: `${what} must be an array with one whole number per axis, got ${valueText(v)}`, hint: "For example {offsets: [0, 0, 0, 0], sizes: [1, 1, 12, 12]}." });
  return reading(what, () => Array.from({ length: Math.min(v.length, 64) }, (_, i) => plainNumber(v[i], NaN)));
}

/**
 * A traced forward whose stage tensors stay in WASM memory (trace: "lazy"): each stage's facts at once
 * (id, title, formula, axes, shape, summary, sliceSummaries, first), its values asked for as they are
 * drawn. Released by dispose() or when garbage-collected.
 */
class Trace {
  #core;
  #handle;
  static is(v) {
    return v !== null && typeof v === "object" && #handle in v;
  }
  constructor(core, resident) {
    this.#core = core;
    this.#handle = resident.handle;
    heldResults(core).hold(this, resident.handle, "trace", resident.bytes);
    this.stages = deepFreeze(resident.stages);
    this.bytes = resident.bytes;
    Object.freeze(this);
  }
  /** @internal */
  get _handle() {
    if (this.#handle === 0) throw new AttentionError({ code: "disposed", slot: "trace", message: "this trace was disposed", hint: "Run again for a new trace (or keep it until you are done drawing it)." });
    return this.#handle;
  }
  /** True once dispose() ran. */
  get disposed() {
    return this.#handle === 0;
  }
  #id(stage) {
    const id = plainString(stage);
    return id === null ? `<${typeof stage}>` : id;
  }
  /** The indices before a stage's last two axes: [batch, head] of a rank-4 stage, [batch] of rank 3, none below. */
  #leading(id, batch, head) {
    const s = this.stages.find((x) => x.id === id);
    const nd = s ? s.shape.length : 2;
    const b = plainNumber(batch, 0);
    const h = plainNumber(head, 0);
    return nd >= 4 ? [b, h, ...Array(nd - 4).fill(0)] : nd === 3 ? [b] : [];
  }
  /**
   * One (batch, head) slice of `stage` max-pooled by the core to at most (height, width) cells.
   */
  heatmap(stage, options) {
    const { batch, head, width, height } = readOptions(options, "trace.heatmap");
    const id = this.#id(stage);
    const r = unwrap(this.#core.traceHeatmap(this._handle, id, this.#leading(id, batch, head), plainNumber(height, 512), plainNumber(width, 512)));
    return { stage: id, rows: r.rows, cols: r.cols, height: r.height, width: r.width, values: r.values };
  }
  /** The window of `stage` at `offsets` of `sizes` (one per axis), and each of its rows' sum over the whole last axis. */
  slice(stage, options) {
    const { offsets, sizes } = readOptions(options, "trace.slice");
    const id = this.#id(stage);
    const r = unwrap(this.#core.traceWindow(this._handle, id, plainNumbers(offsets, "offsets"), plainNumbers(sizes, "sizes")));
    return { stage: id, shape: r.window.shape, data: r.window.data, rowSums: r.rowSums };
  }
  /**
   * A copy of the whole of `stage` ({shape, data}); without a stage, every stage as trace: true gives
   * them ({id, title, formula, axes, shape, data, summary, sliceSummaries} each).
   */
  data(stage) {
    if (stage === undefined) {
      return this.stages.map((s) => {
        const { first: _first, ...facts } = s;
        return { ...facts, shape: [...s.shape], data: unwrap(this.#core.traceData(this._handle, s.id)).data };
      });
    }
    const t = unwrap(this.#core.traceData(this._handle, this.#id(stage)));
    return { shape: t.shape, data: t.data };
  }
  /** Frees the trace's WASM memory now (otherwise garbage collection does it); later queries throw `disposed`. */
  dispose() {
    if (this.#handle === 0) return;
    heldResults(this.#core).release(this, this.#handle);
    this.#handle = 0;
  }
}

/** A KV cache in WASM memory (module.newCache): its numbers follow each cached forward. */
class KvCache {
  #core;
  #handle;
  #state;
  /** Whether v is a KvCache of this library (a brand check: runs no user code). */
  static is(v) {
    return v !== null && typeof v === "object" && #handle in v;
  }
  constructor(core, state) {
    this.#core = core;
    this.#handle = state.handle;
    this.#state = state;
    heldResults(core).hold(this, state.handle, "cache", (cache) => cache.bytes);
  }
  /** @internal the handle of the cache in WASM memory */
  get _handle() {
    if (this.#handle === 0) throw new AttentionError({ code: "disposed", slot: "cache", message: "this KV cache was disposed", hint: "Make a new one with module.newCache()." });
    return this.#handle;
  }
  /** @internal the cache after a cached forward */
  _update(state) {
    this.#state = state;
  }
  get window() {
    return this.#state.window;
  }
  get position() {
    return this.#state.position;
  }
  get tokens() {
    return this.#state.tokens;
  }
  get bytes() {
    return this.#state.bytes;
  }
  get bytesMha() {
    return this.#state.bytesMha;
  }
  /** Empties the cache: the next chunk is at position 0. */
  reset() {
    this.#state = unwrap(this.#core.resetCache(this._handle));
  }
  /** Frees the cache's memory now (otherwise garbage collection does it); later uses throw `disposed`. */
  dispose() {
    if (this.#handle === 0) return;
    heldResults(this.#core).release(this, this.#handle);
    this.#handle = 0;
  }
}

/**
 * Token ids as a plain array of numbers (read once, here). A value that is no number ("1", null) is
 * refused here, by position, since only JS knows its type; the core refuses the numbers that are no
 * ids (1.5, NaN, outside the vocabulary) and too many of them: it gets at most one id past its limit.
 */
function readTokenIds(tokenIds) {
  return reading("tokenIds", () => {
    if (tokenIds == null) return [];
    const refuse = (message) => new AttentionError({ code: "checkpoint_token", slot: "tokens", message, hint: "Token ids are whole numbers, e.g. [15496, 11] for \"Hello,\"." });
    if (typeof tokenIds !== "object" || !Number.isSafeInteger(tokenIds.length)) throw refuse(`tokenIds must be an array of token ids, got ${valueText(tokenIds)}`);
    const ids = Array.from({ length: Math.min(tokenIds.length, 100001) }, (_, i) => tokenIds[i]);
    const at = ids.findIndex((id) => typeof id !== "number");
    if (at >= 0) throw refuse(`token ${at} is ${valueText(ids[at])}, not a number`);
    return ids;
  });
}

/** Throws AttentionError "cancelled" when `signal` (an AbortSignal, or anything else: ignored) has fired. */
function checkSignal(signal) {
  let aborted = false;
  try {
    aborted = signal != null && typeof signal === "object" && signal.aborted === true;
  } catch {
    aborted = false;
  }
  if (aborted) throw cancelledError();
}

function cancelledError() {
  return new AttentionError({ code: "cancelled", slot: "", message: "the run was cancelled", hint: "" });
}

/**
 * `pending` (a read), or AttentionError "cancelled" as soon as `signal` fires: the signal races the
 * read, so a read that never settles cannot hold a run (and its model) for ever. Anything that is not
 * an AbortSignal-like object with addEventListener is only checked between reads (checkSignal).
 */
function raceSignal(pending, signal) {
  let listen = false;
  try {
    listen = signal != null && typeof signal === "object" && typeof signal.addEventListener === "function" && typeof signal.removeEventListener === "function";
  } catch {
    listen = false;
  }
  if (!listen) return pending;
  let onAbort = null;
  const aborted = new Promise((_, reject) => {
    onAbort = () => reject(cancelledError());
    try {
      signal.addEventListener("abort", onAbort, { once: true });
    } catch {
      onAbort = null;  // a signal that cannot be listened to: checked between reads only
    }
  });
  return Promise.race([pending, aborted]).finally(() => {
    try {
      if (onAbort) signal.removeEventListener("abort", onAbort);
    } catch {
      // nothing to undo
    }
  });
}

/** The bytes of `reads` ({name, begin, end}) from `reader`, by name: `signal` checked before and after each read, and racing it. */
async function readRanges(reader, reads, signal) {
  const buffers = {};
  for (const { name, begin, end } of reads) {
    checkSignal(signal);
    buffers[name] = await raceSignal(reader.read(begin, end), signal);
  }
  checkSignal(signal);
  return buffers;
}

/**
 * A .safetensors or torch.save file opened by lab.openCheckpoint: its header (or its zip records and
 * data.pkl) read once and parsed once and kept in WASM memory under a handle. loadCheckpoint, checkpointInput and
 * loadGPT2 given it reuse its reader and its parsed header (a GPT2Model made from it shares the header).
 */
class CheckpointFile {
  #core;
  #handle;
  #reader;
  /** Whether v is a CheckpointFile of this library (a brand check: runs no user code). */
  static is(v) {
    return v !== null && typeof v === "object" && #handle in v;
  }
  constructor(core, reader, opened, format) {
    this.#core = core;
    this.#reader = reader;
    this.#handle = opened.handle;
    heldResults(core).hold(this, opened.handle);
    this.size = reader.size;
    this.format = format;
    this.keys = opened.keys;
    this.dataStart = opened.dataStart;
    Object.freeze(this);
  }

  /** @internal the handle of the parsed header in WASM memory */
  get _handle() {
    if (this.#handle === 0) throw new AttentionError({ code: "disposed", slot: "checkpoint", message: "this checkpoint file was disposed", hint: "Open the file again with lab.openCheckpoint." });
    return this.#handle;
  }

  /** @internal random access to the file's bytes */
  get _reader() {
    return this.#reader;
  }

  /** Frees the parsed header now (otherwise garbage collection does it); later uses throw `disposed`. A GPT2Model opened from it keeps working. */
  dispose() {
    if (this.#handle === 0) return;
    heldResults(this.#core).release(this, this.#handle);
    this.#handle = 0;
  }
}

/**
 * Opens `reader`'s file, told apart by its first bytes (checkpointFormat): a safetensors file's header
 * is read and parsed once (checkpointOpen); a torch.save file is read step by step, the core naming the
 * ranges each step needs (a zip's end record, central directory, local headers, data.pkl; the legacy
 * format's pickles at its start: never a tensor's bytes), then parsed once (torchSaveOpen).
 */
async function openFile(core, reader) {
  const first = await reader.read(0, Math.min(8, reader.size));
  if (unwrap(core.checkpointFormat(first, reader.size)) === "torch") {
    const read = { "file start": first }; // the first step's read, done: it tells a zip from the legacy format
    for (let reads = unwrap(core.torchSaveReads(read, reader.size)); reads.length > 0; reads = unwrap(core.torchSaveReads(read, reader.size))) {
      Object.assign(read, await readRanges(reader, reads));
    }
    return new CheckpointFile(core, reader, unwrap(core.torchSaveOpen(read, reader.size)), "torch");
  }
  const headerLength = unwrap(core.checkpointHeaderLength(first, reader.size));
  const header = await reader.read(8, 8 + headerLength);
  return new CheckpointFile(core, reader, unwrap(core.checkpointOpen(header, reader.size)), "safetensors");
}

/** A checkpoint source as a CheckpointFile (as it is) or a reader of its bytes; AttentionError "checkpoint_source" otherwise. */
function sourceOf(source) {
  return CheckpointFile.is(source) ? source : byteReader(source);
}

/**
 * Runs `use(file)` on a CheckpointFile: `source` itself (kept open: `use` starts with file._handle,
 * which throws "disposed" for a disposed one), or one opened from `source`, a reader (sourceOf), for
 * this call alone and disposed after it.
 */
async function withFile(core, source, use) {
  if (CheckpointFile.is(source)) return use(source);
  const file = await openFile(core, source);
  try {
    return await use(file);
  } finally {
    file.dispose();
  }
}

/**
 * A GPT-2 .safetensors file opened by lab.loadGPT2: its header is parsed once (in WASM), and each run
 * reads only the byte ranges of the step it is on: the tokens' wte rows and wpe[:T], then one block at a
 * time, then ln_f and wte in chunks for the logits at the last position.
 */
class GPT2Model {
  #core;
  #handle;
  #reader;
  #running = false;
  constructor(core, opened, reader, format) {
    this.#core = core;
    this.#handle = opened.handle;
    this.#reader = reader;
    heldResults(core).hold(this, opened.handle);
    this.config = Object.freeze({ ...opened.config, format });
    Object.freeze(this);
  }

  get #live() {
    if (this.#handle === 0) throw new AttentionError({ code: "disposed", slot: "model", message: "this GPT-2 model was disposed", hint: "Load the file again with lab.loadGPT2." });
    return this.#handle;
  }

  /**
   * Bytes a run on `numTokens` tokens takes at its peak, its results as the caller holds them included
   * (the core's estimate, checked before every run); `options.attention` as run's ("full" by default).
   */
  estimateBytes(numTokens, options) {
    const { attention } = readOptions(options, "model.estimateBytes");
    return unwrap(this.#core.gpt2Estimate(this.#live, typeof numTokens === "number" ? numTokens : NaN, attentionMode(attention)));
  }

  /**
   * Runs the whole model on `tokenIds` (GPT-2 BPE ids). Resolves to {layers: [{input, attnWeights}],
   * lastLogits, nextTokens}: per layer the residual stream entering it, (1, num_tokens, n_embd), and its
   * attention weights, (1, n_head, num_tokens, num_tokens) (with `attention: "thumbnails"` instead
   * {thumbnail: (1, n_head, S, S) averaged cells, S = min(num_tokens, 64), firstTokens: (1, n_head, F, F)
   * the exact weights among the first F = min(num_tokens, 48) tokens}); the logits at the last position
   * (vocab_size); the 5 most likely next tokens {id, prob} by softmax. `onProgress({step, done, total})`
   * is called after each step ("embedding", "block" with `layer`, "logits"); `signal` (AbortSignal)
   * cancels ("cancelled"), also while a read is pending. One run at a time per model ("busy"). Finite
   * weights that overflow float32 reject with "non_finite_stage" naming the block and the stage.
   * Bad options reject (never throw).
   */
  async run(tokenIds, options) {
    const { onProgress, signal, attention } = readOptions(options, "model.run");
    return this.#steps(tokenIds, { onProgress, signal, attention: attentionMode(attention) });
  }

  /**
   * What layer `layer`'s attention really sees for `tokenIds`: ln_1 of the residual stream entering
   * block `layer`, (1, num_tokens, n_embd), after the blocks before it ran (the input of
   * loadCheckpoint's module for that layer). Same options as run.
   */
  async attentionInput(tokenIds, layer, options) {
    const { onProgress, signal } = readOptions(options, "model.attentionInput");
    const L = typeof layer === "number" ? layer : NaN;
    if (!(Number.isInteger(L) && L >= 0 && L < this.config.n_layer)) {
      throw new AttentionError({ code: "checkpoint_layer", slot: "layer", message: `layer must be a whole number from 0 to ${this.config.n_layer - 1}, got ${valueText(layer)}`, hint: "" });
    }
    return (await this.#steps(tokenIds, { onProgress, signal, inputOf: L, attention: "thumbnails" })).input;  // the layers' results are not kept
  }

  /**
   * Generates up to `maxNewTokens` tokens after `tokenIds`, as the book's chapter 5 `generate` (greedy
   * `generate_text_simple` at temperature 0), with the KV cache unless `cache: false` (a window of
   * `window` positions whose oldest entries shift out, when given: the core's rules). Resolves to
   * {tokenIds (prompt + new), steps: [{token, prob, top, cacheTokens, cacheBytes, attention, ms}],
   * stoppedBy, resident, estimateBytes}; `attention: true` gives each step the new token's attn_weights
   * rows, {shape: [n_layer, n_head, keys], data}, else null. Sampling (temperature > 0) draws on `generator` (default: a fresh
   * lab.manualSeed(123)) exactly as torch.multinomial does, so the generator ends where PyTorch's would.
   */
  async generate(tokenIds, options) {
    const { maxNewTokens, temperature, topK, eosId, generator, cache, resident, window, attention, onToken, signal } = readOptions(options, "model.generate");
    const ids = readTokenIds(tokenIds);
    if (generator !== undefined && generator !== null && !Generator.is(generator)) {
      throw new AttentionError({ code: "generator", slot: "generator", message: `generator must come from lab.manualSeed, got ${valueText(generator)}`, hint: "Pass {generator: lab.manualSeed(123)}, or leave it out." });
    }
    if (onToken !== undefined && onToken !== null && typeof onToken !== "function") {
      throw new AttentionError({ code: "generate_option", slot: "onToken", message: `onToken must be a function, got ${valueText(onToken)}`, hint: "Pass (step) => { ... }, or leave it out." });
    }
    if (this.#running) throw new AttentionError({ code: "busy", slot: "", message: "this model is already running", hint: "Wait for the run in progress, or cancel it through its signal." });
    const handle = this.#live;
    const core = this.#core;
    const temp = numberOption(temperature);
    const opts = { maxNewTokens: numberOption(maxNewTokens), temperature: temp, topK: numberOption(topK), eosId: numberOption(eosId), cache: numberOption(cache), resident: numberOption(resident), window: numberOption(window), attention: numberOption(attention) };
    this.#running = true;
    try {
      checkSignal(signal);
      const start = unwrap(core.gpt2Generate(handle, ids, opts, 0));
      const gen = temp.number && temp.value > 0 ? generator ?? new Generator(core, 123) : null;
      const out = [...ids];
      const steps = [];
      let began = performance.now();
      for (;;) {
        const buffers = await this.#readAll(unwrap(core.gpt2Reads(handle)), signal);
        const r = unwrap(core.gpt2GenerateStep(handle, gen ? gen._handle : 0, buffers));
        if (r.token) {
          const now = performance.now();
          const step = { token: r.token.token, prob: r.token.prob, top: r.token.top, cacheTokens: r.token.cacheTokens, cacheBytes: r.token.cacheBytes, attention: r.token.attention, ms: now - began };
          began = now;
          out.push(step.token);
          steps.push(step);
          if (typeof onToken === "function") {
            try {
              onToken(step);
            } catch {
              throw new AttentionError({ code: "callback", slot: "onToken", message: "the onToken callback threw, so the generation stopped", hint: "Catch errors inside the callback." });
            }
          }
        }
        if (r.finished) return { tokenIds: out, steps, stoppedBy: r.eos ? "eos" : "maxNewTokens", resident: start.resident, estimateBytes: start.estimateBytes };
        if (r.token) checkSignal(signal);  // between tokens
      }
    } finally {
      core.gpt2Stop(handle);
      this.#running = false;
    }
  }

  /** The bytes of `reads` ({name, begin, end}), by name (readRanges: the signal races each read). */
  #readAll(reads, signal) {
    return readRanges(this.#reader, reads, signal);
  }

  /**
   * A run, step by step as a generation goes: the core names the byte ranges its next step needs
   * (gpt2Reads), they are read, and the step runs on them (gpt2RunStep: the embedding, a block, ln_f, a
   * logits chunk, or the attention input of block `inputOf`, where the run then ends) and says what it
   * gave: the piece onProgress reports, a layer's results, the end.
   */
  async #steps(tokenIds, { onProgress, signal, inputOf = null, attention }) {
    const ids = readTokenIds(tokenIds);
    if (this.#running) throw new AttentionError({ code: "busy", slot: "", message: "this model is already running", hint: "Wait for the run in progress, or cancel it through its signal." });
    const handle = this.#live;
    const core = this.#core;
    const progress = (p) => {
      if (typeof onProgress !== "function") return;
      try {
        onProgress(p);
      } catch {
        throw new AttentionError({ code: "callback", slot: "onProgress", message: "the onProgress callback threw, so the run stopped", hint: "Catch errors inside the callback." });
      }
    };
    this.#running = true;
    try {
      unwrap(core.gpt2Run(handle, ids, attention, numberOption(inputOf), 0));
      const layers = [];
      for (;;) {
        const r = unwrap(core.gpt2RunStep(handle, await this.#readAll(unwrap(core.gpt2Reads(handle)), signal)));
        const { block: b, step, layer, done, total } = r;
        if (b) layers.push(attention === "full" ? { input: b.input, attnWeights: b.attnWeights } : { thumbnail: b.thumbnail, firstTokens: b.firstTokens });
        if (step) progress(layer === null ? { step, done, total } : { step, layer, done, total });
        if (r.finished) return r.input ? { layers, input: r.input } : { layers, lastLogits: r.logits.lastLogits, nextTokens: r.logits.nextTokens };
      }
    } finally {
      core.gpt2Stop(handle);
      this.#running = false;
    }
  }

  /** Frees the model's WASM memory now (otherwise garbage collection does it); later calls throw `disposed`. */
  dispose() {
    if (this.#handle === 0) return;
    heldResults(this.#core).release(this, this.#handle);
    this.#handle = 0;
  }
}

class Lab {
  constructor(core) {
    this._core = core;
    // What the core knows about each class (slots, input axes, heads, presets, tolerance): read once,
    // frozen, and handed out as it is. The facade keeps no fact of its own about any class.
    const specs = unwrap(core.classes()).map((s) => deepFreeze(s));
    this._specs = new Map(specs.map((s) => [s.name, s]));
    this.classes = Object.freeze(specs.map((s) => s.name));
    /** The four GPT-2 sizes, from the core's one table: [{name, n_embd, n_head, n_layer}]. */
    this.gpt2Sizes = deepFreeze(unwrap(core.gpt2Sizes()));
    /** The seeds the core takes (its one range): whole numbers from lowest to highest, -(2**53 - 1) to 2**53 - 1. */
    const [lowest, highest] = unwrap(core.seedRange());
    this.seedRange = Object.freeze({ lowest, highest });
    // Which products the binary runs (see the kernel getter): fixed when it was compiled, asked once.
    this._kernel = unwrap(core.kernelFusesMultiplyAdd()) ? "relaxed_madd" : "simd128";
    // The threads its forwards run on: the core's pool, as it really started (asked once).
    this._threads = unwrap(core.threads());
  }

  /** The core's facts about a class (the same object describe returns as `.class`); undefined for an unknown name. */
  #facts(className) {
    return this._specs.get(plainString(className));
  }

  /** The core's facts about a class, without a call into the core (see the .d.ts); undefined for an unknown name. */
  classFacts(className) {
    return this.#facts(className);
  }

  slots(className) {
    const spec = this._specs.get(plainString(className));
    if (!spec) {
      throw new AttentionError({ code: "unknown_class", slot: "", message: `there is no class named ${valueText(className)}`, hint: `Use one of: ${this.classes.join(", ")}.` });
    }
    return spec.slots.map((s) => ({ ...s }));
  }

  parseCall(text) {
    text = plainString(text) ?? "";
    const r = this._core.parseCall(text);
    if (!r.ok) return { className: "", config: {}, slots: [], diagnostics: [{ severity: "error", code: r.error.code, slots: [], message: r.error.message, hint: r.error.hint, pytorch: "" }] };
    const { className, config, slots, diagnostics } = r.value;
    return { className, config, slots, diagnostics };
  }

  check(className, config, options) {
    // Never throws: an argument that cannot be read is an error diagnostic like any other.
    let r;
    try {
      const { inputShape, training } = readOptions(options, "lab.check");
      r = this._core.check(plainString(className) ?? "", plainConfig(config), Array.isArray(inputShape) ? plainShape(inputShape, "inputShape") : null, typeof training === "boolean" ? training : null);
    } catch (err) {
      r = { ok: false, error: err };
    }
    if (!r.ok) return [{ severity: "error", code: r.error.code, slots: r.error.slot ? [r.error.slot] : [], message: r.error.message, hint: r.error.hint, pytorch: "" }];
    return r.value;
  }

  describe(className, config) {
    let r;
    try {
      r = this._core.describe(plainString(className) ?? "", plainConfig(config));
    } catch {
      r = { ok: false };
    }
    const facts = this.#facts(className);
    if (!r.ok) return { ok: false, diagnostics: this.check(className, config), ...(facts ? { class: facts } : {}) };
    const s = r.value;
    return { ...flatDescription(s.description), ok: s.valid, diagnostics: s.configDiagnostics, ...(facts ? { class: facts } : {}) };
  }

  /**
   * Everything a page shows before a run, from one call into the core (one validation of the config,
   * one with the input): {className, ok, diagnostics (= check with inputShape and training),
   * description (= describe), memory (= estimateBytes with trace, or null when the config is not valid)}.
   * Configuration problems are diagnostics; arguments that cannot be read throw AttentionError.
   */
  setup(className, config, options) {
    const { inputShape, training, trace = true } = readOptions(options, "lab.setup");
    const name = plainString(className) ?? "";
    const plain = plainConfig(config);
    const shape = inputShape === undefined || inputShape === null ? null : plainShape(inputShape, "inputShape");
    const r = unwrap(this._core.setup(name, plain, shape, typeof training === "boolean" ? training : null, Boolean(trace)));
    const facts = this.#facts(className);
    const description = { diagnostics: r.configDiagnostics, ...flatDescription(r.description), ok: r.valid, ...(facts ? { class: facts } : {}) };
    return { className: r.className, ok: r.valid, diagnostics: r.diagnostics, description, memory: r.memory };
  }

  /**
   * torch.manual_seed(seed), the constructor, then a forward pass on x (traced unless trace: false),
   * all in one call into the core: {className, config, pythonCall, headDim, outputWidth,
   * outputWidthRule, output, trace?, warnings}. No module is kept (lab.create for one to keep).
   */
  run(className, config, x, options) {
    const { seed = 123, training = true, trace = true } = readOptions(options, "lab.run");
    if (typeof seed !== "number") throw notASeed(seed);  // its range: the core's (lab.seedRange)
    const input = toTensor(x, "x");
    const name = plainString(className) ?? "";
    const plain = plainConfig(config);
    const held = heldResults(this._core);
    const need = () => estimateOf(this._core, name, plain, input.shape, trace);
    if (isLazy(trace)) {
      const r = unwrap(held.attempt(() => this._core.runResident(name, plain, input, seed, Boolean(training)), need, "this run"));
      return { ...moduleFacts(r), output: r.output, trace: new Trace(this._core, r.trace), warnings: r.warnings };
    }
    const r = unwrap(held.attempt(() => this._core.runModule(name, plain, input, seed, Boolean(training), Boolean(trace)), need, "this run"));
    return { ...moduleFacts(r), output: r.output, ...(trace ? { trace: r.trace } : {}), warnings: r.warnings };
  }

  manualSeed(seed) {
    if (typeof seed !== "number") throw notASeed(seed);  // its range: the core's (lab.seedRange)
    return new Generator(this._core, seed);
  }

  create(className, config, options) {
    const { generator } = readOptions(options, "lab.create");
    const name = plainString(className) ?? "";
    const plain = plainConfig(config);
    const diagnostics = this.check(name, plain);
    const error = firstError(diagnostics);
    if (error) {
      throw new AttentionError({ code: error.code, slot: error.slots[0] ?? "", message: error.message, hint: error.hint, diagnostics });
    }
    const gen = this.#generatorOf(generator);
    const r = unwrap(heldResults(this._core).attempt(() => this._core.create(name, plain, gen._handle), () => estimateOf(this._core, name, plain, null, false), "this module"));
    return new AttentionModule(this, r, gen);
  }

  /** The generator option: one from manualSeed, or a fresh manualSeed(123) when none is given. */
  #generatorOf(generator) {
    if (generator === undefined || generator === null) return this.manualSeed(123);
    if (Generator.is(generator)) return generator;
    throw new AttentionError({ code: "generator", slot: "generator", message: `generator must come from lab.manualSeed, got ${valueText(generator)}`, hint: "Pass {generator: lab.manualSeed(123)}, or leave it out." });
  }

  copyWeights(from, to, plan = {}, options) {
    const { tokens } = readOptions(options, "lab.copyWeights");
    if (!AttentionModule.is(from) || !AttentionModule.is(to)) {
      throw new AttentionError({ code: "copy_unsupported", slot: "", message: "copyWeights takes two modules made by lab.create", hint: "" });
    }
    const plain = plainPlan(plan);
    const x = tokens == null ? null : toTensor(tokens, "tokens");
    return unwrap(this._core.copyWeights(from._handle, to._handle, plain, x));
  }

  /**
   * Loads one GPT-2 layer's attention from a .safetensors file into MultiHeadAttention(d, d, n_ctx,
   * 0.0, n_head, qkv_bias=True), reading only the header and the four tensors it needs.
   */
  async loadCheckpoint(source, options) {
    this.#needCheckpoints("loadCheckpoint");
    const { layer = 0, num_heads, context_length, into } = readOptions(options, "lab.loadCheckpoint");
    const opened = sourceOf(source);
    const core = this._core;
    const plain = { layer: numberOption(layer), num_heads: numberOption(num_heads), context_length: numberOption(context_length), intoClass: "", intoConfig: {} };
    if (into != null) {
      if (!AttentionModule.is(into)) {
        throw new AttentionError({ code: "checkpoint_config_mismatch", slot: "", message: "`into` must be a module made by lab.create", hint: "" });
      }
      plain.intoClass = into.className;
      plain.intoConfig = into.config;
    }
    const r = await withFile(core, opened, async (file) => {
      const reader = file._reader;
      const plan = unwrap(core.planCheckpoint(file._handle, plain));
      const buffers = {};
      for (const { name, begin, end } of plan.needed) buffers[name] = await reader.read(begin, end);
      // all or nothing: `into` changes only after every check passed
      return unwrap(core.loadCheckpoint(file._handle, plain, buffers, into != null ? into._handle : 0));
    });
    if (into != null) return { module: into, report: r.report };
    return { module: new AttentionModule(this, r, this.manualSeed(123)), report: r.report };
  }

  /**
   * Opens a .safetensors or torch.save (.pth, pytorch_model.bin) file (an ArrayBuffer, a typed array, a
   * Blob or a File) once, told apart by its bytes: reads its header (or the zip's records and data.pkl)
   * and parses it in WASM. Resolves to a CheckpointFile ({size, keys,
   * dataStart, dispose()}) that loadCheckpoint, checkpointInput and loadGPT2 take in place of the
   * source, with no further header read or parse. A CheckpointFile given here is returned as it is.
   */
  async openCheckpoint(source) {
    this.#needCheckpoints("openCheckpoint");
    const opened = sourceOf(source);
    return CheckpointFile.is(opened) ? opened : openFile(this._core, opened);
  }

  /**
   * Opens a GPT-2 .safetensors or torch.save file (an ArrayBuffer, a typed array, a Blob or a File) for the whole
   * model, reading only its header now. `options.num_heads` for widths that are not GPT-2's (else the
   * header's __metadata__ n_head, or GPT-2's own head counts). Resolves to a model with `config`
   * ({n_embd, n_head, n_layer, n_ctx, vocab_size, dtype, size}) and `run(tokenIds, options)`.
   */
  async loadGPT2(source, options) {
    this.#needCheckpoints("loadGPT2");
    const { num_heads } = readOptions(options, "lab.loadGPT2");
    const opened = sourceOf(source);
    const core = this._core;
    // the model shares the file's parsed header (it outlives the file's dispose)
    return withFile(core, opened, (file) => new GPT2Model(core, unwrap(core.gpt2Open(file._handle, numberOption(num_heads))), file._reader, file.format));
  }

  /**
   * What GPT-2 layer `layer`'s attention really sees for `tokenIds`, as (1, num_tokens, d): ln_1 of the
   * residual stream entering block `layer`. Layer 0 reads one wte row per distinct id, T wpe rows and ln_1
   * (a file with only that layer's keys works); a later layer runs blocks 0 .. layer-1 first, one at a
   * time, so the file must hold the whole model (options: num_heads for widths not GPT-2's, signal).
   */
  async checkpointInput(source, options) {
    this.#needCheckpoints("checkpointInput");
    const { tokenIds, layer = 0, num_heads, signal } = readOptions(options, "lab.checkpointInput");
    const opened = sourceOf(source);
    const ids = readTokenIds(tokenIds);
    const where = numberOption(layer);  // one rule with loadCheckpoint's layer
    const core = this._core;
    checkSignal(signal);
    return withFile(core, opened, async (file) => {
      const reader = file._reader;
      const reads = unwrap(core.planBlockInput(file._handle, ids, where));
      if (where.value > 0) {
        // Layer L's real input needs blocks 0 .. L-1: the whole model's path (reads them one at a time).
        const model = new GPT2Model(core, unwrap(core.gpt2Open(file._handle, numberOption(num_heads))), reader, file.format);
        try {
          return await model.attentionInput(ids, where.value, { signal });
        } finally {
          model.dispose();
        }
      }
      return unwrap(core.blockInput(file._handle, ids, where, await readRanges(reader, reads, signal)));
    });
  }

  /**
   * Whether this lab reads checkpoints (openCheckpoint, loadCheckpoint, checkpointInput, loadGPT2):
   * false for a lean binary (loadAttentionLab({checkpoints: false}): attention_core_lean*.wasm, built
   * without those readers), true for every other.
   */
  get hasCheckpoints() {
    return typeof this._core.checkpointOpen === "function";
  }

  /** Rejects a checkpoint method on a lean lab ("no_checkpoints"), naming the method and the way out. */
  #needCheckpoints(method) {
    if (this.hasCheckpoints) return;
    throw new AttentionError({
      code: "no_checkpoints", slot: method,
      message: `lab.${method} needs the checkpoint readers, and this lab was loaded without them (loadAttentionLab({checkpoints: false}) loads the lean binary)`,
      hint: "Load the lab without {checkpoints: false} (the first call of loadAttentionLab decides), or read the file where a full lab runs (the teaching page reads files in its Worker).",
    });
  }

  /** The equivalent multi-head config: wrapper d_out per head <-> fused d_out total. */
  equivalentConfig(className, config) {
    const { className: name, config: slots, pythonCall } = unwrap(this._core.equivalentConfig(plainString(className) ?? "", plainConfig(config)));
    return { className: name, config: slots, pythonCall };
  }

  /**
   * Wrapper -> equivalent fused MultiHeadAttention (heads stacked, out_proj = identity, zero bias) or
   * fused -> wrapper (head h = rows h*head_dim ...). layout "interleaved" builds the head-merge mistake.
   */
  convert(module, options) {
    const { layout = "stacked" } = readOptions(options, "lab.convert");
    if (!AttentionModule.is(module)) {
      throw new AttentionError({ code: "convert_unsupported", slot: "", message: "convert takes a module made by lab.create", hint: "" });
    }
    const r = unwrap(this._core.convert(module._handle, plainString(layout) ?? valueText(layout)));
    return { module: new AttentionModule(this, r, this.manualSeed(123)), code: r.code };
  }

  /** Runs both modules on x in eval mode and compares every stage they share (same id and shape). */
  compare(a, b, x) {
    if (!AttentionModule.is(a) || !AttentionModule.is(b)) {
      throw new AttentionError({ code: "compare_unsupported", slot: "", message: "compare takes two modules made by lab.create", hint: "" });
    }
    const input = toTensor(x, "x");
    const stages = unwrap(this._core.compare(a._handle, b._handle, input));
    const worst = stages.reduce((m, s) => Math.max(m, s.maxAbsDiff), 0);
    return { stages, maxAbsDiff: worst, agree: worst <= this.#facts(a.className).tolerance, tolerance: this.#facts(a.className).tolerance };
  }

  /** A reader's own module against the book's forward and the catalogue of mistakes (the .d.ts says how). Core: Session::check_module, Session::check_file. */
  checkModule(file) {
    if (CheckpointFile.is(file) || isArrayBuffer(file) || ArrayBuffer.isView(file) || isBlob(file)) return this.#checkFile(file);
    const args = checkArguments(file, toTensor);
    // A full heap with results alive is blamed on them when a traced forward of the call on x fits (the check's own peak adds a module).
    const need = () => {
      const { className, config } = unwrap(this._core.parseCall(args[0]));
      return estimateOf(this._core, className, config, args[2].shape, true);
    };
    return unwrap(heldResults(this._core).attempt(() => this._core.checkModule(...args), need, "this check"));
  }

  /** checkModule of a check file: its keys, call and memory estimate checked from its header, then only its tensors read. */
  async #checkFile(file) {
    this.#needCheckpoints("checkModule");
    const core = this._core;
    return withFile(core, sourceOf(file), async (opened) => unwrap(core.checkFile(opened._handle, await readRanges(opened._reader, unwrap(core.checkFileReads(opened._handle))))));
  }

  /**
   * Bytes the module's parameters plus a forward on `inputShape` need at their peak (traced unless
   * `trace: false`), the JS copies of its output and trace included: the same estimate the core checks
   * before allocating, and the budget it checks against (the one budget; lab.setup's memory.budget).
   * It bounds the growth of the WASM heap (see heapPeak) plus the results' bytes.
   */
  estimateBytes(className, config, inputShape, options) {
    const { trace } = readOptions(options, "lab.estimateBytes");
    if (isLazy(trace)) {
      const r = unwrap(this._core.estimateResidentBytes(plainString(className) ?? "", plainConfig(config), Array.isArray(inputShape) ? plainShape(inputShape, "inputShape") : null));
      return { bytes: r.bytes, budget: r.budget };
    }
    const r = unwrap(this._core.estimateBytes(plainString(className) ?? "", plainConfig(config), Array.isArray(inputShape) ? plainShape(inputShape, "inputShape") : null, trace === undefined ? true : Boolean(trace)));
    return { bytes: r.bytes, budget: r.budget };
  }

  /**
   * Takes the WASM heap a forward of this setup will need now (the estimate of estimateBytes with the
   * same arguments), touches every page of it and gives it back: the heap has grown and its pages are
   * in memory, so the forward itself does not pay for that (GPT-2 small's traced forward on 1024 tokens
   * spends ~0.15 s growing the heap the first time). For a Worker that will run a large forward, while
   * it waits. Returns {bytes, budget} as estimateBytes; {bytes: 0, budget} on a lean lab
   * (loadAttentionLab({checkpoints: false})), whose binary has no reserve. Throws AttentionError: the
   * config's and the shape's errors (as estimateBytes), too_large (over the budget), out_of_memory.
   * Core: Session::reserve_memory.
   */
  reserveMemory(className, config, inputShape, options) {
    const { trace } = readOptions(options, "lab.reserveMemory");
    const shape = Array.isArray(inputShape) ? plainShape(inputShape, "inputShape") : null;
    const name = plainString(className) ?? "";
    const plain = plainConfig(config);
    if (typeof this._core.reserveMemory !== "function") return { bytes: 0, budget: this.estimateBytes(name, plain, shape, { trace }).budget };
    const r = unwrap(this._core.reserveMemory(name, plain, shape, isLazy(trace), trace === undefined ? true : Boolean(trace)));
    return { bytes: r.bytes, budget: r.budget };
  }

  /**
   * A module from plain data, e.g. `{className, config, parameters: m.parameters()}` sent to a Web
   * Worker: every parameter must be given with its PyTorch name and shape (AttentionError otherwise).
   */
  fromParameters(className, config, parameters, options) {
    const { generator } = readOptions(options, "lab.fromParameters");
    const list = reading("parameters", () => (parameters == null ? [] : typeof parameters === "object" && parameters.length <= 4096 ? Array.from(parameters) : null));
    if (list === null) throw new AttentionError({ code: "unknown_parameter", slot: "", message: "parameters must be an array of {name, shape, data}", hint: "Pass module.parameters() or a state_dict's entries." });
    const params = list.map((p) => {
      const raw = p !== null && typeof p === "object" ? reading("parameters", () => p.name) : null;
      const name = typeof raw === "string" || (raw !== null && typeof raw === "object") ? plainString(raw) : null;
      // A name that is not a string would reach embind's std::string and throw its own error type.
      if (name === null) {
        throw new AttentionError({ code: "unknown_parameter", slot: "", message: "every parameter needs its PyTorch name as a string", hint: "Pass the entries of module.parameters()." });
      }
      return { name, tensor: toTensor(p, name) };
    });
    const gen = this.#generatorOf(generator);
    const name = plainString(className) ?? "";
    const plain = plainConfig(config);
    const r = unwrap(heldResults(this._core).attempt(() => this._core.fromParameters(name, plain, params), () => estimateOf(this._core, name, plain, null, false), "this module"));
    return new AttentionModule(this, r, gen);
  }

  /** The PyTorch lines of a v1/v2 copy plan (as report.code), without building the modules. */
  copyCode(fromClass, toClass, plan = {}) {
    return unwrap(this._core.copyCode(plainString(fromClass) ?? "", plainString(toClass) ?? "", plainPlan(plan)));
  }

  bookTokens() {
    return unwrap(this._core.bookTokens());
  }

  sentenceTokens(words, dIn, seed) {
    if (!Array.isArray(words)) throw new AttentionError({ code: "tensor_shape", slot: "tokens", message: "words must be an array of strings", hint: 'For example "Your journey starts".split(/\\s+/).' });
    const plain = reading("words", () => Array.from({ length: Math.min(words.length, 100001) }, (_, i) => plainString(words[i]) ?? valueText(words[i])));
    return unwrap(this._core.sentenceTokens(plain, typeof dIn === "number" ? dIn : NaN, typeof seed === "number" ? seed : NaN));
  }

  seededTokens(numTokens, dIn, seed) {
    return unwrap(this._core.seededTokens(typeof numTokens === "number" ? numTokens : NaN, typeof dIn === "number" ? dIn : NaN, typeof seed === "number" ? seed : NaN));
  }

  heapInUse() {
    return this._core.heapInUse();
  }

  /** Bytes the lazy traces alive now hold in WASM memory (their float32 values; 0 once each is disposed). */
  traceBytesInUse() {
    return unwrap(this._core.traceBytesInUse());
  }

  /** The most WASM heap ever taken (bytes; it never shrinks): what the tab holds after the largest call. */
  heapPeak() {
    return this._core.heapPeak();
  }

  /**
   * Which products this binary runs, as the core was compiled: "relaxed_madd" (attention_core_fma.wasm:
   * each multiply-add one f32x4.relaxed_madd, fused where the engine has FMA) or "simd128" (a multiply
   * then an add: the bits of the scalar sequential sum, as the native build).
   */
  get kernel() {
    return this._kernel;
  }

  /** The threads the core's products run on (its pool's size: 1 for the single-thread binary). */
  get threads() {
    return this._threads;
  }

  /** How many modules and generators live in WASM memory now (released on dispose or collection). */
  handlesInUse() {
    return unwrap(this._core.handlesInUse());
  }

  /** Input shape a class expects for `numTokens` tokens and batch `b`. */
  inputShape(className, numTokens, dIn, b = 1) {
    return this.#facts(className)?.inputAxes.length === 3 ? [b, numTokens, dIn] : [numTokens, dIn];
  }
}

function detachedError() {
  return new AttentionError({ code: "checkpoint_source", slot: "", message: "the checkpoint's buffer is detached (it was transferred or freed)", hint: "Read the file again, or pass a copy of its bytes." });
}

/** Random access to the bytes of an ArrayBuffer, a typed array, a Blob or a File (File.slice: never read whole). */
function byteReader(source) {
  if (isArrayBuffer(source) || ArrayBuffer.isView(source)) {
    let bytes;
    try {
      bytes = isArrayBuffer(source) ? new Uint8Array(source) : isTypedArray(source) ? new Uint8Array(typedBuffer.call(source), typedOffset.call(source), typedByteLength.call(source)) : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    } catch {
      bytes = null;  // a detached buffer (transferred to a worker, or a resized one)
    }
    if (bytes === null) throw detachedError();
    // a view, not a copy: every read goes straight into the core, which copies it once. A buffer
    // detached later (transferred to a worker) leaves the view empty: refused as at the start.
    const size = bytes.length;
    const read = async (begin, end) => {
      if (typedByteLength.call(bytes) !== size) throw detachedError();
      return bytes.subarray(begin, Math.min(end, size));
    };
    return { size, read };
  }
  if (isBlob(source)) {
    const read = async (begin, end) => {
      try {
        return new Uint8Array(await source.slice(begin, end).arrayBuffer());
      } catch (err) {
        throw new AttentionError({ code: "checkpoint_read", slot: "", message: `the file could not be read (${err?.name ?? "error"})`, hint: "The file may have been moved or changed since it was chosen; choose it again." });
      }
    };
    return { size: source.size, read };
  }
  throw new AttentionError({
    code: "checkpoint_source",
    slot: "",
    message: "a checkpoint must be an ArrayBuffer, a Blob or a File",
    hint: "Pass the File from a file picker or a drop event, or the ArrayBuffer of the file.",
  });
}

/** Whether v is a Blob or File (a throw from a Proxy trap or a getter means it is not). */
function isBlob(v) {
  try {
    return typeof Blob !== "undefined" && v instanceof Blob && typeof v.size === "number";
  } catch {
    return false;
  }
}

// ---- loading the core ----------------------------------------------------------------------------
// Once per realm, where the first call says (load-core.js, wasm-source.js). This file reads no global to
// guess where it runs: Node gets ./attention-lab.node.js through the "node" condition of package.json's
// exports, which hands over Node's facts (its cores, its files) under the key below.

/** The key under which attention-lab.node.js passes Node's facts: {cores, readFile, filePath, toUrl, folder}. */
const NODE = Symbol.for("attention-lab.node");

/**
 * Loads the WASM core once and resolves to the lab (see the .d.ts for the options and the rule for a
 * second call). Never throws: bad options and failed loads reject with AttentionError.
 */
export function loadAttentionLab(options) {
  let read;
  try {
    if (options !== undefined && options !== null && typeof options !== "object") {
      throw new AttentionError({ code: "bad_options", slot: "loadAttentionLab", message: `the options of loadAttentionLab must be an object, got ${valueText(options)}`, hint: "Pass {wasmPaths: \"/assets/attention-lab/\"}, {wasmUrl: \"/assets/attention_core.wasm\"}, {wasmBinary: bytes}, or nothing." });
    }
    const { wasmUrl, wasmBinary, wasmPaths, threads, checkpoints, [NODE]: node } = readOptions(options, "loadAttentionLab");
    read = { wasmUrl, wasmBinary, wasmPaths, threads, checkpoints, node };
  } catch (err) {
    return Promise.reject(err);
  }
  return loadCore(read, (core) => new Lab(core));
}
