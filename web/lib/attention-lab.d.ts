/**
 * attention-lab — the library API (hand-written; checked by tests/node/types.test.mjs).
 *
 * Tensors are row-major float32: `{shape, data}` with `data.length === shape.reduce((a, b) => a * b, 1)`.
 * Names follow "Build a Large Language Model (From Scratch)", chapter 3, and PyTorch.
 */

/** A row-major float32 tensor. */
export interface Tensor {
  shape: number[];
  data: Float32Array;
}

/** What a caller may pass where a tensor is expected (plain arrays are copied into a Float32Array). */
export interface TensorLike {
  shape: number[];
  data: Float32Array | ArrayLike<number>;
}

export type ClassName =
  | "SelfAttention_v1"
  | "SelfAttention_v2"
  | "CausalAttention"
  | "MultiHeadAttentionWrapper"
  | "MultiHeadAttention"
  // the book's chapter 3 bonus material: the same multi-head attention written other ways
  // (ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb, pkg/llms_from_scratch/ch03.py)
  | "MultiHeadAttentionCombinedQKV"
  | "MHAEinsum"
  | "MHAPyTorchScaledDotProduct"
  | "MHAPyTorchSDPAWithoutFlash"
  | "MHAPyTorchFlexAttention"
  | "MHAPyTorchClass"
  | "PyTorchMultiHeadAttention"
  // the book's chapter 4 bonus material (ch04/04_gqa, ch04/05_mla, ch04/06_swa), without the KV cache
  | "GroupedQueryAttention"
  | "MultiHeadLatentAttention"
  | "MultiHeadAttentionWithSWA";

export type SlotName = "d_in" | "d_out" | "context_length" | "dropout" | "num_heads" | "qkv_bias" | "num_kv_groups" | "dtype" | "sliding_window_size" | "latent_dim" | "need_weights";

/** A constructor slot of one class, in the order of the Python signature. */
export interface SlotSpec {
  name: SlotName;
  /** 1-based position in the constructor call. */
  position: number;
  /** "int | None": an int or None (sliding_window_size; latent_dim, whose None is max(16, d_out // 8)); "torch.dtype | None": None or torch.float32. */
  type: "int" | "float" | "bool" | "int | None" | "torch.dtype | None";
  /** The Python default (null for a default of None), or undefined when the slot is required. */
  default: number | boolean | null | undefined;
  /** One line: what the slot means. */
  doc: string;
}

/**
 * A slot value: a number, a boolean, or a string holding Python literal text as typed in a form field
 * ("768", "0.0", "True"), read exactly as the same text in a pasted call. Anything else is diagnosed.
 */
export type SlotValue = number | boolean | string | null;
export type Config = Partial<Record<SlotName, SlotValue>> & Record<string, SlotValue>;

// BEGIN generated from core/include/attention_lab/error_codes.hpp by scripts/error-codes.mjs
/**
 * Every code an AttentionError or a Diagnostic carries, with what it means. Codes are stable; tests
 * assert them (tests/node/facade-fuzz.test.mjs checks that every error thrown carries one of these).
 * The list lives in core/include/attention_lab/error_codes.hpp (kErrorCodes): add a code there, then run
 * `node scripts/error-codes.mjs`, which writes this union.
 */
