// attention-lab: the library API (the one module that calls the raw WASM bindings).
// Types and docs: ./attention-lab.d.ts. The page, the widget and the tests use only this facade.
//
// Lifetimes: the WASM side keeps nothing between calls. A module's parameters live here as
// Float32Arrays; each forward copies them in, runs, and copies every result out. So nothing needs
// .delete() and the WASM heap stays flat however many modules are made.
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
  let data = t.data;
  if (!(data instanceof Float32Array)) {
    try {
      data = Float32Array.from(data);
    } catch {
      // e.g. {length: 2 ** 40}: a RangeError from the typed-array constructor, not the library's error
      throw new AttentionError({ code: "tensor_size", slot: what, message: `${what}.data cannot be read as float32 values`, hint: "Give the values as a Float32Array or an array of numbers, row-major." });
    }
  }
  return { shape: t.shape.slice(), data };
}

function copyTensor(t) {
  return { shape: t.shape.slice(), data: t.data.slice() };
}

function firstError(diagnostics) {
  return diagnostics.find((d) => d.severity === "error");
}

class Generator {
  #core;
  #state;
  constructor(core, seed) {
    this.#core = core;
    this.seed = seed;
    this.#state = unwrap(core.manualSeed(seed)).state;
  }
  /** @internal the MT19937 state (Uint32Array of 625 words), passed to the core and advanced by it */
  get _state() {
    return this.#state;
  }
  set _state(s) {
    this.#state = s;
  }
  rand(shape) {
    const r = unwrap(this.#core.rand(this.#state, shape));
    this.#state = r.state;
    return r.tensor;
  }
  dropout(tensor, p) {
    const r = unwrap(this.#core.dropout(this.#state, toTensor(tensor, "tensor"), p));
    this.#state = r.state;
    return r.tensor;
  }
}

class AttentionModule {
  #lab;
  #params;
  #generator;
  constructor(lab, className, created, generator) {
    this.#lab = lab;
    this.#generator = generator;
    this.#params = created.parameters;
    this.className = className;
    this.config = Object.freeze({ ...created.config });
    this.headDim = created.headDim;
    this.outputWidth = created.outputWidth;
    this.outputWidthRule = created.outputWidthRule;
    this.parameterCount = created.parameterCount;
    Object.freeze(this);
  }

  parameters() {
    return this.#params.map((p) => ({ name: p.name, shape: p.shape.slice(), data: p.data.slice() }));
  }

  setParameter(name, tensor) {
    const index = this.#params.findIndex((p) => p.name === name);
    const t = toTensor(tensor, name);
    if (index < 0) {
      const names = this.#params.map((p) => p.name);
      throw new AttentionError({
        code: "unknown_parameter",
        slot: name,
        message: `${this.className} has no parameter named '${name}'`,
        hint: `Its parameters: ${names.join(", ")}.`,
      });
    }
    const current = this.#params[index];
    if (t.shape.length !== current.shape.length || t.shape.some((d, i) => d !== current.shape[i])) {
      const reversed = t.shape.length === 2 && current.shape.length === 2 && t.shape[0] === current.shape[1] && t.shape[1] === current.shape[0];
      throw new AttentionError({
        code: "parameter_shape",
        slot: name,
        message: `${name} has shape (${current.shape.join(", ")}), got (${t.shape.join(", ")})`,
        hint: reversed ? "The shape is exactly reversed: it looks transposed. Use .T on it." : `Give a tensor of shape (${current.shape.join(", ")}).`,
      });
    }
    if (t.data.length !== current.data.length) {
      throw new AttentionError({ code: "tensor_size", slot: name, message: `${name}: data holds ${t.data.length} values, shape needs ${current.data.length}`, hint: "" });
    }
    this.#params[index] = { name, shape: current.shape.slice(), data: t.data.slice() };
  }

  forward(x, { training = true, generator, trace = false } = {}) {
    // Only dropout in training draws; otherwise the generator is left alone (as in PyTorch).
    const draws = Boolean(training) && this.config.dropout > 0;
    const gen = draws ? generator ?? this.#generator : null;
    const core = this.#lab._core;
    const r = unwrap(core.forward(this.className, this.config, this.#params, toTensor(x, "x"), Boolean(training), gen ? gen._state : null, Boolean(trace)));
    if (gen) gen._state = r.state;
    return trace ? { output: r.output, trace: r.trace } : { output: r.output };
  }

  /** @internal raw parameter list for the facade (no copies) */
  get _params() {
    return this.#params;
  }
  set _params(p) {
    this.#params = p;
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
    const r = this._core.check(String(className ?? ""), config ?? {}, Array.isArray(inputShape) ? inputShape : null, typeof training === "boolean" ? training : null);
    if (!r.ok) return [{ severity: "error", code: r.error.code, slots: r.error.slot ? [r.error.slot] : [], message: r.error.message, hint: r.error.hint, pytorch: "" }];
    return r.diagnostics;
  }

  describe(className, config) {
    const r = this._core.describe(String(className ?? ""), config ?? {});
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
    const r = unwrap(this._core.create(className, config, gen._state));
    gen._state = r.state;
    return new AttentionModule(this, className, r, gen);
  }

  copyWeights(from, to, plan = {}, { tokens } = {}) {
    if (!(from instanceof AttentionModule) || !(to instanceof AttentionModule)) {
      throw new AttentionError({ code: "copy_unsupported", slot: "", message: "copyWeights takes two modules made by lab.create", hint: "" });
    }
    const r = unwrap(
      this._core.copyWeights(from.className, from.config, from._params, to.className, to.config, to._params, plan ?? {}, tokens == null ? null : toTensor(tokens, "tokens")),
    );
    to._params = r.parameters;
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
    const options = { layer, num_heads, context_length };
    if (into != null) {
      if (!(into instanceof AttentionModule)) {
        throw new AttentionError({ code: "checkpoint_config_mismatch", slot: "", message: "`into` must be a module made by lab.create", hint: "" });
      }
      options.into = { className: into.className, config: into.config };
    }
    const plan = unwrap(core.planCheckpoint(header, reader.size, options));
    const buffers = {};
    for (const { key, begin, end } of plan.needed) buffers[key] = await reader.read(begin, end);
    const r = unwrap(core.loadCheckpoint(header, reader.size, options, buffers));
    if (into != null) {
      into._params = r.parameters;  // all or nothing: only after every check passed
      return { module: into, report: r.report };
    }
    return { module: new AttentionModule(this, "MultiHeadAttention", r, this.manualSeed(123)), report: r.report };
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
    const ids = Array.from(tokenIds ?? []);
    const plan = unwrap(core.planBlockInput(header, reader.size, ids, layer));
    const buffers = {};
    for (const { name, begin, end } of plan.reads) buffers[name] = await reader.read(begin, end);
    return unwrap(core.blockInput(header, reader.size, ids, layer, buffers)).tensor;
  }

  /** The equivalent multi-head config: wrapper d_out per head <-> fused d_out total. */
  equivalentConfig(className, config) {
    const r = unwrap(this._core.equivalentConfig(String(className ?? ""), config ?? {}));
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
    const r = unwrap(this._core.convert(module.className, module.config, module._params, layout));
    return { module: new AttentionModule(this, r.className, r, this.manualSeed(123)), code: r.code };
  }

  /** Runs both modules on x in eval mode and compares every stage they share (same id and shape). */
  compare(a, b, x) {
    if (!(a instanceof AttentionModule) || !(b instanceof AttentionModule)) {
      throw new AttentionError({ code: "compare_unsupported", slot: "", message: "compare takes two modules made by lab.create", hint: "" });
    }
    const r = unwrap(this._core.compare(a.className, a.config, a._params, b.className, b.config, b._params, toTensor(x, "x")));
    const worst = r.stages.reduce((m, s) => Math.max(m, s.maxAbsDiff), 0);
    return { stages: r.stages, maxAbsDiff: worst, agree: worst <= 1e-6 };
  }

  /**
   * Bytes the module's parameters plus a traced forward on `inputShape` need (the same estimate the
   * core checks before allocating), and the budget it checks against.
   */
  estimateBytes(className, config, inputShape) {
    const r = unwrap(this._core.estimateBytes(String(className ?? ""), config ?? {}, Array.isArray(inputShape) ? inputShape : null));
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
    const r = unwrap(this._core.fromParameters(String(className ?? ""), config ?? {}, params));
    const given = new Set(params.map((p) => p.name));
    const missing = r.parameters.map((p) => p.name).filter((n) => !given.has(n));
    if (missing.length) {
      throw new AttentionError({ code: "missing_parameter", slot: missing[0], message: `no values given for ${missing.join(", ")}`, hint: "Pass every entry of module.parameters()." });
    }
    return new AttentionModule(this, r.className, r, generator ?? this.manualSeed(123));
  }

  /** The PyTorch lines of a v1/v2 copy plan (as report.code), without building the modules. */
  copyCode(fromClass, toClass, plan = {}) {
    return unwrap(this._core.copyCode(String(fromClass ?? ""), String(toClass ?? ""), plan ?? {})).code;
  }

  bookTokens() {
    return copyTensor(this._core.bookTokens());
  }

  sentenceTokens(words, dIn, seed) {
    if (!Array.isArray(words)) throw new AttentionError({ code: "tensor_shape", slot: "tokens", message: "words must be an array of strings", hint: 'For example "Your journey starts".split(/\\s+/).' });
    return unwrap(this._core.sentenceTokens(words.map(String), dIn, seed)).tensor;
  }

  seededTokens(numTokens, dIn, seed) {
    return unwrap(this._core.seededTokens(numTokens, dIn, seed)).tensor;
  }

  heapInUse() {
    return this._core.heapInUse();
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

/** Loads the WASM core once (one ~800 kB module, no network beyond this package's own files). */
export function loadAttentionLab() {
  labPromise ??= createAttentionCore().then((core) => new Lab(core));
  return labPromise;
}
