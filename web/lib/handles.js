// The handles a lab hands out for what lives in WASM memory: generators (lab.manualSeed), modules
// (lab.create, fromParameters, loadCheckpoint, convert) and KV caches (module.newCache). A
// FinalizationRegistry (held-results.js) releases a handle when its JS object is garbage-collected, and
// dispose() releases it at once: nothing needs .delete().
import { heldResults } from "./held-results.js";
import { numberOption, plainConfig, plainNumber, plainShape, plainString, readOptions, toTensor, unwrap } from "./inputs.js";
import { Trace } from "./trace.js";
import { AttentionError, reading, valueText } from "./values.js";

/** A module's facts as the core states them ({className, config, pythonCall, headDim, outputWidth, outputWidthRule}). */
export function moduleFacts(info) {
  return info.module;
}

function disposedError(what) {
  return new AttentionError({ code: "disposed", slot: what, message: `this ${what} was disposed`, hint: what === "module" ? "Create it again with lab.create." : "Make a new one with lab.manualSeed(seed)." });
}

export class Generator {
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

export class AttentionModule {
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
export function estimateOf(core, className, config, shape, trace) {
  if (isLazy(trace)) return unwrap(core.estimateResidentBytes(className, config, shape));
  return unwrap(core.estimateBytes(className, config, shape, trace === undefined ? true : Boolean(trace)));
}

/** Whether a trace option asks for the lazy (resident) trace: the string "lazy"; anything else is read as a boolean, as always. */
export function isLazy(trace) {
  return trace === "lazy";
}

/** A KV cache in WASM memory (module.newCache): its numbers follow each cached forward. */
export class KvCache {
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