export type ErrorCode =
  // slots and pasted calls (check, parseCall, create)
  /** no such class */
  | "unknown_class"
  /** a slot the class does not have (did-you-mean in the hint) */
  | "unknown_slot"
  /** a required slot is not given */
  | "missing_slot"
  /** a slot given twice in a call */
  | "duplicate_slot"
  /** more positional values than the class takes */
  | "extra_positional"
  /** Python's own syntax rule */
  | "positional_after_keyword"
  /** the call text is not a Python call */
  | "syntax"
  /** no call text */
  | "empty"
  /** call text over the length limit */
  | "too_long"
  /** a value that is not a Python literal */
  | "not_a_literal"
  /** e.g. a float where an int goes */
  | "wrong_type"
  /** dropout outside [0, 1] */
  | "dropout_range"
  /** a size of 0 or less */
  | "non_positive"
  /** d_out not divisible by num_heads (the fused classes) */
  | "heads_divisibility"
  /** GroupedQueryAttention: num_heads not divisible by num_kv_groups */
  | "kv_groups_divisibility"
  /** a bonus class given MultiHeadAttention's order (context_length where dropout goes, or num_heads where context_length goes) */
  | "mha_slot_order"
  /** a class whose forward works on x's own width (a view, an einsum, nn.MultiheadAttention's embed_dim) given d_in != d_out */
  | "d_in_d_out_differ"
  /** a dtype other than None or torch.float32 */
  | "dtype"
  /** two values that look swapped (d_in/d_out, dropout/num_heads) */
  | "slots_swapped"
  /** over the memory budget (the core's one budget: the page refuses runs by it too), or beyond any model */
  | "too_large"
  /** input of the wrong rank for the class */
  | "input_rank"
  /** input's last axis is not d_in */
  | "input_width"
  /** no tokens */
  | "input_empty"
  /** more tokens than context_length */
  | "context_too_short"
  /** warning: a layer count where a head count goes */
  | "layer_count_as_heads"
  /** warning: the wrapper's d_out is per head */
  | "wrapper_total_width"
  /** info: one head */
  | "one_head"
  /** warning: 0/1 for qkv_bias */
  | "bool_as_int"
  /** info: d_in == d_out hides a missing transpose */
  | "square_weights"
  /** warning: dropout has no effect in eval mode */
  | "dropout_eval"
  /** warning: dropout = 1.0 zeroes every attention weight in training mode */
  | "dropout_all"
  /** warning: the class stores dropout but its forward applies none (FlexAttention) */
  | "dropout_ignored"
  /** warning: a boolean mask passed where True means "attend", so each query sees only later keys (NaN rows) */
  | "inverted_mask"
  /** finite inputs gave NaN or infinity; names the first stage and where (a module forward's warning; a GPT-2 run's error, naming the block) */
  | "non_finite_stage"
  // tensors and parameters
  /** not a {shape, data} tensor, or sizes that are not whole numbers */
  | "tensor_shape"
  /** data length does not fit the shape */
  | "tensor_size"
  /** an axis out of range */
  | "tensor_axis"
  /** NaN or infinity in the input */
  | "non_finite_input"
  /** NaN or infinity in a parameter (names it and the first index) */
  | "non_finite_parameter"
  /** a parameter the class has was not given */
  | "missing_parameter"
  /** a name the class has no parameter (or buffer) for */
  | "unknown_parameter"
  /** a parameter of the wrong shape */
  | "parameter_shape"
  /** a state_dict mask buffer that is not the causal mask of context_length */
  | "mask_buffer"
  // generators
  /** a seed that is not a whole number */
  | "seed"
  /** a generator option not made by manualSeed */
  | "generator"
  /** dropout in training mode needs a generator */
  | "generator_missing"
  /** a generator state that cannot be restored */
  | "generator_state"
  // KV caches (module.newCache, forward with a cache)
  /** a KV cache for a class without a causal mask over its own keys */
  | "cache_unsupported"
  /** a chunk whose batch size differs from the earlier chunks of its cache */
  | "cache_batch"
  /** a cache past context_length (the mask buffer's rows) without a window */
  | "cache_full"
  /** a chunk longer than the cache's window (a module's chunk, or a GPT-2 prompt longer than generate's window), or a window that is not a whole number from 1 */
  | "cache_window"
  /** a cache used with another module than the one that made it */
  | "cache_module"
  // copies, conversions, comparisons
  /** a copy plan entry that does not fit */
  | "copy_plan"
  /** copyWeights between these classes is not supported */
  | "copy_unsupported"
  /** layout not "stacked" or "interleaved" */
  | "convert_layout"
  /** convert takes a wrapper or a fused MultiHeadAttention */
  | "convert_unsupported"
  /** compare takes two modules */
  | "compare_unsupported"
  // checkpoints (loadCheckpoint, checkpointInput)
  /** not an ArrayBuffer, view or Blob, or a detached buffer */
  | "checkpoint_source"
  /** the file could not be read */
  | "checkpoint_read"
  /** the file is cut off */
  | "checkpoint_truncated"
  /** not a safetensors header (names the byte) */
  | "checkpoint_bad_header"
  /** a key given twice in the header */
  | "checkpoint_duplicate_key"
  /** offsets that overlap, leave a hole, or disagree with the shape */
  | "checkpoint_bad_offsets"
  /** weights that are not floating point */
  | "checkpoint_dtype"
  /** a key the layer needs is missing */
  | "checkpoint_missing_key"
  /** no such layer, or a layer that is not a whole number */
  | "checkpoint_layer"
  /** a tensor of the wrong shape for GPT-2 */
  | "checkpoint_shape"
  /** the head count is needed or does not divide d */
  | "checkpoint_num_heads"
  /** context_length cannot be found */
  | "checkpoint_context_length"
  /** `into` does not fit the file */
  | "checkpoint_config_mismatch"
  /** a token id outside the vocabulary */
  | "checkpoint_token"
  // loading the core (loadAttentionLab)
  /** loadAttentionLab given an option it does not have, or both wasmUrl and wasmBinary */
  | "wasm_options"
  /** wasmUrl that is not a URL or a non-empty string, or a .wasm that cannot be located (a classic-script bundle) */
  | "wasm_url"
  /** wasmBinary (or what wasmUrl served) that is not attention_core.wasm: not bytes, detached, no \0asm magic, or from another build */
  | "wasm_binary"
  /** the .wasm could not be fetched or read (network error, HTTP status, missing file); names the URL */
  | "wasm_fetch"
  /** the core is already loaded from another source (it is loaded once: pass the options on the first call) */
  | "wasm_loaded"
  // arguments and lifetimes
  /** reading an argument threw (a getter, a Proxy trap) */
  | "unreadable_argument"
  /** an options argument that is not an object */
  | "bad_options"
  /** the module, generator, checkpoint file or GPT-2 model was disposed */
  | "disposed"
  /** a GPT-2 model is already running (one run at a time per model) */
  | "busy"
  /** a GPT-2 run was cancelled through its signal */
  | "cancelled"
  /** an option of model.run out of its range (attention: "full" or "thumbnails"); names it */
  | "run_option"
  /** an option of model.generate out of its range (maxNewTokens, temperature, topK, eosId, cache, resident, window, attention); names it */
  | "generate_option"
  /** a GPT-2 KV cache past the position table: prompt + maxNewTokens - 1 > n_ctx, with a window too (names both) */
  | "cache_context"
  /** sampling met probabilities that are not finite (torch.multinomial refuses them too) */
  | "non_finite_probabilities"
  /** a GPT-2 run's onProgress callback threw (the run stopped) */
  | "callback"
  // failures (never expected; please report them)
  /** the WebAssembly heap ran out */
  | "out_of_memory"
  /** a bug in attention-lab */
  | "internal"
  // the page's own codes (web/app; the library never raises them)
  /** the book's embeddings (3 numbers wide) chosen while d_in is not 3 */
  | "book_tokens_width"
  /** a typed token grid whose column count is not d_in */
  | "grid_width"
  /** a cell of the typed token grid that is not a number */
  | "grid_value"
  /** info: a run big enough to go to the background worker */
  | "large_run"
  /** el.run() on a setup that cannot run for a reason with no code of its own (no words, a bad token count) */
  | "blocked"
  /** the background worker failed (it could not load, or crashed) */
  | "worker"
  /** loading a checkpoint into the current module without a valid MultiHeadAttention in the setup */
  | "checkpoint_target"
  /** a checkpoint run given no token */
  | "no_tokens"
  /** GPT-2's tokenizer could not be loaded */
  | "tokenizer"
  /** something thrown without a code (the page's fallback) */
  | "error";
// END generated

export interface Diagnostic {
  severity: "error" | "warning" | "info";
  /** Stable machine code, e.g. "heads_divisibility", "missing_slot", "input_width". */
  code: ErrorCode;
  /** The slots involved (may be empty for class-level or input problems). */
  slots: string[];
  message: string;
  /** How to fix it. */
  hint: string;
  /** What PyTorch itself raises for this setup, when it raises at all ("" when it runs silently). */
  pytorch: string;
  /**
   * Values that would fix it (slot text as typed), e.g. [{slot: "num_heads", value: "12", call: ""}]; empty
   * when none is known. When several slots must change together (values in the wrong slots), one fix
   * holds the whole corrected call instead: {slot: "", value: "", call: "GroupedQueryAttention(768, 768, 0.0, 12, 4)"}.
   */
  fixes: Array<{ slot: string; value: string; call: string }>;
}

export interface ParsedSlot {
  name: string;
  /** 1-based slot position in the class signature (0 for an unknown keyword). */
  position: number;
  value: SlotValue;
  source: "positional" | "keyword" | "default";
  /** The text as written in the call ("" for defaults). */
  text: string;
}

export interface ParsedCall {
  /** "" when no class name could be read. */
  className: string;
  config: Config;
  /** Every slot given or defaulted, left to right (a missing required slot is absent and diagnosed), then unknown keywords. */
  slots: ParsedSlot[];
  diagnostics: Diagnostic[];
}

export interface ParameterInfo {
  name: string;
  shape: number[];
  count: number;
}

