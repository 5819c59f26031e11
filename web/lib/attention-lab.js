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
import createAttentionCore from "./attention_core.mjs";

/** The one error type of the library: `.code` is stable, `.slot` names the slot, `.hint` says how to fix it. */
export class AttentionError extends Error {
  constructor({ code, slot = "", message, hint = "", diagnostics = [] }) {
    super(message);
    this.name = "AttentionError";
    this.code = code;
    this.slot = slot;
    this.hint = hint;
    this.diagnostics = diagnostics;
  }
}

const BATCHED = new Set(["CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention"]);

function unwrap(result) {
  if (!result.ok) throw new AttentionError(result.error);
  return result;
}

/** A slot value as a plain value: numbers, strings, booleans, null stay; anything else becomes "<type>". */
function plainValue(v) {
  return v === null || v === undefined || typeof v === "number" || typeof v === "string" || typeof v === "boolean" ? v : `<${typeof v}>`;
}

/** A config as a plain object of plain values (own enumerable keys, read once, here). */
function plainConfig(config) {
  if (config === null || typeof config !== "object") return {};
  const out = {};
  // defineProperty: a key such as "__proto__" stays an own key that the core can name
  for (const key of Object.keys(config)) Object.defineProperty(out, key, { value: plainValue(config[key]), enumerable: true, writable: true, configurable: true });
  return out;
}

/** A shape as a plain array: sizes that are not numbers become NaN, which the core refuses by name. */
function plainShape(shape) {
  return Array.from(shape, (d) => (typeof d === "number" ? d : NaN));
}

/** A copy plan {W_query: {copy, transpose}, ...} as plain data; an entry that is not an object stays as it is so the core names it. */
function plainPlan(plan) {
  if (plan === null || typeof plan !== "object") return {};
  const out = {};
  for (const key of Object.keys(plan)) {
    const e = plan[key];
    out[key] = e !== null && typeof e === "object" ? { copy: e.copy === true, transpose: e.transpose === true } : plainValue(e);
  }
  return out;
}

/** Copies a TensorLike into {shape: number[], data: Float32Array}; AttentionError on a bad tensor. */
function toTensor(t, what = "x") {
  if (t === null || typeof t !== "object" || !Array.isArray(t.shape) || t.data == null) {
    throw new AttentionError({
      code: "tensor_shape",
      slot: what,
      message: `${what} must be a tensor {shape, data}`,
      hint: "For example {shape: [6, 3], data: new Float32Array(18)} (row-major).",
    });
  }
  const shape = plainShape(t.shape);
  let data = t.data;
  // Sizes before anything is copied: a data.length that does not fit the shape is refused at once.
  const numel = shape.reduce((n, d) => n * d, 1);
  const length = typeof data.length === "number" ? data.length : NaN;
  if (!(length === numel)) {
    const valid = shape.every((d) => Number.isInteger(d) && d >= 0);
    throw new AttentionError({
      code: valid ? "tensor_size" : "tensor_shape",
      slot: what,
      message: valid ? `${what} has shape (${shape.join(", ")}) (${numel} values) but data holds ${length}` : `${what}.shape is not a list of sizes`,
      hint: valid ? "Give exactly as many values as the product of the shape, row-major." : "Sizes are whole numbers, 0 or more.",
    });
  }
  if (!(data instanceof Float32Array) || Object.getPrototypeOf(data) !== Float32Array.prototype) {
    try {
      data = Float32Array.from(data);
    } catch {
      // e.g. {length: 2 ** 40}: a RangeError from the typed-array constructor, not the library's error
      throw new AttentionError({ code: "tensor_size", slot: what, message: `${what}.data cannot be read as float32 values`, hint: "Give the values as a Float32Array or an array of numbers, row-major." });
    }
  }
  return { shape, data };
}

function copyTensor(t) {
  return { shape: t.shape.slice(), data: t.data.slice() };
}

function firstError(diagnostics) {
  return diagnostics.find((d) => d.severity === "error");
}

// Held values name only the core and the handle, never the JS object, so it can be collected.
const released = new FinalizationRegistry(({ release, handle }) => release(handle));

function disposedError(what) {
  return new AttentionError({ code: "disposed", slot: what, message: `this ${what} was disposed`, hint: what === "module" ? "Create it again with lab.create." : "Make a new one with lab.manualSeed(seed)." });
}

