// The whole GPT-2 model of a file (lab.loadGPT2): runs, a layer's attention input and generation, each
// step reading only the byte ranges the core names. Loaded with checkpoint-calls.js.
import { checkSignal, readRanges } from "./file-reads.js";
import { Generator } from "./handles.js";
import { heldResults } from "./held-results.js";
import { attentionMode, numberOption, readOptions, readTokenIds, unwrap } from "./inputs.js";
import { AttentionError, valueText } from "./values.js";

/**
 * A GPT-2 .safetensors file opened by lab.loadGPT2: its header is parsed once (in WASM), and each run
 * reads only the byte ranges of the step it is on: the tokens' wte rows and wpe[:T], then one block at a
 * time, then ln_f and wte in chunks for the logits at the last position.
 */
export class GPT2Model {
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