/** Derived facts of a configuration, available before anything is allocated. */
export interface Description {
  /** false when any diagnostic is an error; the derived facts below are then absent. */
  ok: boolean;
  diagnostics: Diagnostic[];
  /** Every slot with defaults filled in. */
  config?: Record<SlotName, number | boolean>;
  /** The positional Python call, e.g. "MultiHeadAttention(768, 768, 1024, 0.0, 12)". */
  pythonCall?: string;
  headDim?: number;
  outputWidth?: number;
  outputWidthRule?: string;
  parameters?: ParameterInfo[];
  parameterCount?: number;
  /** Bytes of the registered mask buffer (context_length^2 elements of maskBufferDtype), 0 for classes without one. */
  maskBytes?: number;
  /** Key/value heads (GroupedQueryAttention: num_kv_groups; query head h reads key/value head floor(h / (num_heads / num_kv_groups))). */
  keyValueHeads?: number;
  /** float32 bytes a KV cache holds per token and layer: 2 x keyValueHeads x head_dim x 4, or latentDim x 4 where keys and values are re-projected from a latent (MultiHeadLatentAttention caches the latent alone). */
  kvCacheBytesPerToken?: number;
  /** The same for multi-head attention of this width (2 x d_out x 4): what grouping saves. */
  kvCacheBytesPerTokenMha?: number;
  /** MultiHeadAttentionWithSWA's window (null: plain causal or no window slot). */
  slidingWindowSize?: number | null;
  /** Width of the latent c_kv = W_DKV(x) keys and values are re-projected from (MultiHeadLatentAttention: latent_dim, or max(16, d_out // 8) for None); null without a latent. */
  latentDim?: number | null;
  /** What the core knows about the class, whatever the config (absent for an unknown class name). */
  class?: ClassFacts;
}

/**
 * What a page shows before a run, from one call into the core (`lab.setup`): the same values as
 * `check`, `describe` and `estimateBytes` on the same arguments, computed together (core/include/attention_lab/setup.hpp).
 */
export interface Setup {
  className: string;
  /** No error among the configuration's own diagnostics (= description.ok): the module can be built. */
  ok: boolean;
  /** = check(className, config, {inputShape, training}): the configuration's, then the input's and the mode's. */
  diagnostics: Diagnostic[];
  /** = describe(className, config): the configuration alone (its diagnostics have no input checks). */
  description: Description;
  /**
   * = estimateBytes(className, config, inputShape, {trace}) when ok (the module alone without inputShape); null otherwise.
   * `budget` is the core's one memory budget: with `trace` true (the default), `diagnostics` holds a too_large error
   * exactly when bytes is over it.
   */
  memory: { bytes: number; budget: number } | null;
}

/** One seeded construction and one forward pass (`lab.run`): the module's facts and what it gave. */
export interface RunResult {
  className: ClassName;
  /** Every slot with defaults filled in. */
  config: Record<SlotName, number | boolean>;
  pythonCall: string;
  headDim: number;
  outputWidth: number;
  outputWidthRule: string;
  output: Tensor;
  /** Present unless `trace: false` was passed. */
  trace?: Stage[];
  /** Always an array: empty, or the "non_finite_stage" warning of ForwardResult.warnings. */
  warnings: Diagnostic[];
}

/** A ready setup for a class: slot texts as typed, which tokens, batch size, and what to know about it. */
export interface Preset {
  /** Stable id, e.g. "gpt2Small". */
  key: string;
  /** Slot name -> text, e.g. {d_in: "768", ..., qkv_bias: "False"}. */
  slots: Record<string, string>;
  /** "book": the chapter's six 3-d tokens; "sentence": seeded embeddings of width d_in. */
  tokens: "book" | "sentence";
  batch: number;
  /** E.g. why qkv_bias is False in the GPT-2 presets. */
  note: string;
  /** Place among every class's presets as a page lists them (the book's examples first). */
  order: number;
}

/** The core's facts about one class: the page and the widget read them and keep no copy. */
export interface ClassFacts {
  name: ClassName;
  doc: string;
  /** The book section, e.g. "section 3.6.2", or the bonus folder and file. */
  source: string;
  /** Where the class lives in the book's repository; section is "" for bonus material. */
  book: { chapter: string; folder: string; file: string; section: string };
  slots: SlotSpec[];
  /** The axes of forward's input, e.g. ["b", "num_tokens", "d_in"] (row-major). */
  inputAxes: string[];
  /** How heads are made: one head, separate modules concatenated (the wrapper), or one fused projection split into heads. */
  heads: "single" | "modules" | "fused";
  /** The mask: none, the causal buffer cut to the tokens, causal built for the tokens given (with
   * sliding_window_size when the class has it), or a buffer passed inverted (a reproduced bug: NaN rows). */
  mask: "none" | "causal_buffer" | "causal_tokens" | "inverted_buffer";
  /** The registered mask buffer's dtype ("" when the class registers none). */
  maskBufferDtype: "float32" | "bool" | "";
  /** Whether the forward reads context_length, so that num_tokens > context_length is refused. */
  contextLimit: boolean;
  /** Dropout on the attention weights, none, or a dropout slot the forward ignores (FlexAttention). */
  dropoutRule: "none" | "weights" | "ignored";
  /** Whether PyTorch's forward needs d_in == d_out (a view to x's width, an einsum, nn.MultiheadAttention's embed_dim). */
  needsSquare: boolean;
  /** Classes whose modules copyWeights copies into this one with the book's map, with a sentence on the outcome. */
  copiesFrom: { from: ClassName; note: string }[];
  presets: Preset[];
  /** Stages agree when no value differs by more than this (1e-6). */
  tolerance: number;
  /** The variable the book's listings give a module of this class: "sa_v1", "sa_v2", "ca", "wrapper", "mha". */
  pythonName: string;
  /** The seed the book calls torch.manual_seed with before building one (789 for SelfAttention_v2 in exercise 3.1, else 123). */
  bookSeed: number;
  /** "matrix": nn.Parameter used as x @ W (SelfAttention_v1, MHAEinsum); "linear": nn.Linear, weight (d_out, d_in). */
  weights: "matrix" | "linear";
  /** Classes copyWeights takes this class's matrices to (exercise 3.1: v1 <-> v2). */
  copiesWith: ClassName[];
  /** The class convert / equivalentConfig turn this one into ("" when none). */
  convertsTo: ClassName | "";
  /** Whether loadCheckpoint loads a GPT-2 layer into this class (MultiHeadAttention). */
  loadsCheckpoints: boolean;
}

/** One stage of a forward pass. `axes` names each axis of `shape`. */
/** The whole stage at a glance, computed by the core: min, max and mean over its finite values (NaN when none). */
export interface StageSummary {
  min: number;
  max: number;
  mean: number;
  /** Values that are -inf (masked scores). */
  negInf: number;
  /** Values that are exactly 0 (masked or dropped weights). */
  zeros: number;
  count: number;
}