class Generator {
  #core;
  #handle;
  constructor(core, seed) {
    this.#core = core;
    this.seed = seed;
    this.#handle = unwrap(core.manualSeed(seed)).handle;
    released.register(this, { release: core.releaseGenerator, handle: this.#handle }, this);
  }
  /** @internal the handle of the generator's state in WASM memory */
  get _handle() {
    if (this.#handle === 0) throw disposedError("generator");
    return this.#handle;
  }
  /** @internal the MT19937 state (Uint32Array of 625 words), for tests */
  get _state() {
    return unwrap(this.#core.generatorState(this._handle)).state;
  }
  rand(shape) {
    if (!Array.isArray(shape)) throw new AttentionError({ code: "tensor_shape", slot: "shape", message: "shape must be an array of sizes", hint: "For example [6, 3]." });
    return unwrap(this.#core.rand(this._handle, plainShape(shape))).tensor;
  }
  dropout(tensor, p) {
    return unwrap(this.#core.dropout(this._handle, toTensor(tensor, "tensor"), typeof p === "number" ? p : NaN)).tensor;
  }
  /** Frees the generator's WASM memory now (otherwise garbage collection does it). */
  dispose() {
    if (this.#handle === 0) return;
    this.#core.releaseGenerator(this.#handle);
    released.unregister(this);
    this.#handle = 0;
  }
}

class AttentionModule {
  #core;
  #handle;
  #generator;
  constructor(lab, info, generator) {
    this.#core = lab._core;
    this.#handle = info.handle;
    this.#generator = generator;
    released.register(this, { release: lab._core.release, handle: info.handle }, this);
    this.className = info.className;
    this.config = Object.freeze({ ...info.config });
    this.headDim = info.headDim;
    this.outputWidth = info.outputWidth;
    this.outputWidthRule = info.outputWidthRule;
    this.parameterCount = info.parameterCount;
    Object.freeze(this);
  }

  /** @internal the handle of the module in WASM memory */
  get _handle() {
    if (this.#handle === 0) throw disposedError("module");
    return this.#handle;
  }

  parameters() {
    return unwrap(this.#core.parameters(this._handle)).parameters;
  }

  setParameter(name, tensor) {
    const t = toTensor(tensor, String(name));
    unwrap(this.#core.setParameter(this._handle, String(name), t));
  }

  forward(x, { training = true, generator, trace = false } = {}) {
    // Only dropout in training draws; otherwise the generator is left alone (as in PyTorch).
    const draws = Boolean(training) && this.config.dropout > 0;
    const gen = draws ? generator ?? this.#generator : null;
    const input = toTensor(x, "x");
    const r = unwrap(this.#core.forward(this._handle, input, Boolean(training), gen ? gen._handle : 0, Boolean(trace)));
    return trace ? { output: r.output, trace: r.trace } : { output: r.output };
  }

  /** Frees the module's WASM memory now (otherwise garbage collection does it); later calls throw `disposed`. */
  dispose() {
    if (this.#handle === 0) return;
    this.#core.release(this.#handle);
    released.unregister(this);
    this.#handle = 0;
  }
}

class Lab {
  constructor(core) {
    this._core = core;
    const specs = core.classes();
    this._specs = new Map(specs.map((s) => [s.name, s]));
    this.classes = Object.freeze(specs.map((s) => s.name));
  }

  slots(className) {
    const spec = this._specs.get(className);
    if (!spec) {
      throw new AttentionError({ code: "unknown_class", slot: "", message: `there is no class named '${className}'`, hint: `Use one of: ${this.classes.join(", ")}.` });
    }
    return spec.slots.map((s) => ({ ...s }));
  }

  parseCall(text) {
    if (typeof text !== "string") text = String(text ?? "");
    const r = this._core.parseCall(text);
    if (!r.ok) return { className: "", config: {}, slots: [], diagnostics: [{ severity: "error", code: r.error.code, slots: [], message: r.error.message, hint: r.error.hint, pytorch: "" }] };
    return { className: r.className, config: r.config, slots: r.slots, diagnostics: r.diagnostics };
  }

  check(className, config, { inputShape, training } = {}) {
    const r = this._core.check(String(className ?? ""), plainConfig(config), Array.isArray(inputShape) ? plainShape(inputShape) : null, typeof training === "boolean" ? training : null);
    if (!r.ok) return [{ severity: "error", code: r.error.code, slots: r.error.slot ? [r.error.slot] : [], message: r.error.message, hint: r.error.hint, pytorch: "" }];
    return r.diagnostics;
  }

  describe(className, config) {
    const r = this._core.describe(String(className ?? ""), plainConfig(config));
    if (!r.ok) return { ok: false, diagnostics: this.check(className, config) };
    const { valid, ...rest } = r;
    return { ...rest, ok: valid };
  }

  manualSeed(seed) {
    if (typeof seed !== "number" || !Number.isInteger(seed) || !Number.isSafeInteger(seed)) {
      throw new AttentionError({ code: "seed", slot: "seed", message: `the seed must be a whole number, got ${String(seed)}`, hint: "torch.manual_seed takes an int, e.g. 123." });
    }
    return new Generator(this._core, seed);
  }

  create(className, config, { generator } = {}) {
    const diagnostics = this.check(className, config);
    const error = firstError(diagnostics);
    if (error) {
      throw new AttentionError({ code: error.code, slot: error.slots[0] ?? "", message: error.message, hint: error.hint, diagnostics });
    }
    const gen = generator ?? this.manualSeed(123);
    const r = unwrap(this._core.create(String(className), plainConfig(config), gen._handle));
    return new AttentionModule(this, r, gen);
  }

  copyWeights(from, to, plan = {}, { tokens } = {}) {
    if (!(from instanceof AttentionModule) || !(to instanceof AttentionModule)) {
      throw new AttentionError({ code: "copy_unsupported", slot: "", message: "copyWeights takes two modules made by lab.create", hint: "" });
    }
    const r = unwrap(this._core.copyWeights(from._handle, to._handle, plainPlan(plan), tokens == null ? null : toTensor(tokens, "tokens")));
    return r.report;
  }

  /**
   * Loads one GPT-2 layer's attention from a .safetensors file into MultiHeadAttention(d, d, n_ctx,
   * 0.0, n_head, qkv_bias=True), reading only the header and the four tensors it needs.
   */
  async loadCheckpoint(source, { layer = 0, num_heads, context_length, into } = {}) {
    const reader = byteReader(source);
    const core = this._core;
    const first = await reader.read(0, Math.min(8, reader.size));
    const headerLength = unwrap(core.checkpointHeaderLength(first, reader.size)).length;
    const header = await reader.read(8, 8 + headerLength);
    const options = { layer: plainValue(layer), num_heads: plainValue(num_heads), context_length: plainValue(context_length) };
    if (into != null) {
      if (!(into instanceof AttentionModule)) {
        throw new AttentionError({ code: "checkpoint_config_mismatch", slot: "", message: "`into` must be a module made by lab.create", hint: "" });
      }
      options.into = { className: into.className, config: into.config };
    }
    const plan = unwrap(core.planCheckpoint(header, reader.size, options));
    const buffers = {};
    for (const { key, begin, end } of plan.needed) buffers[key] = await reader.read(begin, end);
    // all or nothing: `into` changes only after every check passed
    const r = unwrap(core.loadCheckpoint(header, reader.size, options, buffers, into != null ? into._handle : 0));
    if (into != null) return { module: into, report: r.report };
    return { module: new AttentionModule(this, r, this.manualSeed(123)), report: r.report };
  }

  /**
   * What GPT-2 layer `layer` sees for `tokenIds`: ln_1(wte[ids] + wpe[:T]) as (1, num_tokens, d),
   * reading one wte row per token, T wpe rows and ln_1 from the file.
   */
  async checkpointInput(source, { tokenIds, layer = 0 } = {}) {
    const reader = byteReader(source);
    const core = this._core;
    const first = await reader.read(0, Math.min(8, reader.size));
    const headerLength = unwrap(core.checkpointHeaderLength(first, reader.size)).length;
    const header = await reader.read(8, 8 + headerLength);
    const ids = Array.from(tokenIds ?? [], (id) => (typeof id === "number" ? id : -1));
    const plan = unwrap(core.planBlockInput(header, reader.size, ids, layer));
    const buffers = {};
    for (const { name, begin, end } of plan.reads) buffers[name] = await reader.read(begin, end);
    return unwrap(core.blockInput(header, reader.size, ids, layer, buffers)).tensor;
  }

  /** The equivalent multi-head config: wrapper d_out per head <-> fused d_out total. */
  equivalentConfig(className, config) {
    const r = unwrap(this._core.equivalentConfig(String(className ?? ""), plainConfig(config)));
    return { className: r.className, config: r.config, pythonCall: r.pythonCall };
  }

  /**
   * Wrapper -> equivalent fused MultiHeadAttention (heads stacked, out_proj = identity, zero bias) or
   * fused -> wrapper (head h = rows h*head_dim ...). layout "interleaved" builds the head-merge mistake.
   */
  convert(module, { layout = "stacked" } = {}) {
    if (!(module instanceof AttentionModule)) {
      throw new AttentionError({ code: "convert_unsupported", slot: "", message: "convert takes a module made by lab.create", hint: "" });
    }
    const r = unwrap(this._core.convert(module._handle, String(layout)));
    return { module: new AttentionModule(this, r, this.manualSeed(123)), code: r.code };
  }

  /** Runs both modules on x in eval mode and compares every stage they share (same id and shape). */
  compare(a, b, x) {
    if (!(a instanceof AttentionModule) || !(b instanceof AttentionModule)) {
      throw new AttentionError({ code: "compare_unsupported", slot: "", message: "compare takes two modules made by lab.create", hint: "" });
    }
    const r = unwrap(this._core.compare(a._handle, b._handle, toTensor(x, "x")));
    const worst = r.stages.reduce((m, s) => Math.max(m, s.maxAbsDiff), 0);
    return { stages: r.stages, maxAbsDiff: worst, agree: worst <= 1e-6 };
  }

  /**
   * Bytes the module's parameters plus a traced forward on `inputShape` need (the same estimate the
   * core checks before allocating), and the budget it checks against.
   */
  estimateBytes(className, config, inputShape) {
    const r = unwrap(this._core.estimateBytes(String(className ?? ""), plainConfig(config), Array.isArray(inputShape) ? plainShape(inputShape) : null));
    return { bytes: r.bytes, budget: r.budget };
  }

  /**
   * A module from plain data, e.g. `{className, config, parameters: m.parameters()}` sent to a Web
   * Worker: every parameter must be given with its PyTorch name and shape (AttentionError otherwise).
   */
  fromParameters(className, config, parameters, { generator } = {}) {
    const params = Array.from(parameters ?? [], (p) => {
      // A name that is not a string would reach embind's std::string and throw its own error type.
      if (typeof p?.name !== "string") {
        throw new AttentionError({ code: "unknown_parameter", slot: String(p?.name ?? ""), message: "every parameter needs its PyTorch name as a string", hint: "Pass the entries of module.parameters()." });
      }
      return { name: p.name, ...toTensor(p, p.name) };
    });
    const r = unwrap(this._core.fromParameters(String(className ?? ""), plainConfig(config), params));
    return new AttentionModule(this, r, generator ?? this.manualSeed(123));
  }

  /** The PyTorch lines of a v1/v2 copy plan (as report.code), without building the modules. */
  copyCode(fromClass, toClass, plan = {}) {
    return unwrap(this._core.copyCode(String(fromClass ?? ""), String(toClass ?? ""), plainPlan(plan))).code;
  }

  bookTokens() {
    return copyTensor(this._core.bookTokens());
  }

  sentenceTokens(words, dIn, seed) {
    if (!Array.isArray(words)) throw new AttentionError({ code: "tensor_shape", slot: "tokens", message: "words must be an array of strings", hint: 'For example "Your journey starts".split(/\\s+/).' });
    return unwrap(this._core.sentenceTokens(words.map((w) => (typeof w === "string" ? w : String(w))), typeof dIn === "number" ? dIn : NaN, typeof seed === "number" ? seed : NaN)).tensor;
  }

  seededTokens(numTokens, dIn, seed) {
    return unwrap(this._core.seededTokens(typeof numTokens === "number" ? numTokens : NaN, typeof dIn === "number" ? dIn : NaN, typeof seed === "number" ? seed : NaN)).tensor;
  }

  heapInUse() {
    return this._core.heapInUse();
  }

  /** How many modules and generators live in WASM memory now (released on dispose or collection). */
  handlesInUse() {
    return this._core.handlesInUse();
  }

  /** Input shape a class expects for `numTokens` tokens and batch `b`. */
  inputShape(className, numTokens, dIn, b = 1) {
    return BATCHED.has(className) ? [b, numTokens, dIn] : [numTokens, dIn];
  }
}

/** Random access to the bytes of an ArrayBuffer, a typed array, a Blob or a File (File.slice: never read whole). */
function byteReader(source) {
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    const bytes = source instanceof ArrayBuffer ? new Uint8Array(source) : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    return { size: bytes.length, read: async (begin, end) => bytes.slice(begin, Math.min(end, bytes.length)) };
  }
  if (typeof Blob !== "undefined" && source instanceof Blob) {
    return { size: source.size, read: async (begin, end) => new Uint8Array(await source.slice(begin, end).arrayBuffer()) };
  }
  throw new AttentionError({
    code: "checkpoint_source",
    slot: "",
    message: "a checkpoint must be an ArrayBuffer, a Blob or a File",
    hint: "Pass the File from a file picker or a drop event, or the ArrayBuffer of the file.",
  });
}

let labPromise;

/**
 * The WebAssembly binary beside this module: in browsers Emscripten's loader compiles it while it
 * streams in (WebAssembly.instantiateStreaming, application/wasm); Node 20's fetch cannot read a file
 * URL, so there it is read from disk and handed over as `wasmBinary`.
 */
async function coreOptions() {
  const isNode = typeof process === "object" && typeof process.versions?.node === "string" && typeof window === "undefined" && typeof self === "undefined";
  if (!isNode) return {};
  const { readFile } = await import("node:fs/promises");
  return { wasmBinary: await readFile(new URL("./attention_core.wasm", import.meta.url)) };
}

/** Loads the WASM core once (attention_core.mjs and its .wasm, no network beyond this package's own files). */
export function loadAttentionLab() {
  labPromise ??= coreOptions()
    .then((options) => createAttentionCore(options))
    .then((core) => new Lab(core));
  return labPromise;
}
