// The lab that loadAttentionLab resolves to: the core's facts about the classes, setups, runs, modules,
// copies and comparisons. Its calls that read a file (openCheckpoint, loadCheckpoint, loadGPT2,
// checkpointInput, checkModule of a check file) are lab-files.js's, which imports the code that reads
// files on first use: a page that reads no file never loads it.
import { checkArguments } from "./check-module.js";
import { CheckpointFile, isBlob } from "./checkpoint-file.js";
import { AttentionModule, Generator, estimateOf, isLazy, moduleFacts } from "./handles.js";
import { heldResults } from "./held-results.js";
import { deepFreeze, plainConfig, plainPlan, plainShape, plainString, readOptions, toTensor, unwrap } from "./inputs.js";
import * as files from "./lab-files.js";
import { Trace } from "./trace.js";
import { AttentionError, isArrayBuffer, notASeed, reading, valueText } from "./values.js";

/** A Setup's description, flat as describe gives it (null when the config is not valid). */
function flatDescription(d) {
  if (!d) return null;
  const { module: { className: _name, ...facts }, ...rest } = d;
  return { ...facts, ...rest };
}

function firstError(diagnostics) {
  return diagnostics.find((d) => d.severity === "error");
}

export class Lab {
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

  /** Loads one GPT-2 layer's attention from a checkpoint (lab-files.js; see the .d.ts). */
  async loadCheckpoint(source, options) {
    return files.loadCheckpoint(this, source, options);
  }

  /** Opens a .safetensors or torch.save file once (lab-files.js; see the .d.ts). */
  async openCheckpoint(source) {
    return files.openCheckpoint(this, source);
  }

  /** Opens a GPT-2 file for the whole model (lab-files.js; see the .d.ts). */
  async loadGPT2(source, options) {
    return files.loadGPT2(this, source, options);
  }

  /** What a GPT-2 layer's attention really sees for token ids (lab-files.js; see the .d.ts). */
  async checkpointInput(source, options) {
    return files.checkpointInput(this, source, options);
  }

  /**
   * Whether this lab reads checkpoints (openCheckpoint, loadCheckpoint, checkpointInput, loadGPT2):
   * false for a lean binary (loadAttentionLab({checkpoints: false}): attention_core_lean*.wasm, built
   * without those readers), true for every other.
   */
  get hasCheckpoints() {
    return typeof this._core.checkpointOpen === "function";
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
    if (CheckpointFile.is(file) || isArrayBuffer(file) || ArrayBuffer.isView(file) || isBlob(file)) return files.checkFile(this, file);
    const args = checkArguments(file, toTensor);
    // A full heap with results alive is blamed on them when a traced forward of the call on x fits (the check's own peak adds a module).
    const need = () => {
      const { className, config } = unwrap(this._core.parseCall(args[0]));
      return estimateOf(this._core, className, config, args[2].shape, true);
    };
    return unwrap(heldResults(this._core).attempt(() => this._core.checkModule(...args), need, "this check"));
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