export interface Stage extends Tensor {
  /** input, queries, c_kv (a latent class's latent, (b, num_tokens, latent_dim)), cache_c_kv (a cached step of a latent class: every latent row the cache holds, (b, T_past + T_new, latent_dim)), keys, values, cache_k, cache_v (a cached step of the others), attn_scores, mask, attn_scores_masked, attn_weights, attn_weights_dropout, context_vec, heads_concat, out_proj, proj, output: those the class has, in this order. */
  id: string;
  title: string;
  formula: string;
  axes: string[];
  summary: StageSummary;
  /** One summary per slice over the last two axes, in order (per batch item and head for (b, num_heads, T, T)). */
  sliceSummaries: StageSummary[];
}

export interface ForwardResult {
  output: Tensor;
  /** Present when `trace: true` was passed. */
  trace?: Stage[];
  /**
   * Present only when finite inputs gave an output with NaN or infinity: one "non_finite_stage"
   * warning naming the first stage that turned non-finite (`slots[0]` is its stage id) and where in it
   * (b, head, row). The core reruns the forward traced to find it when the output is not finite.
   */
  warnings?: Diagnostic[];
}

/** A random stream equal to PyTorch's CPU default generator after `torch.manual_seed(seed)`. */
export interface Generator {
  readonly seed: number;
  /** torch.rand(*shape) */
  rand(shape: number[]): Tensor;
  /** nn.Dropout(p) in training mode applied to `tensor` (survivors scaled by 1/(1-p)). */
  dropout(tensor: TensorLike, p: number): Tensor;
  /**
   * Frees the generator's state in WASM memory now; garbage collection does it otherwise (nothing
   * needs calling). Using it afterwards throws AttentionError "disposed" (slot "generator").
   */
  dispose(): void;
}

/**
 * A KV cache of one module (module.newCache), in WASM memory. Its numbers follow each cached forward.
 * Forward refusals (the cache is left as it was): cache_batch (another batch size than its earlier
 * chunks), cache_full (past context_length without a window), cache_window (a chunk longer than the
 * window), cache_module (another module's cache), disposed (slot "cache").
 */
export interface KvCache {
  /** 0 when it grows by concatenation; else the most entries it keeps. */
  readonly window: number;
  /** Tokens seen so far: the position of the next chunk's first token. */
  readonly position: number;
  /** Entries held: keys, and as many values, per key/value head (MultiHeadLatentAttention: latent rows c_kv). */
  readonly tokens: number;
  /**
   * Bytes held: the float32 keys and values, per key/value head (b x 2 x kv_heads x tokens x head_dim
   * x 4), or for MultiHeadLatentAttention its latent c_kv alone (b x tokens x latent_dim x 4).
   */
  readonly bytes: number;
  /** What MultiHeadAttention of the same width would hold for as many tokens: b x tokens x 2 x outputWidth x 4 bytes (the core's rule). */
  readonly bytesMha: number;
  /** Empties the cache (the book's reset_cache): the next chunk is at position 0. */
  reset(): void;
  /** Frees the cache's memory now (garbage collection does it otherwise). */
  dispose(): void;
}

export interface AttentionModule {
  readonly className: ClassName;
  readonly config: Readonly<Record<SlotName, number | boolean>>;
  /** d_k used in the 1/sqrt(d_k) scaling. */
  readonly headDim: number;
  readonly outputWidth: number;
  /** e.g. "num_heads x d_out = 2 x 1 = 2". */
  readonly outputWidthRule: string;
  readonly parameterCount: number;
  /** What fromParameters checked besides the parameters (e.g. a state_dict's causal mask buffer); empty otherwise. */
  readonly notes: readonly string[];
  /** Copies of every parameter, in PyTorch's named_parameters() order and names. */
  parameters(): Array<{ name: string; shape: number[]; data: Float32Array }>;
  /** Throws AttentionError ("unknown_parameter" | "parameter_shape") on a bad name or shape. */
  setParameter(name: string, tensor: TensorLike): void;
  /**
   * Input `(num_tokens, d_in)` for the SelfAttention classes, `(b, num_tokens, d_in)` otherwise.
   * `training` defaults to true (a fresh PyTorch module is in training mode).
   * Throws AttentionError (slot "x" unless named): tensor_shape, tensor_size, input_rank, input_empty,
   * input_width ("d_in"), context_too_short ("context_length"), too_large (the traced run is over the
   * memory budget; refused before allocating), non_finite_input.
   */
  forward(x: TensorLike, options?: { training?: boolean; generator?: Generator; trace?: boolean; cache?: KvCache }): ForwardResult;
  /**
   * An empty KV cache for this module (the book's cache_k / cache_v, ch04/03_kv-cache). Pass it as
   * `forward(chunk, {training: false, cache})`: the chunk `(b, num_tokens, d_in)` comes after every
   * token the cache has seen, its keys and values are appended, and the output is the chunk's (equal to
   * the uncached forward's rows within 1e-6, for any chunking). The trace of a cached step has scores
   * `(b, num_heads, T_new, T_past + T_new)`, the mask rows of the chunk's positions, and stages
   * `cache_k` / `cache_v` (every key and value attended, per key/value head: GroupedQueryAttention
   * caches its num_kv_groups heads before they are repeated). MultiHeadLatentAttention caches its latent
   * c_kv alone (ch04/05_mla's cache_c_kv, latent_dim x 4 bytes per token): every step re-projects keys
   * and values `(b, num_heads, T_past + T_new, head_dim)` from all of it, and its trace has the stage
   * `cache_c_kv` instead of cache_k / cache_v. A class with a sliding window keeps its
   * last sliding_window_size entries (ch04/06_swa). `window`: at most that many entries, the oldest
   * shifted out before each chunk (gpt_with_kv_cache_optimized.py); without it a cache of a class with
   * a mask buffer is refused past context_length ("cache_full", naming both numbers).
   * Throws AttentionError "cache_unsupported" for a class without a causal mask over its own keys, and
   * "cache_window" for a window that is not a whole number from 1.
   */
  newCache(options?: { window?: number }): KvCache;
  /**
   * The module's parameters live in WASM memory (written once, read by every forward). They are
   * freed when this object is garbage-collected; dispose() frees them now. Any later call throws
   * AttentionError "disposed" (slot "module"). Calling it twice is harmless.
   */
  dispose(): void;
}

export interface CopyPlanEntry {
  copy: boolean;
  transpose: boolean;
}
/**
 * Keys: "W_query", "W_key", "W_value" between SelfAttention_v1 and _v2 (exercise 3.1); the target's
 * parameter names ("qkv.weight", "W_key", "proj.bias", ...) for MultiHeadAttention into a chapter 3
 * bonus class, where a missing key follows the book's map, {copy: false} keeps the target's own
 * values and {transpose: false} skips a transpose the map needs.
 */
export type CopyPlan = Partial<Record<string, CopyPlanEntry>>;

export interface CopyMatrixReport {
  /** The target parameter. */
  name: string;
  /** packed: rows stacked from several sources (qkv = cat(W_query, W_key, W_value)); identity: an
   * operator the source lacks (an inner out_proj: I, or a zero bias); kept: the target keeps its own
   * (bias_k/bias_v, a bias the source lacks); untransposed: a plan skipped the transpose the map needs. */
  action: "copied" | "transposed" | "not_copied" | "shape_mismatch" | "packed" | "identity" | "kept" | "untransposed";
  /** The source parameters it is made from (empty for identity and kept). */
  sources: string[];
  fromShape: number[];
  toShape: number[];
  hint: string;
}

export interface CopyReport {
  matrices: CopyMatrixReport[];
  /** Max |from(tokens) - to(tokens)| over the outputs; null when the output shapes differ. */
  maxAbsDiff: number | null;
  /** maxAbsDiff <= 1e-6 */
  agree: boolean;
  /** Sentences about what else matters (biases, shapes). */
  notes: string[];
  tokens: Tensor;
  /** Every stage both modules have (same id and shape), compared on `tokens` in eval mode. */
  stages: StageDiff[];
  /** The PyTorch lines of this copy, e.g. "sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)\n...". */
  code: string;
}

export interface StageDiff {
  id: string;
  maxAbsDiff: number;
}

export interface CheckpointReport {
  /** Keys whose values were loaded, with the file's own names. */
  used: string[];
  /** The first 200 other keys, in the header's order, and why each was not used (mask buffers, other layers, embeddings, ...). */
  ignored: Array<{ key: string; reason: string }>;
  /** How many keys were not used, listed in `ignored` or not (a header can hold a million). */
  ignoredCount: number;
  /** The highest layer number with attention weights (h.{layer}.attn.c_attn.weight). */
  maxLayer: number;
  /** Keys a GPT-2 layer normally has that the file lacks (e.g. c_attn.bias). */
  missing: string[];
  /** Keys that were transposed from Conv1D (in, out) into Linear (out, in). */
  transposed: string[];
  /** Where each derived setting came from ("num_heads", "context_length", "prefix", "d") and what the file holds ("layers", "vocab"). */
  sources: Record<string, string>;
  /** wte.weight has GPT-2's 50,257 rows: GPT-2's BPE tokenizer gives this file's token ids. */
  gpt2Vocab: boolean;
}

export interface CheckpointOptions {
  /** Which transformer block (h.{layer}); default 0. */
  layer?: number;
  /** Required unless the header's __metadata__ gives n_head (as loadGPT2 reads it) or the width is a GPT-2 preset's (768 -> 12, 1024 -> 16, 1280 -> 20, 1600 -> 25). */
  num_heads?: number;
  /** Used only when the file has neither wpe.weight nor a mask buffer. */
  context_length?: number;
  /** Load into this MultiHeadAttention instead of building one; all or nothing. */
  into?: AttentionModule;
}

/**
 * A .safetensors file opened once by lab.openCheckpoint: its first 8 bytes and its JSON header were
 * read once and the header parsed once, in WebAssembly memory. Give it to loadCheckpoint,
 * checkpointInput and loadGPT2 in place of the source: they read only the tensors' bytes (through the
 * same reader) and parse nothing. A GPT2Model made from it shares its parsed header.
 */
export interface CheckpointFile {
  /** The file's size in bytes. */
  readonly size: number;
  /** How many tensors the header lists (without __metadata__). */
  readonly keys: number;
  /** Where the data section starts: 8 + the header's length in bytes. */
  readonly dataStart: number;
  /**
   * Frees the parsed header now (otherwise garbage collection does it). Later calls given this file
   * reject with AttentionError "disposed" (slot "checkpoint") before reading anything; a GPT2Model
   * already made from it keeps working. Calling it twice is fine.
   */
  dispose(): void;
}

/** What the checkpoint functions read: the file's bytes, or a CheckpointFile opened from them. */
export type CheckpointSource = ArrayBuffer | ArrayBufferView | Blob | CheckpointFile;

export class AttentionError extends Error {
  readonly code: ErrorCode;
  readonly slot: string;
  readonly hint: string;
  readonly diagnostics: Diagnostic[];
}

/** What a GPT-2 file holds, from its header. */
export interface GPT2Config {
  /** Width of the residual stream (wte.weight's columns): 768 for GPT-2 small. */
  n_embd: number;
  n_head: number;
  /** Transformer blocks h.0 .. h.{n_layer - 1}. */
  n_layer: number;
  /** Positions (wpe.weight's rows): the most tokens a run takes. */
  n_ctx: number;
  vocab_size: number;
  /** The dtype of wte.weight. */
  dtype: "F32" | "F16" | "BF16";
  /** "small", "medium", "large" or "XL" when the shapes are GPT-2's own; "" otherwise. */
  size: "small" | "medium" | "large" | "XL" | "";
}

export interface GPT2Progress {
  step: "embedding" | "block" | "input" | "logits";
  /** The block just run (step "block"), or whose input was made (step "input"). */
  layer?: number;
  done: number;
  total: number;
}

export interface GPT2RunOptions {
  /** Called after each step: the embedding, each block, the logits. */
  onProgress?: (progress: GPT2Progress) => void;
  /** Cancels the run, also while a read is pending (the signal races it): the run rejects with AttentionError "cancelled" and the model is free for the next run. */
  signal?: AbortSignal;
  /**
   * What each layer's result holds (default "full"): "full" gives `input` and `attnWeights`
   * (n_layer x n_head x num_tokens^2 floats: GPT-2 XL on 1024 tokens is 4.7 GiB, refused as too_large);
   * "thumbnails" gives `thumbnail` and `firstTokens` (what a layer x head grid and a head view draw),
   * computed in the core. Anything else is AttentionError "run_option".
   */
  attention?: "full" | "thumbnails";
}

export interface GPT2Result {
  layers: {
    /** The residual stream entering the block, shape (1, num_tokens, n_embd). */
    input: Tensor;
    /** softmax(q k^T / sqrt(head_dim)) with the causal mask, shape (1, n_head, num_tokens, num_tokens). */
    attnWeights: Tensor;
  }[];
  /** The logits at the last position, shape (vocab_size): ln_f(x)[-1] @ wte^T (the tied output head). */
  lastLogits: Float32Array;
  /** The 5 most likely next tokens by softmax of lastLogits, most likely first. */
  nextTokens: { id: number; prob: number }[];
}

/** model.run with `attention: "thumbnails"`: per layer what a layer x head grid and a head view draw. */
export interface GPT2ThumbnailResult extends Omit<GPT2Result, "layers"> {
  layers: {
    /**
     * Each head's weights averaged into (1, n_head, S, S) cells, S = min(num_tokens, 64): cell (a, b) is the mean
     * over queries floor(a T / S) .. floor((a + 1) T / S) - 1 and the same range of keys; cells with b > a are
     * all masked (0). With S = num_tokens it is attnWeights itself.
     */
    thumbnail: Tensor;
    /** The exact weights among the first F = min(num_tokens, 48) tokens, (1, n_head, F, F) (rows sum to 1). */
    firstTokens: Tensor;
  }[];
}

/** model.generate's options: the book's chapter 5 `generate(model, idx, max_new_tokens, context_size, temperature, top_k, eos_id)`. */
export interface GPT2GenerateOptions {
  /** How many tokens to generate (required): a whole number from 1. */
  maxNewTokens: number;
  /**
   * 0 (the default): greedy argmax, as `generate_text_simple`, no draw. Above 0: softmax(logits /
   * temperature) and `torch.multinomial(probs, 1)` reproduced bit for bit on `generator` (PyTorch 1.13's
   * CPU kernel: argmax(probs / Exp(1)) over the whole vocabulary, 2 x vocab_size 32-bit draws per token).
   */
  temperature?: number;
  /** Keep the logits >= the k-th largest (the others become -inf), as torch.topk + torch.where; null: all. */
  topK?: number | null;
  /** Stop when this token is picked, before appending it (GPT-2's <|endoftext|> is 50256); null: never. */
  eosId?: number | null;
  /** The generator sampling draws on (temperature > 0); default a fresh lab.manualSeed(123). It ends where PyTorch's would. */
  generator?: Generator;
  /**
   * true (the default): keep each layer's keys and values (1, n_head, T, head_dim) in the core, so the
   * prompt is computed once (prefill) and each new token computes one position; refused past n_ctx
   * ("cache_context"). false: rerun the whole context for every token, cropped to its last n_ctx tokens
   * as the book does. Both give the same tokens.
   */
  cache?: boolean;
  /**
   * Keep the weights in WebAssembly memory between tokens (read once): by default when the estimate
   * fits the budget (GPT-2 small: about 500 MB of float32), else every token re-reads the file's blocks
   * and wte (slower, one block of memory). true forces it ("too_large" when over), false re-reads.
   */
  resident?: boolean | null;
  /**
   * With the cache: pre-allocate it for this many positions (1 .. n_ctx) and shift the oldest entries
   * out when a token would overflow it, as the book's gpt_with_kv_cache_optimized.py (kv_window_size):
   * each token attends to at most `window` keys, itself included. The prompt is one prefill chunk, so
   * it must fit the window ("cache_window"). A window bounds the keys held, not the positions: every
   * position reads its own wpe row, so prompt + maxNewTokens - 1 must still be at most n_ctx
   * ("cache_context", naming both). null: the cache grows to every position.
   */
  window?: number | null;
  /**
   * true: each step carries the new token's attention rows (GPT2GenerateStep.attention), counted in
   * estimateBytes (4 x n_layer x n_head x the keys each token sees, summed over the tokens). false (the
   * default): nothing is kept or copied.
   */
  attention?: boolean;
  /** Called with each step as soon as its token is out. */
  onToken?: (step: GPT2GenerateStep) => void;
  /** Cancels between tokens and between reads: generate rejects with AttentionError "cancelled". */
  signal?: AbortSignal;
}

/** One generated token. */
export interface GPT2GenerateStep {
  token: number;
  /** Its probability under the distribution it was picked from: softmax of the (top-k) logits / temperature (temperature 1 when greedy). */
  prob: number;
  /** The 5 most likely tokens of that distribution, most likely first (the picked one among them when it is that likely). */
  top: { id: number; prob: number }[];
  /** Positions held in the KV cache after this step (0 without the cache; at most the window). */
  cacheTokens: number;
  /** Their keys and values: 2 x n_layer x cacheTokens x n_embd x 4 bytes. */
  cacheBytes: number;
  /**
   * With {attention: true}: the attn_weights row of the position the token was read at (the last of the
   * forward that produced it), in every layer and head, (n_layer, n_head, keys) row-major float32;
   * keys = the positions it attends to (prompt + new so far, cropped to n_ctx without the cache). Each
   * row is the last row of model.run's attnWeights (1, n_head, keys, keys) on the same ids. Else null.
   */
  attention: { shape: [number, number, number]; data: Float32Array } | null;
  /** Milliseconds this token took (reads included). */
  ms: number;
}

export interface GPT2Generation {
  /** The prompt, then the new tokens (eosId not appended). */
  tokenIds: number[];
  steps: GPT2GenerateStep[];
  /** "eos" when eosId was picked, else "maxNewTokens". */
  stoppedBy: "eos" | "maxNewTokens";
  /** Whether the weights stayed in WebAssembly memory between tokens. */
  resident: boolean;
  /** The peak the core estimated and checked before starting (bytes of WebAssembly memory). */
  estimateBytes: number;
}

/**
 * A GPT-2 file opened by loadGPT2. A run reads the tokens' wte rows and wpe[:T], then one block at a
 * time (read, run, release), then ln_f and wte in chunks: its memory is one block plus the activations.
 */
export interface GPT2Model {
  readonly config: Readonly<GPT2Config>;
  /** Bytes a run on numTokens tokens takes at its peak, its results as the caller holds them included (checked before every run). */
  estimateBytes(numTokens: number, options?: { attention?: "full" | "thumbnails" }): number;
  /**
   * The whole forward in eval mode on GPT-2 BPE token ids. Rejects (never throws, bad options too) with
   * AttentionError: bad_options, checkpoint_token, input_empty, context_too_short, too_large, busy,
   * cancelled, callback, checkpoint_read, checkpoint_source (a buffer detached since loadGPT2),
   * non_finite_parameter (a NaN or infinity in the file), non_finite_stage (finite weights overflowed
   * float32: `slot` is the first stage that turned non-finite, one of "embedding", "ln_1", "attn",
   * "attn_residual", "ln_2", "c_fc", "gelu", "mlp_c_proj", "mlp_residual", "ln_f", "logits"; the message
   * names its block h.L and the token and column), disposed, run_option (the `attention` option).
   */
  run(tokenIds: ArrayLike<number>, options?: GPT2RunOptions & { attention?: "full" }): Promise<GPT2Result>;
  run(tokenIds: ArrayLike<number>, options: GPT2RunOptions & { attention: "thumbnails" }): Promise<GPT2ThumbnailResult>;
  /**
   * Writes text: up to maxNewTokens GPT-2 BPE ids after tokenIds (see GPT2GenerateOptions). Rejects with
   * AttentionError: generate_option (names the option), cache_context, cache_window, checkpoint_token, input_empty,
   * too_large, generator, busy, cancelled, callback (slot "onToken"), checkpoint_read, non_finite_parameter,
   * non_finite_probabilities, disposed.
   */
  generate(tokenIds: ArrayLike<number>, options: GPT2GenerateOptions): Promise<GPT2Generation>;
  /** What block `layer`'s attention sees: ln_1 of the stream entering it, shape (1, num_tokens, n_embd). */
  attentionInput(tokenIds: ArrayLike<number>, layer: number, options?: GPT2RunOptions): Promise<Tensor>;
  /** Frees the model's WebAssembly memory now (otherwise garbage collection does it). */
  dispose(): void;
}

export interface AttentionLab {
  readonly classes: ClassName[];
  /** The four GPT-2 sizes from the core's one table, smallest first (head_dim 64 in all four). */
  readonly gpt2Sizes: ReadonlyArray<{ name: "small" | "medium" | "large" | "XL"; n_embd: number; n_head: number; n_layer: number }>;
  slots(className: ClassName): SlotSpec[];
  parseCall(text: string): ParsedCall;
  /**
   * Every diagnostic at once; never throws. With `inputShape`, also the input checks (rank, width,
   * num_tokens vs context_length, memory); with `training: false`, the dropout_eval warning.
   */
  check(className: string, config: Config, options?: { inputShape?: number[]; training?: boolean }): Diagnostic[];
  describe(className: string, config?: Config): Description;
  /**
   * check, describe and estimateBytes of one edit in one call into the core (see Setup): one validation
   * of the configuration and one with the input. Never throws for a configuration's problems (they are
   * diagnostics); throws AttentionError "bad_options" or "unreadable_argument" for options that cannot
   * be read, and "tensor_shape" (slot "inputShape") when inputShape is not a list of sizes.
   * `trace` (default true) counts the traced stages in memory.bytes.
   */
  setup(className: string, config: Config, options?: { inputShape?: number[] | null; training?: boolean; trace?: boolean }): Setup;
  /**
   * torch.manual_seed(seed) (default 123), the constructor, then forward on x in training mode unless
   * `training: false`, traced unless `trace: false`: one call into the core, nothing kept (dropout draws
   * continue from the constructor's generator, as create + forward with one generator do).
   * Throws AttentionError: seed; the configuration's first error (its code and slot, as create; call
   * setup for every diagnostic); forward's input codes (tensor_shape, tensor_size, input_rank,
   * input_empty, input_width, context_too_short, too_large, non_finite_input).
   */
  run(className: ClassName, config: Config, x: TensorLike, options?: { seed?: number; training?: boolean; trace?: boolean }): RunResult;
  /**
   * The core's facts about a class (slots, input axes, heads, presets, tolerance, python name, ...):
   * the same frozen object as `describe(className, config).class`, read without a call into the core.
   * Undefined for a name that is not in `classes`.
   */
  classFacts(className: string): ClassFacts | undefined;
  manualSeed(seed: number): Generator;
  /** Throws AttentionError on any error diagnostic. Without a generator, uses manualSeed(123). */
  create(className: ClassName, config: Config, options?: { generator?: Generator }): AttentionModule;
  /**
   * Throws AttentionError: copy_unsupported, copy_plan (slot: the plan key), or forward's input codes for
   * `tokens` (slot "tokens"); nothing is copied then.
   */
  copyWeights(from: AttentionModule, to: AttentionModule, plan: CopyPlan, options?: { tokens?: TensorLike }): CopyReport;
  /** The PyTorch lines of a copy plan (the same text as CopyReport.code) before anything is built. */
  copyCode(fromClass: "SelfAttention_v1" | "SelfAttention_v2", toClass: "SelfAttention_v1" | "SelfAttention_v2", plan: CopyPlan): string;
  /**
   * GPT-2 attention from a .safetensors file (Hugging Face names, with or without `transformer.`):
   * c_attn split on its last axis into q, k, v and each transposed; c_proj transposed into out_proj.
   * Rejects with AttentionError: checkpoint_truncated, checkpoint_bad_header, checkpoint_bad_offsets,
   * checkpoint_missing_key, checkpoint_layer, checkpoint_shape, checkpoint_num_heads,
   * checkpoint_context_length, checkpoint_config_mismatch, checkpoint_dtype, checkpoint_source,
   * disposed (a disposed CheckpointFile).
   */
  loadCheckpoint(source: CheckpointSource, options?: CheckpointOptions): Promise<{ module: AttentionModule; report: CheckpointReport }>;
  /**
   * The input a real GPT-2 layer's attention sees, shape (1, num_tokens, d): ln_1 of the residual stream
   * entering block `layer` (LayerNorm eps 1e-5). Layer 0 is ln_1(wte[tokenIds] + wpe[:T]) and reads only
   * one wte row per token, T wpe rows and ln_1; a later layer runs blocks 0 .. layer-1 first (one at a
   * time), so the file must hold the whole model (`num_heads` for widths that are not GPT-2's).
   * Every layer refuses what the whole model refuses: a NaN or infinity in a row read
   * (non_finite_parameter), a dtype other than F32, F16, BF16 (checkpoint_dtype). `signal` is checked
   * before anything is read and races every read.
   * Rejects with AttentionError: checkpoint_missing_key, checkpoint_token, context_too_short,
   * checkpoint_layer, checkpoint_num_heads, checkpoint_dtype, non_finite_parameter, non_finite_stage
   * (layer > 0), cancelled, disposed (a disposed CheckpointFile), and the header errors.
   */
  checkpointInput(source: CheckpointSource, options: { tokenIds: number[]; layer?: number; num_heads?: number; signal?: AbortSignal }): Promise<Tensor>;
  /**
   * Opens a GPT-2 .safetensors file for the whole model (the book's chapter 4 GPTModel, the same as
   * Hugging Face's GPT-2), reading only its header now; F32, F16 or BF16; keys with or without
   * `transformer.`. GPT-2 small, medium, large and XL are recognised from their shapes; other widths
   * need `num_heads` (or an `n_head` entry in the header's __metadata__; loadCheckpoint reads it by the
   * same rule). The blocks must be h.0 .. h.{n_layer-1}, none missing or partial.
   * Rejects with AttentionError: checkpoint_source, checkpoint_read, the header errors,
   * checkpoint_missing_key (a gap in the blocks or a partial block: names the missing keys),
   * checkpoint_bad_header (blocks under both h. and transformer.h.), checkpoint_shape, checkpoint_dtype,
   * checkpoint_num_heads, checkpoint_layer,
   * disposed (a disposed CheckpointFile). Given a CheckpointFile, the model shares its parsed header.
   */
  loadGPT2(source: CheckpointSource, options?: { num_heads?: number }): Promise<GPT2Model>;
  /**
   * Opens a .safetensors file (an ArrayBuffer, a typed array, a Blob or a File; File.slice: never read
   * whole) once: reads its first 8 bytes and its header and parses the header, as loadCheckpoint,
   * checkpointInput and loadGPT2 would each do for themselves. Give the result to them to load layers,
   * trace inputs and run the model with one parse. A CheckpointFile given here is returned as it is.
   * Rejects with AttentionError: checkpoint_source, checkpoint_read, checkpoint_truncated,
   * checkpoint_bad_header, checkpoint_duplicate_key, checkpoint_bad_offsets.
   */
  openCheckpoint(source: CheckpointSource): Promise<CheckpointFile>;
  /** Wrapper (d_out per head) <-> MultiHeadAttention (d_out total) with the same heads. */
  equivalentConfig(className: ClassName, config: Config): { className: ClassName; config: Record<SlotName, number | boolean>; pythonCall: string };
  /**
   * Wrapper -> fused MultiHeadAttention (heads stacked, out_proj = identity with zero bias) or fused ->
   * wrapper (head h takes rows h*head_dim ...). layout "interleaved" builds the head-merge mistake on purpose.
   */
  convert(module: AttentionModule, options?: { layout?: "stacked" | "interleaved" }): { module: AttentionModule; code: string };
  /** Both modules on x in eval mode; every stage they share compared. agree: every maxAbsDiff <= 1e-6. */
  compare(a: AttentionModule, b: AttentionModule, x: TensorLike): { stages: StageDiff[]; maxAbsDiff: number; agree: boolean; tolerance: number };
  /** The book's six 3-d embeddings of "Your journey starts with one step", shape (6, 3). */
  bookTokens(): Tensor;
  /**
   * Word tokens with seeded embeddings; a repeated word gets the same row:
   * vocab = list(dict.fromkeys(words)); table = torch.rand(len(vocab), d_in, generator=torch.Generator().manual_seed(seed));
   * x = table[[vocab.index(w) for w in words]]  -> (num_tokens, d_in)
   */
  sentenceTokens(words: string[], dIn: number, seed: number): Tensor;
  /** torch.rand(num_tokens, d_in, generator=torch.Generator().manual_seed(seed)). */
  seededTokens(numTokens: number, dIn: number, seed: number): Tensor;
  /**
   * Bytes the parameters plus a forward on inputShape need at their peak, traced unless `trace: false`,
   * JS results included (the WASM heap, and the output and trace copied out of it into Float32Arrays),
   * and the budget the core refuses above (one budget: the page refuses by it too). The estimate bounds
   * the real peak: a forward grows `heapPeak()` plus its results' bytes by at most `bytes`
   * (tests/node/memory-estimate.test.mjs measures it).
   */
  estimateBytes(className: ClassName, config: Config, inputShape?: number[], options?: { trace?: boolean }): { bytes: number; budget: number };
  /**
   * A module rebuilt from plain data (e.g. posted to a Web Worker): every parameter by PyTorch name.
   * Throws AttentionError: missing_parameter, unknown_parameter, parameter_shape, or the config's errors.
   */
  fromParameters(className: ClassName, config: Config, parameters: Array<{ name: string } & TensorLike>, options?: { generator?: Generator }): AttentionModule;
  /** Bytes of WASM heap in use (for leak checks). */
  heapInUse(): number;
  /**
   * The most WASM heap ever taken from memory so far, in bytes (allocator footprint, including
   * fragmentation; it never shrinks). Its growth over one call, plus the bytes of the results the call
   * copied out, is that call's real peak, which the memory estimate (`estimateBytes`) bounds.
   */
  heapPeak(): number;
  /** Modules, generators, checkpoint files and GPT-2 models alive in WASM memory (released on dispose() or garbage collection). */
  handlesInUse(): number;
  /** The input shape a class takes: [b, numTokens, dIn] for the batched classes, [numTokens, dIn] for SelfAttention_v1/v2. */
  inputShape(className: ClassName, numTokens: number, dIn: number, b?: number): number[];
}

/**
 * Where {@link loadAttentionLab} gets the WebAssembly core (`attention_core.wasm`, about 1 MB) from:
 * at most one of the two. With neither, the browser module fetches `./attention_core.wasm` relative
 * to its own URL (`new URL("./attention_core.wasm", import.meta.url)`, which webpack 5 and Vite copy
 * as an asset), and the Node entry reads that file from disk.
 * Anchors: onnxruntime-web `env.wasm.wasmPaths`, sql.js `locateFile`, tfjs `setWasmPaths`.
 */
export interface LoadOptions {
  /**
   * The URL the `.wasm` is served from: a URL, or a string that `fetch` resolves (relative to the
   * page or worker). Compiled while it streams in when served as `application/wasm`. In Node a
   * `file:` URL is read from disk. A bundler gives it: esbuild's `--loader:.wasm=file` with
   * `import wasmUrl from "attention-lab/attention_core.wasm"`, Vite's `?url` suffix, webpack's
   * `asset/resource`.
   */
  wasmUrl?: string | URL;
  /**
   * The bytes of `attention_core.wasm` (an ArrayBuffer, a typed array or a DataView; a Node Buffer
   * is one): for a host that fetches or caches them itself. Copied when compiled.
   */
  wasmBinary?: ArrayBuffer | ArrayBufferView;
}

/**
 * Loads the WebAssembly core and resolves to the lab: the one entry point of the library.
 *
 * The core is loaded once per realm (a page, a worker, a Node process) and shared by every caller,
 * `<attention-lab>` elements included; the first call decides where the `.wasm` comes from. A later
 * call with no `wasmUrl`/`wasmBinary` resolves to that same lab (while it loads too); one naming the
 * same URL (or the same bytes) as the first call does too; one naming another source rejects with
 * `wasm_loaded`: pass the options on the first call, before any `<attention-lab>` element connects.
 * A load that failed is forgotten, so the next call tries again (with corrected options, say).
 *
 * Which file runs is chosen by package.json's export conditions, never by looking at globals:
 * `node` gets `attention-lab.node.js` (reads the `.wasm` from disk; vitest under jsdom is Node too),
 * browsers and bundlers get `attention-lab.js` (no `node:` import; fetches the `.wasm`).
 *
 * @param options - where the `.wasm` comes from ({@link LoadOptions}); nothing for the default.
 * @returns the lab (the same object for every call that shares the load).
 * @throws {@link AttentionError} as a rejection, never synchronously: `bad_options` (options not an
 *   object), `wasm_options` (an unknown option, or both), `wasm_url` (not a URL or a string; or, with
 *   no options, a bundle where `import.meta.url` is empty), `wasm_binary` (not the bytes of
 *   attention_core.wasm: not bytes, detached, no `\0asm` magic, an HTML page, another build),
 *   `wasm_fetch` (the request failed or answered an error status; the message names the URL),
 *   `wasm_loaded` (already loaded from another source), `unreadable_argument` (a throwing getter).
 * @example
 * ```js
 * import { loadAttentionLab } from "attention-lab";
 * const lab = await loadAttentionLab(); // Node, a static page, webpack 5, Vite
 * lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }).headDim; // 64
 * ```
 * @example
 * ```js
 * // esbuild: esbuild app.js --bundle --platform=browser --loader:.wasm=file --outdir=out
 * import wasmUrl from "attention-lab/attention_core.wasm";
 * const lab = await loadAttentionLab({ wasmUrl });
 * ```
 * @example
 * ```js
 * const lab = await loadAttentionLab({ wasmBinary: await (await fetch("/cache/attention_core.wasm")).arrayBuffer() });
 * ```
 */
export function loadAttentionLab(options?: LoadOptions): Promise<AttentionLab>;
