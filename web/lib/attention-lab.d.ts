/**
 * attention-lab — the library API (hand-written; checked by tests/node/types.test.mjs).
 *
 * Tensors are row-major float32: `{shape, data}` with `data.length === shape.reduce((a, b) => a * b, 1)`.
 * Names follow "Build a Large Language Model (From Scratch)", chapter 3, and PyTorch.
 */

/** A row-major float32 tensor. */
export interface Tensor {
  /** The size of each axis, outermost first, e.g. [2, 6, 3] for (b, num_tokens, d_in). */
  shape: number[];
  /** The values, row-major (the last axis varies fastest); `data.length` is the product of `shape`. */
  data: Float32Array;
}

/** What a caller may pass where a tensor is expected (plain arrays are copied into a Float32Array). */
/** What lab.checkModule takes: what the page's snippet saves from a reader's notebook, as tensors. */
export interface CheckFile {
  /** The constructor call as written, e.g. `"MultiHeadAttention(768, 768, 1024, 0.0, 12)"` (parsed as lab.parseCall parses it). */
  call: string;
  /** The module's `state_dict()`: name -> tensor (its mask buffers may be left out), or a list of `{name, shape, data}`. */
  stateDict: Record<string, TensorLike> | ReadonlyArray<NamedTensor>;
  /** The input the reader ran, `(b, num_tokens, d_in)` (`(num_tokens, d_in)` for SelfAttention_v1/v2) float32. */
  x: TensorLike;
  /** The reader's output on x, the shape the book's forward gives: `(b, num_tokens, d_out)` (the wrapper: `num_heads * d_out` wide). */
  output: TensorLike;
  /**
   * Any of the reader's tensors at these points of the book's forward: `attn_scores` `(b, num_heads, num_tokens,
   * num_tokens)` before masking, `attn_weights` (same shape) after softmax and dropout, `context_vec` `(b, num_tokens,
   * d_out)` after merging the heads, before out_proj. The single-head classes' have no num_heads axis (and their
   * context_vec is `(b, num_tokens, d_out)`); SelfAttention_v1/v2's no b axis.
   */
  stages?: CheckStages;
  /**
   * The seed the reader gave `torch.manual_seed` right before the forward (`torch.manual_seed(123); context_vecs =
   * mha(batch)`), the module in training mode: the book's forward and every catalogue variant then run in training
   * mode with dropout drawing PyTorch's stream from it, and the dropout mistakes (dropout_missing, dropout_on_scores)
   * are tried too. A whole number in {@link AttentionLab.seedRange}. Left out (or null): eval mode, as `mha.eval()`
   * (or dropout 0). With dropout 0 a seed changes nothing.
   */
  seed?: number | null;
}

/** One tensor of a state dict given as a list (`[{name, shape, data}, ...]`). */
export interface NamedTensor extends TensorLike {
  /** The key as `state_dict()` names it, e.g. `"W_query.weight"` or `"out_proj.bias"`. */
  name: string;
}

/** The reader's tensors at three points of the book's forward (CheckFile.stages); each is optional. */
export interface CheckStages {
  /** `(b, num_heads, num_tokens, num_tokens)`: `queries @ keys.transpose(2, 3)`, before masking. */
  attn_scores?: TensorLike;
  /** `(b, num_heads, num_tokens, num_tokens)`: after the softmax (and dropout). */
  attn_weights?: TensorLike;
  /** `(b, num_tokens, d_out)`: the heads merged, before out_proj. */
  context_vec?: TensorLike;
}

/** A catalogue entry that applies to the class checked. */
export interface CheckCause {
  /** The mistake's id, e.g. "scale_d_out", "mask_discarded", "heads_view_no_transpose". */
  id: string;
  /** The mistake in the book's words. */
  title: string;
  /** The line as readers write it: the PyTorch to question first. */
  line: string;
  /** The book's line that fixes it. */
  fix: string;
  /** Public reports of the same mistake (repository#number, comma-separated). */
  source: string;
  /** Whether the book's forward with this one mistake reproduces the reader's output and every stage given (NaN where NaN). */
  explains: boolean;
}

/**
 * Where the reader's tensor first leaves the book's, side by side: the row of the last axis that holds
 * the first value out of tolerance (in row-major order), at most 8 values of it around that value.
 */
export interface CheckDifference {
  /** The tensor: a stage the reader gave, or "output". */
  stage: "attn_scores" | "attn_weights" | "context_vec" | "output";
  /** Its axes, outermost first, e.g. `["b", "num_heads", "num_tokens", "num_keys"]`. */
  axes: string[];
  /** Its shape, one size per axis. */
  shape: number[];
  /** The first differing value's index, one per axis. */
  index: number[];
  /** The last axis's index of `yours[0]` and `book[0]`. */
  from: number;
  /** The reader's values of the row, from `from` on. */
  yours: Float32Array;
  /** The book's values at the same places. */
  book: Float32Array;
}

/** lab.checkModule's verdict. */
export interface CheckReport {
  /** The book's class the module was checked against. */
  className: ClassName;
  /** Its Python call as PyTorch takes it, e.g. "MultiHeadAttention(768, 768, 1024, 0.0, 12)" (the code to confirm a cause builds the book's module with it). */
  call: string;
  /** The seed the forwards ran from, in training mode (the check's `seed`); null: eval mode. */
  seed: number | null;
  /** The reader's output equals the book's within 1e-5 * (1 + |book|), NaN only where the book has NaN. */
  agree: boolean;
  /** max |reader - book| over the output where both are finite; Infinity when NaN sits elsewhere than in the book's. */
  maxAbsDiff: number;
  /** The first given stage, then "output", whose tensor leaves the book's; null when none does. */
  firstStage: "attn_scores" | "attn_weights" | "context_vec" | "output" | null;
  /** firstStage's first differing value, the reader's and the book's side by side; null when none differs. */
  difference: CheckDifference | null;
  /** Every catalogue entry that applies to the class, in catalogue order. */
  causes: CheckCause[];
  /**
   * What the state dict's buffers hold, e.g. a mask other than the book's causal mask (named by its first differing
   * entry); and, checked without a seed, a class with dropout > 0 whose output disagrees: that dropout may be acting
   * (the module left in training mode) and how to check it with a seed.
   */
  notes: string[];
}

/** A tensor given to the library: any object with a shape and row-major values (a Tensor, or `{shape, data}`). */
export interface TensorLike {
  /** The size of each axis, outermost first. */
  shape: number[];
  /** The values, row-major; copied once into WASM memory (plain arrays are converted to float32). */
  data: Float32Array | ArrayLike<number>;
}

// BEGIN generated from the core's class recipes by scripts/config-types.mjs
/**
 * The name of every class the core has a recipe for, in `lab.classes`' order (the book's five first).
 * Generated from the core's recipes (core/src/recipes.cpp) by scripts/config-types.mjs: add a class there.
 */
export type ClassName =
  /** section 3.4.1, ch03/01_main-chapter-code/ch03.ipynb: Self-attention with trainable weight matrices W_query, W_key, W_value of shape (d_in, d_out), used as x @ W. */
  | "SelfAttention_v1"
  /** section 3.4.2, ch03/01_main-chapter-code/ch03.ipynb: Self-attention with nn.Linear projections (weight stored (d_out, d_in), used as x @ W.T + b). */
  | "SelfAttention_v2"
  /** section 3.5.3, ch03/01_main-chapter-code/ch03.ipynb: Self-attention that hides future tokens with a causal mask, plus dropout on the attention weights. */
  | "CausalAttention"
  /** section 3.6.1, ch03/01_main-chapter-code/ch03.ipynb: num_heads CausalAttention modules run one after another; their outputs are concatenated. */
  | "MultiHeadAttentionWrapper"
  /** section 3.6.2, ch03/01_main-chapter-code/ch03.ipynb: Fused multi-head attention: one projection per q/k/v split into heads, merged, then out_proj. */
  | "MultiHeadAttention"
  /** chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb: Multi-head attention with one packed projection qkv = nn.Linear(d_in, 3 * d_out): its output is viewed as (b, num_tokens, 3, num_heads, head_dim) and split into queries, keys and values; the merge views back to x's width, so d_in must equal d_out. */
  | "MultiHeadAttentionCombinedQKV"
  /** chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb: Multi-head attention written with torch.einsum: W_query, W_key, W_value are (d_in, d_out) parameters used as x @ W (einsum "bnd,do->bno"); bias_q, bias_k, bias_v with qkv_bias; out_proj. */
  | "MHAEinsum"
  /** chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb: The packed projection with PyTorch's scaled_dot_product_attention(is_causal=True): the causal mask is built for the tokens given, so context_length is stored but never read. */
  | "MHAPyTorchScaledDotProduct"
  /** chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb: scaled_dot_product_attention with an explicit mask: the buffer triu(ones, diagonal=1).bool() is passed as attn_mask, where True means "attend", so the mask is inverted (the book repository's issue #1061): each query sees only later tokens and the last one none (NaN). */
  | "MHAPyTorchSDPAWithoutFlash"
  /** chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb: The packed projection with FlexAttention and a causal block mask built for the tokens given in each forward, so context_length is stored but never read; FlexAttention has no dropout, so the dropout slot is never used. */
  | "MHAPyTorchFlexAttention"
  /** chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb: PyTorch's own nn.MultiheadAttention(embed_dim=d_out, num_heads, dropout, bias=qkv_bias, add_bias_kv=qkv_bias, batch_first=True) with a boolean causal mask, then proj = nn.Linear(d_out, d_out). embed_dim is d_out, so d_in must equal d_out; qkv_bias also adds bias_k/bias_v, one extra key/value token every query sees. */
  | "MHAPyTorchClass"
  /** chapter 3 bonus, pkg/llms_from_scratch/ch03.py: The packed projection with scaled_dot_product_attention(is_causal=True), as packaged in llms_from_scratch (ch03.py); no context_length at all. */
  | "PyTorchMultiHeadAttention"
  /** chapter 4 bonus, ch04/04_gqa/gpt_with_kv_gqa.py: Grouped-query attention: num_kv_groups key/value heads, each shared by a group of query heads (repeat_interleave); causal mask for the tokens given; out_proj without bias. */
  | "GroupedQueryAttention"
  /** chapter 4 bonus, ch04/05_mla/gpt_with_kv_mla.py: Multi-head latent attention: x is projected down to a latent c_kv = W_DKV(x) of latent_dim per token (what its KV cache stores), and keys and values are re-projected from it (W_UK, W_UV); queries, causal mask for the tokens given, out_proj as in MultiHeadAttention; no RoPE. */
  | "MultiHeadLatentAttention"
  /** chapter 4 bonus, ch04/06_swa/gpt_with_kv_swa.py: The book's MultiHeadAttention with a sliding-window causal mask: key j is hidden from query i when j > i or i - j >= sliding_window_size; no context_length. */
  | "MultiHeadAttentionWithSWA"
  /** chapter 4 bonus, ch04/08_deltanet/README.md: The chapter's MultiHeadAttention with an output gate (Qwen3-Next's gated attention): the merged heads are multiplied by sigmoid(W_gate(x)) before out_proj, and the causal mask fills torch.finfo(float32).min instead of -inf. */
  | "GatedMultiHeadAttention"
  /** chapter 5 bonus, ch05/07_gpt_to_llama/converting-gpt-to-llama2.ipynb: Llama 2's multi-head attention: the chapter's MultiHeadAttention with no biases (out_proj too), no dropout, and rotary position embeddings (RoPE, theta 10,000) applied to queries and keys after the head split, from cos and sin buffers of context_length rows. */
  | "MultiHeadAttention@ch05/07_gpt_to_llama";

/** A constructor slot's name, as the book and PyTorch spell it: every slot of every class, in order of first use. */
export type SlotName = "d_in" | "d_out" | "qkv_bias" | "context_length" | "dropout" | "num_heads" | "need_weights" | "num_kv_groups" | "dtype" | "latent_dim" | "sliding_window_size";

/**
 * The constructor slots of SelfAttention_v1 (section 3.4.1, ch03/01_main-chapter-code/ch03.ipynb): `SelfAttention_v1(d_in, d_out)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface SelfAttention_v1Config {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): width of each query, key, value and output vector. */
  d_out: IntSlotValue;
}

/**
 * The constructor slots of SelfAttention_v2 (section 3.4.2, ch03/01_main-chapter-code/ch03.ipynb): `SelfAttention_v2(d_in, d_out, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface SelfAttention_v2Config {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): width of each query, key, value and output vector. */
  d_out: IntSlotValue;
  /** Slot 3 (bool, default False): add a bias to the query, key and value projections (GPT-2 has one). */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of CausalAttention (section 3.5.3, ch03/01_main-chapter-code/ch03.ipynb): `CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface CausalAttentionConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): width of each query, key, value and output vector. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): most tokens the causal mask buffer covers (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 4 (float, required): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout: FloatSlotValue;
  /** Slot 5 (bool, default False): add a bias to the query, key and value projections (GPT-2 has one). */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MultiHeadAttentionWrapper (section 3.6.1, ch03/01_main-chapter-code/ch03.ipynb): `MultiHeadAttentionWrapper(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MultiHeadAttentionWrapperConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): width of EACH head's output; the module's output is num_heads x d_out wide. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): most tokens the causal mask buffer covers (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 4 (float, required): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout: FloatSlotValue;
  /** Slot 5 (int, required): number of independent CausalAttention heads, concatenated on the last axis. */
  num_heads: IntSlotValue;
  /** Slot 6 (bool, default False): add a bias to the query, key and value projections (GPT-2 has one). */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MultiHeadAttention (section 3.6.2, ch03/01_main-chapter-code/ch03.ipynb): `MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MultiHeadAttentionConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): most tokens the causal mask buffer covers (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 4 (float, required): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout: FloatSlotValue;
  /** Slot 5 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 6 (bool, default False): add a bias to the query, key and value projections (GPT-2 has one). */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MultiHeadAttentionCombinedQKV (chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb): `MultiHeadAttentionCombinedQKV(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MultiHeadAttentionCombinedQKVConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 4 (int, required): most tokens the module is built for (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 5 (float, default 0.0): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout?: FloatSlotValue;
  /** Slot 6 (bool, default False): add a bias to the packed query/key/value projection. */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MHAEinsum (chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb): `MHAEinsum(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MHAEinsumConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): most tokens the causal mask buffer covers (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 4 (float, required): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout: FloatSlotValue;
  /** Slot 5 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 6 (bool, default False): add a bias to the query, key and value projections (GPT-2 has one). */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MHAPyTorchScaledDotProduct (chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb): `MHAPyTorchScaledDotProduct(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MHAPyTorchScaledDotProductConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 4 (int, required): most tokens the module is built for (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 5 (float, default 0.0): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout?: FloatSlotValue;
  /** Slot 6 (bool, default False): add a bias to the packed query/key/value projection. */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MHAPyTorchSDPAWithoutFlash (chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb): `MHAPyTorchSDPAWithoutFlash(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MHAPyTorchSDPAWithoutFlashConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 4 (int, required): most tokens the module is built for (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 5 (float, default 0.0): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout?: FloatSlotValue;
  /** Slot 6 (bool, default False): add a bias to the packed query/key/value projection. */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MHAPyTorchFlexAttention (chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb): `MHAPyTorchFlexAttention(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MHAPyTorchFlexAttentionConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 4 (int, required): most tokens the module is built for (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 5 (float, default 0.0): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout?: FloatSlotValue;
  /** Slot 6 (bool, default False): add a bias to the packed query/key/value projection. */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MHAPyTorchClass (chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb): `MHAPyTorchClass(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False, need_weights=True)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MHAPyTorchClassConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 4 (int, required): most tokens the module is built for (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 5 (float, default 0.0): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout?: FloatSlotValue;
  /** Slot 6 (bool, default False): add a bias to the packed query/key/value projection. */
  qkv_bias?: BoolSlotValue;
  /** Slot 7 (bool, default True): return the head-averaged attention weights too (False lets nn.MultiheadAttention use scaled_dot_product_attention). */
  need_weights?: BoolSlotValue;
}

/**
 * The constructor slots of PyTorchMultiHeadAttention (chapter 3 bonus, pkg/llms_from_scratch/ch03.py): `PyTorchMultiHeadAttention(d_in, d_out, num_heads, dropout=0.0, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface PyTorchMultiHeadAttentionConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 4 (float, default 0.0): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout?: FloatSlotValue;
  /** Slot 5 (bool, default False): add a bias to the packed query/key/value projection. */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of GroupedQueryAttention (chapter 4 bonus, ch04/04_gqa/gpt_with_kv_gqa.py): `GroupedQueryAttention(d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface GroupedQueryAttentionConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL width of the queries and the output, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (float, required): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout: FloatSlotValue;
  /** Slot 4 (int, required): number of query heads; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 5 (int, required): number of key/value heads, each shared by num_heads / num_kv_groups query heads (1: multi-query attention). */
  num_kv_groups: IntSlotValue;
  /** Slot 6 (torch.dtype | None, default None): parameter dtype: None (float32, PyTorch's default). */
  dtype?: DtypeSlotValue;
  /** Slot 7 (bool, default False): add a bias to the query, key and value projections. */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MultiHeadLatentAttention (chapter 4 bonus, ch04/05_mla/gpt_with_kv_mla.py): `MultiHeadLatentAttention(d_in, d_out, dropout, num_heads, qkv_bias=False, latent_dim=None)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MultiHeadLatentAttentionConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (float, required): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout: FloatSlotValue;
  /** Slot 4 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 5 (bool, default False): add a bias to W_query, W_DKV, W_UK and W_UV. */
  qkv_bias?: BoolSlotValue;
  /** Slot 6 (int | None, default None): width of the latent c_kv = W_DKV(x) that keys and values are re-projected from (None: max(16, d_out // 8)). */
  latent_dim?: OptionalIntSlotValue;
}

/**
 * The constructor slots of MultiHeadAttentionWithSWA (chapter 4 bonus, ch04/06_swa/gpt_with_kv_swa.py): `MultiHeadAttentionWithSWA(d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MultiHeadAttentionWithSWAConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (float, required): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout: FloatSlotValue;
  /** Slot 4 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 5 (bool, default False): add a bias to the query, key and value projections. */
  qkv_bias?: BoolSlotValue;
  /** Slot 6 (int | None, default None): keys a query sees: itself and the sliding_window_size - 1 before it (None: every earlier key, plain causal). */
  sliding_window_size?: OptionalIntSlotValue;
}

/**
 * The constructor slots of GatedMultiHeadAttention (chapter 4 bonus, ch04/08_deltanet/README.md): `GatedMultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface GatedMultiHeadAttentionConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): most tokens the causal mask buffer covers (context_length x context_length). */
  context_length: IntSlotValue;
  /** Slot 4 (float, required): probability of zeroing each attention weight in training (survivors scaled by 1/(1-p)). */
  dropout: FloatSlotValue;
  /** Slot 5 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 6 (bool, default False): add a bias to W_query, W_gate, W_key and W_value. */
  qkv_bias?: BoolSlotValue;
}

/**
 * The constructor slots of MultiHeadAttention@ch05/07_gpt_to_llama (chapter 5 bonus, ch05/07_gpt_to_llama/converting-gpt-to-llama2.ipynb): `MultiHeadAttention(d_in, d_out, context_length, num_heads, dtype=None)`.
 * Required slots are required and no other key is allowed; strings are the slot's Python literal text.
 */
export interface MultiHeadAttention_ch05_07_gpt_to_llamaConfig {
  /** Slot 1 (int, required): width of each input token embedding (last axis of x). */
  d_in: IntSlotValue;
  /** Slot 2 (int, required): TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads. */
  d_out: IntSlotValue;
  /** Slot 3 (int, required): rows of the causal mask buffer and of RoPE's cos and sin tables: the most positions the module can take. */
  context_length: IntSlotValue;
  /** Slot 4 (int, required): number of heads sharing d_out; d_out must be divisible by it. */
  num_heads: IntSlotValue;
  /** Slot 5 (torch.dtype | None, default None): parameter dtype: None (float32, PyTorch's default; the book passes torch.bfloat16 for Llama 2 7B). */
  dtype?: DtypeSlotValue;
}

/** Each class's config type by class name: what the API checks a config against when the class name is a literal. */
export interface ClassConfigs {
  /** {@link SelfAttention_v1Config} */
  SelfAttention_v1: SelfAttention_v1Config;
  /** {@link SelfAttention_v2Config} */
  SelfAttention_v2: SelfAttention_v2Config;
  /** {@link CausalAttentionConfig} */
  CausalAttention: CausalAttentionConfig;
  /** {@link MultiHeadAttentionWrapperConfig} */
  MultiHeadAttentionWrapper: MultiHeadAttentionWrapperConfig;
  /** {@link MultiHeadAttentionConfig} */
  MultiHeadAttention: MultiHeadAttentionConfig;
  /** {@link MultiHeadAttentionCombinedQKVConfig} */
  MultiHeadAttentionCombinedQKV: MultiHeadAttentionCombinedQKVConfig;
  /** {@link MHAEinsumConfig} */
  MHAEinsum: MHAEinsumConfig;
  /** {@link MHAPyTorchScaledDotProductConfig} */
  MHAPyTorchScaledDotProduct: MHAPyTorchScaledDotProductConfig;
  /** {@link MHAPyTorchSDPAWithoutFlashConfig} */
  MHAPyTorchSDPAWithoutFlash: MHAPyTorchSDPAWithoutFlashConfig;
  /** {@link MHAPyTorchFlexAttentionConfig} */
  MHAPyTorchFlexAttention: MHAPyTorchFlexAttentionConfig;
  /** {@link MHAPyTorchClassConfig} */
  MHAPyTorchClass: MHAPyTorchClassConfig;
  /** {@link PyTorchMultiHeadAttentionConfig} */
  PyTorchMultiHeadAttention: PyTorchMultiHeadAttentionConfig;
  /** {@link GroupedQueryAttentionConfig} */
  GroupedQueryAttention: GroupedQueryAttentionConfig;
  /** {@link MultiHeadLatentAttentionConfig} */
  MultiHeadLatentAttention: MultiHeadLatentAttentionConfig;
  /** {@link MultiHeadAttentionWithSWAConfig} */
  MultiHeadAttentionWithSWA: MultiHeadAttentionWithSWAConfig;
  /** {@link GatedMultiHeadAttentionConfig} */
  GatedMultiHeadAttention: GatedMultiHeadAttentionConfig;
  /** {@link MultiHeadAttention_ch05_07_gpt_to_llamaConfig} */
  "MultiHeadAttention@ch05/07_gpt_to_llama": MultiHeadAttention_ch05_07_gpt_to_llamaConfig;
}
// END of the class and slot types (scripts/config-types.mjs)

/** A constructor slot of one class, in the order of the Python signature. */
export interface SlotSpec {
  /** The slot's name, as the Python signature spells it ("d_in", "num_heads", ...). */
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

/**
 * Any class's config, checked by the core only: slot name -> value, any key (an unknown one is the
 * core's "unknown_slot" diagnostic, a missing one its "missing_slot"). The API takes it where the class
 * name is not a literal (a `string` or `ClassName` variable); a literal class name gets its own config
 * type instead (see {@link ConfigFor}).
 */
export type Config = Partial<Record<SlotName, SlotValue>> & Record<string, SlotValue>;

/** An int slot's value: a number, or its Python literal text as typed in a form field ("768"). */
export type IntSlotValue = number | `${number}`;
/** A float slot's value: a number, or its Python literal text ("0.1"). */
export type FloatSlotValue = number | `${number}`;
/** A bool slot's value: a boolean, or Python's "True" / "False". */
export type BoolSlotValue = boolean | "True" | "False";
/** An "int | None" slot's value: a number, null for None, or the Python text ("4", "None"). */
export type OptionalIntSlotValue = number | `${number}` | null | "None";
/** A "torch.dtype | None" slot's value: null or "None" (float32, PyTorch's default), or "torch.float32" / "torch.float". */
export type DtypeSlotValue = null | "None" | "torch.float32" | "torch.float";

/** The mark that tells a ParsedConfig from a config written in the code (a type only: no such property exists). */
declare const parsedConfigMark: unique symbol;
// Only what is marked `export` is the module's (without this line a .d.ts exports every declaration).
export {};

/**
 * A config read from a pasted call (`ParsedCall.config`): any class's slots, as the text gave them. check,
 * describe, setup, create and run accept it whatever the class name, since the core diagnoses it; a
 * config written in the code is checked against its class's type ({@link ConfigFor}).
 */
export type ParsedConfig = Partial<Record<SlotName, SlotValue>> & {
  /** A type-only mark (absent at run time): only parseCall makes a ParsedConfig. */
  readonly [parsedConfigMark]: true;
};

/**
 * The config the API takes with the class name `C`: for one literal class name, that class's config
 * type ({@link ClassConfigs}: `lab.create("MultiHeadAttention", {d_inn: 3})`, a missing `num_heads` or
 * `qkv_bias: 1` fail to compile); for a `string` or a whole-`ClassName` variable, or a name that is no
 * class, the loose {@link Config}, which the core checks at run time. check, describe, setup, create
 * and run also take a {@link ParsedConfig} with any class name.
 */
export type ConfigFor<C extends string> = string extends C
  ? Config
  : [ClassName] extends [C]
    ? Config
    : C extends ClassName
      ? ClassConfigs[C]
      : Config;

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
  /** a class whose forward works on x's own width (a view, nn.MultiheadAttention's embed_dim) given d_in != d_out */
  | "d_in_d_out_differ"
  /** a dtype other than None or torch.float32 */
  | "dtype"
  /** a class with RoPE given an odd head_dim (d_out / num_heads): RoPE rotates halves */
  | "rope_head_dim"
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
  /** warning or hint: d_out given as one head's width to a class whose heads share d_out */
  | "d_out_per_head"
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
  /** checkModule given an output or stage of another shape than the book's forward gives (names it and the shape with its axes), or a stage id other than attn_scores, attn_weights, context_vec */
  | "check_tensor"
  /** lab.checkModule given a file that is not a check file: a safetensors file, or a torch.save dict without its call (a string), x, output or state_dict, or whose seed is not an int (names the key; the hint shows the snippet line that writes it) */
  | "check_file"
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
  /** a torch.save file in the legacy format (torch < 1.6) that this reader does not read: saved big-endian, or holding a torch < 0.4 storage view; the hint says to save it again */
  | "checkpoint_legacy_format"
  /** a torch.save zip whose records are not what torch writes, or whose entry offsets or sizes lie (names the entry) */
  | "checkpoint_zip"
  /** a compressed or encrypted entry in a torch.save zip (torch stores them uncompressed; names it) */
  | "checkpoint_zip_compressed"
  /** a data.pkl the state dict reader cannot read: an opcode outside its subset, a malformed or cut-off argument (names the opcode and byte) */
  | "checkpoint_pickle"
  /** a pickle naming a global a state dict never needs, e.g. os.system (names it; nothing is run) */
  | "checkpoint_pickle_global"
  /** a whole pickled object, e.g. torch.save(model) (names its class; the hint says torch.save(model.state_dict(), ...)) */
  | "checkpoint_pickled_module"
  /** a tensor that reaches past its storage, a storage shorter than it claims, or one the zip does not hold (names the key) */
  | "checkpoint_storage"
  /** a torch.save file past the reader's bounds: zip entries, pickle bytes, values (a million-entry dict), nesting (names the bound) */
  | "checkpoint_limit"
  // loading the core (loadAttentionLab)
  /** loadAttentionLab given two of wasmUrl, wasmBinary and wasmPaths, or a checkpoints that is not a boolean */
  | "wasm_options"
  /** wasmUrl that is not a URL or a non-empty string, wasmPaths that is not a folder ending in / or a function giving URLs, or a .wasm that cannot be located (a classic-script bundle) */
  | "wasm_url"
  /** wasmBinary (or what wasmUrl served) that is not attention_core.wasm: not bytes, detached, no \0asm magic, or from another build */
  | "wasm_binary"
  /** the .wasm could not be fetched or read (network error, HTTP status, missing file, no fetch); names the file asked for and its URL */
  | "wasm_fetch"
  /** the page's Content-Security-Policy does not let WebAssembly compile (even the empty module is refused, so not a broken binary): loadAttentionLab, the element's load-error and run() name the directive to add (script-src 'wasm-unsafe-eval') */
  | "wasm_csp"
  /** the core is already loaded from another source (it is loaded once: pass the options on the first call) */
  | "wasm_loaded"
  /** a head split's Worker (createHeadSplit) that could not start or load its core (CSP worker-src, a missing file) */
  | "worker_failed"
  /** the page requires Trusted Types and refuses a Worker's script URL: the element's policy (attention-lab) is not allowed (its load-error names the trusted-types entry to add; runs stay on the page's thread), or a head split's Worker has a plain URL (createHeadSplit({workerUrl}) takes a TrustedScriptURL) */
  | "trusted_types"
  /** loadAttentionLab's threads (or the core's set_threads) that is not a whole number from 1 to 16 */
  | "bad_threads"
  /** a head-split method (headShares, forwardShare, projectHeads, revision) on a lab loaded with {checkpoints: false}: the lean binary has none */
  | "no_head_split"
  /** a checkpoint method (openCheckpoint, loadCheckpoint, checkpointInput, loadGPT2) on a lab loaded with {checkpoints: false}: the lean binary has no readers */
  | "no_checkpoints"
  // arguments and lifetimes
  /** reading an argument threw (a getter, a Proxy trap) */
  | "unreadable_argument"
  /** a share of a forward's heads (forwardShare, projectHeads) that is not whole key/value groups, or with a trace, a cache or dropout acting, or joined heads of the wrong shape */
  | "head_share"
  /** an options argument that is not an object */
  | "bad_options"
  /** an options object with a name the call has no option of, e.g. a misspelt tempreature (names it; did-you-mean in the message) */
  | "unknown_option"
  /** the module, generator, checkpoint file, GPT-2 model or lazy trace was disposed */
  | "disposed"
  /** the WebAssembly heap is full of results not released (lazy traces, modules, KV caches) while the call alone fits the budget: names them and how to release them (dispose()) */
  | "results_not_released"
  /** a lazy trace asked for a stage it does not have (names the id and lists the trace's stages) */
  | "trace_stage"
  /** a lazy trace query out of range: a batch or head index, a window's offset + size past its axis, a heatmap side outside 1..4096 (names the axis and value) */
  | "trace_range"
  /** a GPT-2 model is already running (one run at a time per model) */
  | "busy"
  /** a step of a GPT-2 run or generation with none in progress: the model has no run, no generation, or its generation is finished (model.run and model.generate start one) */
  | "not_in_progress"
  /** a GPT-2 run was cancelled through its signal */
  | "cancelled"
  /** an option of model.run or model.estimateBytes out of its range (attention: "full" or "thumbnails"; num_tokens: a whole number from 1 to n_ctx); names it */
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

/**
 * One problem with a configuration or an input, as the core's validator reports it: all of them at
 * once, errors (they block the run) before warnings (suspicious but legal) and info.
 */
export interface Diagnostic {
  /** "error" blocks create and run; "warning" and "info" explain a legal setup. */
  severity: "error" | "warning" | "info";
  /** Stable machine code, e.g. "heads_divisibility", "missing_slot", "input_width". */
  code: ErrorCode;
  /** The slots involved (may be empty for class-level or input problems). */
  slots: string[];
  /** What is wrong, naming the values (e.g. "d_out = 3 is not divisible by num_heads = 2"). */
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
  fixes: Array<{
    /** The slot to change. */
    slot: string;
    /** Its new value, as Python text. */
    value: string;
    /** The whole call with the fix applied. */
    call: string;
  }>;
}

/** One slot of a pasted call, as parseCall read it. */
export interface ParsedSlot {
  /** The slot's name (an unknown keyword keeps its own). */
  name: string;
  /** 1-based slot position in the class signature (0 for an unknown keyword). */
  position: number;
  /** The value read (a number, a boolean, null for None, or the text of an expression such as torch.float32). */
  value: SlotValue;
  /** Where the value came from: a positional argument, a keyword argument, or the signature's default. */
  source: "positional" | "keyword" | "default";
  /** The text as written in the call ("" for defaults). */
  text: string;
}

/** A pasted Python constructor call, read by parseCall. */
export interface ParsedCall {
  /** "" when no class name could be read. */
  className: string;
  /** Slot name -> value, for describe, setup, create, ... with any class name (see {@link ParsedConfig}). */
  config: ParsedConfig;
  /** Every slot given or defaulted, left to right (a missing required slot is absent and diagnosed), then unknown keywords. */
  slots: ParsedSlot[];
  /** Every problem of the call: its syntax, then the configuration's (as check gives them). */
  diagnostics: Diagnostic[];
}

/** One parameter of a class's configuration, before it is built. */
export interface ParameterInfo {
  /** PyTorch's name, as named_parameters() gives it ("W_query.weight", "out_proj.bias"). */
  name: string;
  /** Its shape, e.g. [d_out, d_in] for an nn.Linear weight. */
  shape: number[];
  /** Its element count (the product of shape). */
  count: number;
}

/** Derived facts of a configuration, available before anything is allocated. */
export interface Description {
  /** false when any diagnostic is an error; the derived facts below are then absent. */
  ok: boolean;
  /** The configuration's diagnostics (no input checks: see check with inputShape). */
  diagnostics: Diagnostic[];
  /** Every slot with defaults filled in. */
  config?: Record<SlotName, number | boolean>;
  /** The positional Python call, e.g. "MultiHeadAttention(768, 768, 1024, 0.0, 12)". */
  pythonCall?: string;
  /** d_k of the 1/sqrt(d_k) scaling: d_out for the single-head classes, d_out / num_heads for the fused ones. */
  headDim?: number;
  /** The last axis of the output: num_heads x d_out for the wrapper, d_out otherwise. */
  outputWidth?: number;
  /** The rule that gives it, with the numbers, e.g. "d_out = 768, shared by 12 heads of 64". */
  outputWidthRule?: string;
  /** Every parameter in registration order (named_parameters()). */
  parameters?: ParameterInfo[];
  /** Their total element count (2,360,064 for GPT-2 small's attention). */
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
  /** The class name as the core read it. */
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
  memory: {
    /** The estimate of the run's peak, in bytes (as estimateBytes). */
    bytes: number;
    /** The core's memory budget, in bytes. */
    budget: number;
  } | null;
}

/** One seeded construction and one forward pass (`lab.run`): the module's facts and what it gave. */
export interface RunResult {
  /** The class run. */
  className: ClassName;
  /** Every slot with defaults filled in. */
  config: Record<SlotName, number | boolean>;
  /** The positional Python call, e.g. "MultiHeadAttention(3, 2, 6, 0.0, 2)". */
  pythonCall: string;
  /** d_k of the 1/sqrt(d_k) scaling. */
  headDim: number;
  /** The output's last axis. */
  outputWidth: number;
  /** The rule that gives outputWidth, with the numbers. */
  outputWidthRule: string;
  /** The forward's output, `(b, num_tokens, outputWidth)` (or `(num_tokens, d_out)` for the SelfAttention classes). */
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
  /** The batch size b of the preset's input. */
  batch: number;
  /** E.g. why qkv_bias is False in the GPT-2 presets. */
  note: string;
  /** Place among every class's presets as a page lists them (the book's examples first). */
  order: number;
}

/** The core's facts about one class: the page and the widget read them and keep no copy. */
export interface ClassFacts {
  /** The class's name, as the book's Python spells it. */
  name: ClassName;
  /** One or two sentences: what the class does. */
  doc: string;
  /** The book section, e.g. "section 3.6.2", or the bonus folder and file. */
  source: string;
  /** Where the class lives in the book's repository; section is "" for bonus material. */
  book: {
    /** The chapter, e.g. "3". */
    chapter: string;
    /** The folder of the book's repository, e.g. "ch03/01_main-chapter-code". */
    folder: string;
    /** The file in it, e.g. "ch03.ipynb". */
    file: string;
    /** The section, e.g. "section 3.6.2" ("" for bonus material). */
    section: string;
  };
  /** The constructor slots, in the order of the Python signature. */
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
  /**
   * What the mask sets masked scores to before softmax (attn_scores_masked): -Infinity, or for a class
   * whose code fills torch.finfo(torch.float32).min (GatedMultiHeadAttention) that value,
   * -3.4028234663852886e38: its weights are still exactly 0 unless a query's every key is masked, which
   * then gets equal weights instead of NaN. Stage summaries count it in {@link StageSummary.masked}.
   */
  maskFill: number;
  /** Whether the forward reads context_length, so that num_tokens > context_length is refused. */
  contextLimit: boolean;
  /** Dropout on the attention weights, none, or a dropout slot the forward ignores (FlexAttention). */
  dropoutRule: "none" | "weights" | "ignored";
  /** Whether PyTorch's forward needs d_in == d_out (a view to x's width, nn.MultiheadAttention's embed_dim). */
  needsSquare: boolean;
  /** Classes whose modules copyWeights copies into this one with the book's map, with a sentence on the outcome. */
  copiesFrom: {
    /** The source class. */
    from: ClassName;
    /** A sentence on what the copy gives. */
    note: string;
  }[];
  /** Ready setups for this class (the book's examples, the GPT-2 sizes). */
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

/** The whole stage at a glance, computed by the core: min, max and mean over its finite values that are not masked (NaN when none). */
export interface StageSummary {
  /** The smallest finite value that is not masked. */
  min: number;
  /** The largest finite value that is not masked. */
  max: number;
  /** The mean of the finite values that are not masked. */
  mean: number;
  /** Values that are -inf. */
  negInf: number;
  /**
   * Masked values, left out of min, max and mean: on attn_scores_masked those that hold the class's
   * {@link ClassFacts.maskFill} (-inf, or torch.finfo(float32).min), on every other stage those that are -inf.
   */
  masked: number;
  /** Values that are exactly 0 (masked or dropped weights). */
  zeros: number;
  /** Every value, finite or not. */
  count: number;
  /** Values that are NaN, +inf or -inf. */
  nonFinite: number;
  /** Rows (along the last axis) that begin with NaN: a query whose every key is masked gets softmax(all -inf), a row of NaN. */
  nanRows: number;
}

/** One stage of a {@link LazyTrace}: every fact of a {@link Stage} but its values, which stay in WASM memory. */
export interface LazyStage {
  /** As {@link Stage.id}. */
  id: StageId;
  /** As {@link Stage.display}. */
  display: StageDisplay;
  /** As {@link Stage.title}. */
  title: string;
  /** As {@link Stage.formula}. */
  formula: string;
  /** The name of each axis of `shape`. */
  axes: string[];
  /** The sizes, row-major. */
  shape: number[];
  /** Min, max, mean and counts over the whole stage. */
  summary: StageSummary;
  /** One summary per slice over the last two axes, in row-major order of the leading axes. */
  sliceSummaries: StageSummary[];
  /** The value at index 0 (NaN for an empty stage): the mask's first value says whether it is inverted. */
  first: number;
}

/** A heatmap of one slice of a lazy stage, downsampled by the core. */
export interface LazyHeatmap {
  /** The stage's id. */
  stage: string;
  /** The slice's rows (the stage's second-to-last axis). */
  rows: number;
  /** The slice's columns (its last axis). */
  cols: number;
  /** Cells down: min(rows, the height asked). */
  height: number;
  /** Cells across: min(cols, the width asked). */
  width: number;
  /**
   * `(height, width)` row-major float32: each cell the max of its block of the slice (rows
   * floor(y * rows / height) up to the next cell's start, at least one; columns likewise). NaN never
   * wins a cell and a cell whose values are all -inf or NaN is -inf, so masked cells stay masked.
   */
  values: Float32Array;
}

/** A window of a lazy stage (a table's visible part). */
export interface LazySlice {
  /** The stage's id. */
  stage: string;
  /** The window's sizes (the `sizes` asked). */
  shape: number[];
  /** Its values, row-major float32. */
  data: Float32Array;
  /** For each row of the window (each index of its leading axes, row-major), the sum of the whole row of the stage along its last axis, not only the window's columns. */
  rowSums: number[];
}

/**
 * A forward's trace kept in WASM memory (`trace: "lazy"`): the stages' facts at once, their values
 * asked for as they are drawn, computed by the core. It holds `bytes` of WASM memory until
 * `dispose()` (or garbage collection); every query after that throws "disposed".
 *
 * Dropping it is allowed, but the garbage collector sees only this small object, not the heap behind
 * it, so it may collect it late (and never inside one synchronous loop). A run that finds the heap full
 * first releases every result the collector has already found unreachable and tries again; if the heap
 * is still full of results alive, it throws "results_not_released" naming them (not "too_large"). A
 * loop of runs should dispose each trace.
 */
export interface LazyTrace {
  /** Each stage's facts, in trace order (the ids of {@link Stage.id}). */
  readonly stages: readonly LazyStage[];
  /**
   * Bytes of float32 values it holds in WASM memory. The masked scores, and the dropout stage when no
   * dropout acted, hold none: the core reads them from the scores (with the mask's -inf) and the
   * weights when asked, the same values an eager trace copies out.
   */
  readonly bytes: number;
  /** True once dispose() ran. */
  readonly disposed: boolean;
  /**
   * One slice over the stage's last two axes, max-pooled by the core to the cells it is drawn on.
   * @param stage - A stage id, e.g. "attn_weights".
   * @param options - `batch` and `head` (default 0; `head` only for a rank-4 stage, `batch` for rank 3
   *   and 4), `width` and `height` in cells (whole numbers from 1 to 4096, default 512; a side larger
   *   than the slice's gives the slice's).
   * @returns The {@link LazyHeatmap}.
   * @throws {@link AttentionError} "trace_stage" (no such stage; the message lists them), "trace_range"
   *   (slot "batch" or "head": an index past its axis, named with the axis size, or not a whole number
   *   such as NaN or 1.5; slot "width" or "height": a side outside 1..4096), "disposed" (slot "trace").
   */
  heatmap(stage: string, options?: { batch?: number; head?: number; width?: number; height?: number }): LazyHeatmap;
  /**
   * A window of the stage: `sizes[i]` entries from `offsets[i]` on each axis.
   * @param stage - A stage id.
   * @param options - `offsets` and `sizes`, one whole number per axis, `offsets[i] + sizes[i] <= shape[i]`.
   * @returns The {@link LazySlice}, with each row's sum over the whole last axis.
   * @throws {@link AttentionError} "trace_range" (slot "offsets": not one per axis, or past an axis,
   *   named with its size), "trace_stage", "disposed".
   * @example
   * ```ts
   * const { trace } = lab.run("MultiHeadAttention", config, x, { trace: "lazy" });
   * trace.slice("attn_weights", { offsets: [0, 0, 0, 0], sizes: [1, 1, 12, 12] }).rowSums; // 12 x 1
   * trace.heatmap("attn_weights", { batch: 0, head: 3, width: 240, height: 240 }).values.length; // 57600
   * trace.dispose();
   * ```
   */
  slice(stage: string, options: { offsets: number[]; sizes: number[] }): LazySlice;
  /**
   * A copy of the whole stage (an export).
   * @param stage - A stage id.
   * @returns The tensor, as `trace: true` gives it.
   * @throws {@link AttentionError} "trace_stage", "disposed".
   */
  data(stage: string): Tensor;
  /**
   * Every stage copied out, as `trace: true` gives them.
   * @returns The stages, values and all.
   * @throws {@link AttentionError} "disposed".
   */
  data(): Stage[];
  /** Frees the trace's WASM memory now; later queries throw "disposed". */
  dispose(): void;
}

// BEGIN generated from core/src/stage_table.cpp by scripts/stage-ids.mjs
/**
 * The id of every stage a trace can hold, in trace order: a forward emits those its class and run have
 * (each member says when). The list lives in core/src/stage_table.cpp (kStages): add a stage there, then run
 * `node scripts/stage-ids.mjs`, which writes this union.
 */
export type StageId =
  /** Emitted by every forward; shown as "vectors". */
  | "input"
  /** Emitted by every forward; shown as "vectors". */
  | "queries"
  /** Emitted by a forward of a latent class (MultiHeadLatentAttention): its latent, (b, num_tokens, latent_dim); shown as "vectors". */
  | "c_kv"
  /** Emitted by a cached step of a latent class: every latent row its cache holds, (b, keys, latent_dim); shown as "vectors". */
  | "cache_c_kv"
  /** Emitted by every forward; shown as "vectors". */
  | "keys"
  /** Emitted by every forward; shown as "vectors". */
  | "values"
  /** Emitted by a forward of a class with rotary position embeddings (RoPE) on queries and keys; shown as "vectors". */
  | "cos"
  /** Emitted by a forward of a class with rotary position embeddings (RoPE) on queries and keys; shown as "vectors". */
  | "sin"
  /** Emitted by a forward of a class with rotary position embeddings (RoPE) on queries and keys; shown as "vectors". */
  | "queries_rope"
  /** Emitted by a forward of a class with rotary position embeddings (RoPE) on queries and keys; shown as "vectors". */
  | "keys_rope"
  /** Emitted by a cached step of the other classes: every key (value) the chunk's queries read; shown as "vectors". */
  | "cache_k"
  /** Emitted by a cached step of the other classes: every key (value) the chunk's queries read; shown as "vectors". */
  | "cache_v"
  /** Emitted by every forward; shown as "scores". */
  | "attn_scores"
  /** Emitted by a forward of a class with a causal mask; shown as "mask". */
  | "mask"
  /** Emitted by a forward of a class with a causal mask; shown as "scores". */
  | "attn_scores_masked"
  /** Emitted by every forward; shown as "weights". */
  | "attn_weights"
  /** Emitted by a forward of a class with dropout on the attention weights; shown as "weights". */
  | "attn_weights_dropout"
  /** Emitted by every forward; shown as "vectors". */
  | "context_vec"
  /** Emitted by a forward of a class with heads to merge; shown as "vectors". */
  | "heads_concat"
  /** Emitted by a forward of a class with an output gate: the merged heads times sigmoid(gate), (b, num_tokens, d_out); shown as "vectors". */
  | "gate"
  /** Emitted by a forward of a class with an output projection; shown as "vectors". */
  | "out_proj"
  /** Emitted by a forward of a class with a second projection after out_proj (MHAPyTorchClass); shown as "vectors". */
  | "proj"
  /** Emitted by every forward; shown as "vectors". */
  | "output";

/** How the page shows a stage ({@link Stage.display}), from the same table. */
export type StageDisplay =
  /** a table of numbers, a row per token (per head and batch item when it has those axes) */
  | "vectors"
  /** a heatmap on the stage's own scale (its finite min to max) beside its table */
  | "scores"
  /** a heatmap from 0 to at least 1 beside its table: each row's sum is shown, and an exact 0 is a masked or dropped weight */
  | "weights"
  /** a heatmap of 0 and 1 beside its table (1: the key is hidden from the query) */
  | "mask";
// END of the stage ids (scripts/stage-ids.mjs)

/** One stage of a forward pass: a tensor with its id, title, formula and named axes (`axes` names each axis of `shape`). */
export interface Stage extends Tensor {
  /** The stage's id: those the class and run have, in {@link StageId}'s order. */
  id: StageId;
  /** How the page shows it (a table, or a heatmap beside it), from the core's stage table. */
  display: StageDisplay;
  /** The stage's title as the page shows it, e.g. "Attention weights per head (each row sums to 1)". */
  title: string;
  /** How it is computed, in the book's notation, e.g. "torch.softmax(attn_scores / d_k**0.5, dim=-1)". */
  formula: string;
  /** The name of each axis of `shape`, e.g. ["b", "num_heads", "query", "key"]. */
  axes: string[];
  /** Min, max, mean and counts over the whole stage. */
  summary: StageSummary;
  /** One summary per slice over the last two axes, in order (per batch item and head for (b, num_heads, T, T)). */
  sliceSummaries: StageSummary[];
}

/** What module.forward gives with `trace: "lazy"`. */
export interface LazyForwardResult {
  /** The output, the same bits as without a trace. */
  output: Tensor;
  /** The trace, kept in WASM memory. */
  trace: LazyTrace;
  /** As {@link ForwardResult.warnings}. */
  warnings?: Diagnostic[];
}

/** What lab.run gives with `trace: "lazy"`: {@link RunResult} with a {@link LazyTrace}. */
export interface LazyRunResult extends Omit<RunResult, "trace"> {
  /** The trace, kept in WASM memory. */
  trace: LazyTrace;
}

/** A share of a forward's query heads: `[first, first + count)` (AttentionModule.headShares). */
export interface HeadShare {
  /** The first query head of the share. */
  first: number;
  /** How many query heads, whole key/value groups of them. */
  count: number;
}

/** What module.forward gives. */
export interface ForwardResult {
  /** The output, `(b, num_tokens, outputWidth)` (or `(num_tokens, d_out)` for the SelfAttention classes). */
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

/** What module.forward gives with `trace: true`: {@link ForwardResult} with the trace always there. */
export interface TracedForwardResult extends ForwardResult {
  /** Every stage the forward made, in trace order (copied out). */
  trace: Stage[];
}

/** A random stream equal to PyTorch's CPU default generator after `torch.manual_seed(seed)`. */
export interface Generator {
  /** The seed it was made with (manualSeed(seed)). */
  readonly seed: number;
  /**
   * torch.rand(*shape): uniform floats in [0, 1), drawn from this stream.
   * @param shape - The sizes of the axes.
   * @returns A new tensor of that shape.
   * @throws {@link AttentionError} "tensor_shape" for sizes that are not whole numbers, "too_large", "disposed".
   */
  rand(shape: number[]): Tensor;
  /**
   * nn.Dropout(p) in training mode applied to `tensor` (survivors scaled by 1/(1-p)), the mask drawn
   * from this stream as PyTorch's CPU kernel draws it.
   * @param tensor - Any tensor.
   * @param p - The probability of zeroing each value, in [0, 1].
   * @returns A new tensor of the same shape.
   * @throws {@link AttentionError} "dropout_range", the tensor codes, "disposed".
   */
  dropout(tensor: TensorLike, p: number): Tensor;
  /**
   * Frees the generator's state in WASM memory now; garbage collection does it otherwise (nothing
   * needs calling). Using it afterwards throws AttentionError "disposed" (slot "generator"). A module
   * made with it (lab.create's `generator`) shares its state: the module's training forwards go on
   * drawing their dropout masks from that stream, which lives until the module is released too.
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
  /**
   * Empties the cache (the book's reset_cache): the next chunk is at position 0.
   * @throws {@link AttentionError} "disposed".
   */
  reset(): void;
  /** Frees the cache's memory now (garbage collection does it otherwise). */
  dispose(): void;
}

/**
 * A module built by create, fromParameters, loadCheckpoint or convert: the Python module's parameters
 * in WASM memory (written once, read by every forward), and its forward.
 */
export interface AttentionModule {
  /** Its class. */
  readonly className: ClassName;
  /** Every slot with defaults filled in. */
  readonly config: Readonly<Record<SlotName, number | boolean>>;
  /** d_k used in the 1/sqrt(d_k) scaling. */
  readonly headDim: number;
  /** The output's last axis: num_heads x d_out for the wrapper, d_out otherwise. */
  readonly outputWidth: number;
  /** e.g. "num_heads x d_out = 2 x 1 = 2". */
  readonly outputWidthRule: string;
  /** The total element count of its parameters. */
  readonly parameterCount: number;
  /** What fromParameters checked besides the parameters (e.g. a state_dict's causal mask buffer); empty otherwise. */
  readonly notes: readonly string[];
  /**
   * Copies of every parameter, in PyTorch's named_parameters() order and names.
   * @returns One entry per parameter (e.g. W_query.weight `(d_out, d_in)`), its data a fresh copy.
   * @throws {@link AttentionError} "disposed".
   */
  parameters(): Array<{
    /** PyTorch's name, e.g. "W_query.weight". */
    name: string;
    /** Its shape, e.g. [d_out, d_in]. */
    shape: number[];
    /** A copy of its values, row-major. */
    data: Float32Array;
  }>;
  /**
   * Overwrites one parameter (as `module.<name>.data.copy_(tensor)` in PyTorch).
   * @param name - PyTorch's name, as parameters() gives it.
   * @param tensor - The values, of the parameter's shape.
   * @throws {@link AttentionError} "unknown_parameter" on a bad name, "parameter_shape" on a bad shape,
   *   "non_finite_parameter", the tensor codes, "disposed".
   */
  setParameter(name: string, tensor: TensorLike): void;
  /**
   * The forward pass with `trace: true`: as the next signature, with the trace always there (so
   * `trace.find(...)` needs no `?.` under `strict`).
   * @param x - As in the next signature.
   * @param options - As in the next signature, with `trace: true`.
   * @returns The output and every stage ({@link TracedForwardResult}).
   * @throws {@link AttentionError} as the next signature.
   * @example
   * ```ts
   * const { output, trace } = mha.forward({ shape: [2, 6, 3], data }, { trace: true });
   * trace.map((s) => s.id); // ["input", "queries", ..., "output"]
   * ```
   */
  forward(x: TensorLike, options: { training?: boolean; generator?: Generator; trace: true; cache?: KvCache }): TracedForwardResult;
  /**
   * The module's forward pass, as `module(x)` in PyTorch.
   * @param x - Input `(num_tokens, d_in)` for the SelfAttention classes, `(b, num_tokens, d_in)` otherwise.
   * @param options - `training` defaults to true (a fresh PyTorch module is in training mode);
   *   `generator` draws the dropout masks (default: the module's own, from create, which it keeps
   *   drawing on after that generator's dispose()); `trace: true`
   *   returns every stage; `cache` appends to a KV cache (see newCache).
   * @returns The output `(b, num_tokens, outputWidth)`, the trace when asked, and warnings.
   * @throws {@link AttentionError} (slot "x" unless named): "tensor_shape", "tensor_size",
   *   "input_rank", "input_empty", "input_width" ("d_in"), "context_too_short" ("context_length"),
   *   "too_large" (the traced run is over the memory budget; refused before allocating),
   *   "non_finite_input", "generator_missing", the cache codes, "disposed"; "results_not_released"
   *   (slot: the kind holding the most, e.g. "trace") when the WebAssembly heap is full of lazy traces,
   *   modules and KV caches not released while this forward alone is within the budget (results
   *   already collected are released, and the forward tried again, first).
   * @example
   * ```ts
   * const { output, trace } = mha.forward({ shape: [2, 6, 3], data }, { trace: true });
   * output.shape; // [2, 6, 2]: (b, num_tokens, d_out)
   * trace?.find((s) => s.id === "attn_weights")?.axes; // ["b", "num_heads", "query", "key"]
   * ```
   */
  forward(x: TensorLike, options?: { training?: boolean; generator?: Generator; trace?: boolean; cache?: KvCache }): ForwardResult;
  /**
   * The forward with its trace kept in WASM memory: the stages' facts at once, their values on request
   * ({@link LazyTrace}); the output is the same bits. Estimated by `estimateBytes(..., {trace: "lazy"})`.
   * @param x - As in the previous signature.
   * @param options - As in the previous signature, with `trace: "lazy"`.
   * @returns The output and the {@link LazyTrace} (dispose it when drawn).
   * @throws {@link AttentionError} as the previous signature.
   */
  forward(x: TensorLike, options: { training?: boolean; generator?: Generator; trace: "lazy"; cache?: KvCache }): LazyForwardResult;
  /**
   * The shares of the query heads a forward splits into over at most `parts` plain Workers (the
   * core's head_shares, web/lib/head-split.js runs them): whole key/value groups, as even as they
   * allow, in head order. One share of every head where the heads cannot split: a single-head class,
   * one key/value head, or `training` (the default) with dropout > 0 (the draws are one stream).
   * @param parts - The most shares, a whole number from 1 to 64.
   * @param options - `training` (default true, as forward's): with dropout > 0 the heads do not split.
   * @returns The shares in head order, `{first, count}` each.
   * @throws {@link AttentionError} "bad_options" (slot "parts"), "disposed".
   * @example
   * ```ts
   * mha.headShares(2, { training: false }); // [{first: 0, count: 6}, {first: 6, count: 6}] for 12 heads
   * ```
   */
  headShares(parts: number, options?: { training?: boolean }): HeadShare[];
  /**
   * One share's part of an untraced, uncached forward: its columns of heads_concat,
   * `(b, num_tokens, count * head_dim)` row-major, each value with the bits the whole forward gives it.
   * On one thread. Join every share's part with {@link AttentionModule.projectHeads}.
   * @param x - The input `(b, num_tokens, d_in)` row-major, as forward's.
   * @param share - One of {@link AttentionModule.headShares}.
   * @param options - `training` (default true): must not have dropout acting.
   * @returns The share's part `(b, num_tokens, count * head_dim)`.
   * @throws {@link AttentionError} forward's input codes; "head_share" (a single-head class, a share
   *   that is not whole key/value groups, dropout acting: slot "dropout"), "disposed".
   */
  forwardShare(x: TensorLike, share: HeadShare, options?: { training?: boolean }): Tensor;
  /**
   * The output of the shares joined: every share's forwardShare part for this `x`, in head order,
   * side by side (heads_concat `(b, num_tokens, num_heads * head_dim)`), through out_proj (and proj)
   * as forward runs them, or heads_concat itself for MultiHeadAttentionWrapper: the bits of
   * `forward(x, {training})`, with its warnings.
   * @param x - The input the shares ran on.
   * @param parts - Every share's forwardShare part, in head order.
   * @param options - `training` (default true), as the shares ran.
   * @returns The output `(b, num_tokens, outputWidth)` and forward's warnings.
   * @throws {@link AttentionError} forward's input codes; "head_share" (slot "heads_concat": parts of
   *   another shape; slot "share": a single-head class), "disposed".
   */
  projectHeads(x: TensorLike, parts: readonly TensorLike[], options?: { training?: boolean }): ForwardResult;
  /** A number that changes whenever this module's parameters may have changed (setParameter, copyWeights into it, loadCheckpoint into it). */
  readonly revision: number;
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
   * @param options - `window`: keep at most this many entries.
   * @returns An empty {@link KvCache}.
   * @throws {@link AttentionError} "cache_unsupported" for a class without a causal mask over its own
   *   keys, "cache_window" for a window that is not a whole number from 1, "disposed".
   */
  newCache(options?: { window?: number }): KvCache;
  /**
   * The module's parameters live in WASM memory (written once, read by every forward). They are
   * freed when this object is garbage-collected; dispose() frees them now. Any later call throws
   * AttentionError "disposed" (slot "module"). Calling it twice is harmless. The collector does not see
   * the parameters' bytes and may collect a dropped module late: many modules made in a loop should be
   * disposed (a call that finds the heap full of them throws "results_not_released").
   */
  dispose(): void;
}

/** What copyWeights does with one parameter. */
export interface CopyPlanEntry {
  /** Copy it (false: the target keeps its own values). */
  copy: boolean;
  /** Transpose it on the way (nn.Linear's (out, in) <-> a matrix used as x @ W). */
  transpose: boolean;
}
/**
 * Keys: "W_query", "W_key", "W_value" between SelfAttention_v1 and _v2 (exercise 3.1); the target's
 * parameter names ("qkv.weight", "W_key", "proj.bias", ...) for MultiHeadAttention into a chapter 3
 * bonus class, where a missing key follows the book's map, {copy: false} keeps the target's own
 * values and {transpose: false} skips a transpose the map needs. An entry with another name
 * ({tranpose: true}) is AttentionError "unknown_option", naming the entry and the name meant.
 */
export type CopyPlan = Partial<Record<string, CopyPlanEntry>>;

/** What copyWeights did with one target parameter. */
export interface CopyMatrixReport {
  /** The target parameter. */
  name: string;
  /** packed: rows stacked from several sources (qkv = cat(W_query, W_key, W_value)); identity: an
   * operator the source lacks (an inner out_proj: I, or a zero bias); kept: the target keeps its own
   * (bias_k/bias_v, a bias the source lacks); untransposed: a plan skipped the transpose the map needs. */
  action: "copied" | "transposed" | "not_copied" | "shape_mismatch" | "packed" | "identity" | "kept" | "untransposed";
  /** The source parameters it is made from (empty for identity and kept). */
  sources: string[];
  /** The source's shape (as stored). */
  fromShape: number[];
  /** The target's shape. */
  toShape: number[];
  /** What to do about it ("" when nothing). */
  hint: string;
}

/** What copyWeights did and whether the two modules now agree. */
export interface CopyReport {
  /** One entry per target parameter. */
  matrices: CopyMatrixReport[];
  /** Max |from(tokens) - to(tokens)| over the outputs; null when the output shapes differ. */
  maxAbsDiff: number | null;
  /** maxAbsDiff <= 1e-6 */
  agree: boolean;
  /** Sentences about what else matters (biases, shapes). */
  notes: string[];
  /** The input both modules were compared on. */
  tokens: Tensor;
  /** Every stage both modules have (same id and shape), compared on `tokens` in eval mode. */
  stages: StageDiff[];
  /** The PyTorch lines of this copy, e.g. "sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)\n...". */
  code: string;
}

/** One stage two modules share, compared. */
export interface StageDiff {
  /** The stage id (see {@link Stage.id}). */
  id: string;
  /** Max |a - b| over the stage's values. */
  maxAbsDiff: number;
}

/** What loadCheckpoint read from the file, and how. */
export interface CheckpointReport {
  /** Keys whose values were loaded, with the file's own names. */
  used: string[];
  /** The first 200 other keys, in the header's order, and why each was not used (mask buffers, other layers, embeddings, ...). */
  ignored: Array<{
    /** The file's key. */
    key: string;
    /** Why it was not used. */
    reason: string;
  }>;
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
  /** The checkpoint layout the keys follow (the core's table of layouts): "huggingface" or "book". */
  layout: "huggingface" | "book";
  /** Its name for the page: "Hugging Face GPT-2" or "the book's GPTModel". */
  layoutName: string;
  /**
   * How each tensor read maps into the book's MultiHeadAttention, one line each, from the layout table:
   * "h.0.attn.c_attn.weight (768, 2304): split in three along dim 1, each transposed -> W_query.weight
   * (768, 768), ..." for Hugging Face's file, "trf_blocks.0.att.W_query.weight (768, 768): copied as is" for the book's.
   */
  mapping: string[];
}

/** loadCheckpoint's options. */
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
 * A .safetensors or torch.save file opened once by lab.openCheckpoint, told apart by its first bytes
 * (a zip, "PK\x03\x04", is torch.save's: torch 1.6 and later; so is a pickle of torch's magic number, the
 * legacy format of torch < 1.6), not its name. A safetensors file's first 8 bytes and JSON header, a
 * torch.save zip's end record, central directory, local headers and data.pkl, or a legacy file's pickles
 * at its start (never a tensor's bytes: a 1.4 GB .pth is not read whole), were read once and parsed once, in
 * WebAssembly memory. A torch.save file's pickle is read by an interpreter that knows only what a state
 * dict needs (OrderedDict, tensors, typed storages): any other global is refused by name
 * ("checkpoint_pickle_global"; nothing is run), a whole pickled model ("checkpoint_pickled_module")
 * with a hint to save its state_dict; nested dicts give keys joined with "." (model_state_dict.tok_emb.weight);
 * tied tensors share their bytes; non-contiguous ones are gathered; F16 and BF16 widen to float32. Give it to loadCheckpoint,
 * checkpointInput and loadGPT2 in place of the source: they read only the tensors' bytes (through the
 * same reader) and parse nothing. A GPT2Model made from it shares its parsed header.
 */
export interface CheckpointFile {
  /** The file's size in bytes. */
  readonly size: number;
  /** What its bytes say it is: "safetensors", or "torch" (a torch.save zip: .pth, pytorch_model.bin). */
  readonly format: "safetensors" | "torch";
  /** How many tensors the header lists (without __metadata__). */
  readonly keys: number;
  /** Where the data section starts: 8 + the header's length in bytes (0 for a torch.save file, whose tensors' offsets are the file's own). */
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

/**
 * What every call of the library throws (or rejects with): a stable code, the slot or argument it is
 * about, and how to fix it. Tests assert `.code`, not the wording of `.message`.
 *
 * Every options object is checked by name: one the call has no option of (a misspelt
 * `{tempreature: 1.5}`) is `unknown_option`, its `slot` the name given and its message the nearest
 * valid one ("model.generate has no option "tempreature": did you mean temperature?"), never ignored.
 * Numbers in messages read as they were given (`1e-40`, `1.5`, `NaN`).
 * @example
 * ```ts
 * try { lab.create("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2 }); }
 * catch (e) { if (e instanceof AttentionError) console.log(e.code, e.slot); } // "heads_divisibility" "d_out"
 * ```
 */
export class AttentionError extends Error {
  /** The stable code: see {@link ErrorCode} for each one's meaning. */
  readonly code: ErrorCode;
  /** The slot or argument it is about ("num_heads", "x", "seed", ...), "" when none. */
  readonly slot: string;
  /** How to fix it. */
  readonly hint: string;
  /** For a configuration's error: every diagnostic of the configuration (the first error is this one); else empty. */
  readonly diagnostics: Diagnostic[];
}

/** What a GPT-2 file holds, from its header. */
export interface GPT2Config {
  /** Width of the residual stream (wte.weight's columns): 768 for GPT-2 small. */
  n_embd: number;
  /** Heads per block (head_dim = n_embd / n_head). */
  n_head: number;
  /** Transformer blocks h.0 .. h.{n_layer - 1}. */
  n_layer: number;
  /** Positions (wpe.weight's rows): the most tokens a run takes. */
  n_ctx: number;
  /** Token ids 0 .. vocab_size - 1 (wte.weight's rows): 50257 for GPT-2. */
  vocab_size: number;
  /** The dtype of wte.weight. */
  dtype: "F32" | "F16" | "BF16";
  /** "small", "medium", "large" or "XL" when the shapes are GPT-2's own; "" otherwise. */
  size: "small" | "medium" | "large" | "XL" | "";
  /**
   * The checkpoint layout its keys follow (the core's one table of layouts): "huggingface" (wte.weight,
   * h.{i}.attn.c_attn.weight ..., with or without "transformer.") or "book" (the book's GPTModel
   * state_dict: tok_emb.weight, trf_blocks.{i}.att.W_query.weight ..., under any key prefix).
   */
  layout: "huggingface" | "book";
  /** The layout's name for the page: "Hugging Face GPT-2" or "the book's GPTModel". */
  layoutName: string;
  /** The file's format, told by its bytes: "torch" (a zip torch.save wrote: .pth, pytorch_model.bin) or "safetensors". */
  format: "torch" | "safetensors";
  /** Whether the blocks have q/k/v biases (the book's qkv_bias, read off its keys; true for Hugging Face's). */
  qkv_bias: boolean;
  /** The head's rows, the length of lastLogits: vocab_size for a language model, num_classes for a classifier (ch06's out_head = Linear(emb_dim, 2)). */
  n_out: number;
  /**
   * How each tensor of the model and of block 0 (every block alike) maps into the book's GPTModel, one
   * line each, from the layout table: "h.0.attn.c_attn.weight (768, 2304): split in three along dim 1,
   * each transposed -> W_query.weight (768, 768), W_key.weight (768, 768), W_value.weight (768, 768)";
   * "trf_blocks.0.att.W_query.weight (768, 768): copied as is".
   */
  mapping: string[];
}

/** A GPT-2 run's progress, as onProgress receives it. */
export interface GPT2Progress {
  /** What just finished: the embedding, a block, a layer's input, or the logits. */
  step: "embedding" | "block" | "input" | "logits";
  /** The block just run (step "block"), or whose input was made (step "input"). */
  layer?: number;
  /** Steps done so far. */
  done: number;
  /** Steps in the whole run. */
  total: number;
}

/** model.run's options. */
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

/** model.run's result (attention "full"). */
export interface GPT2Result {
  /** One entry per block, h.0 first. */
  layers: {
    /** The residual stream entering the block, shape (1, num_tokens, n_embd). */
    input: Tensor;
    /** softmax(q k^T / sqrt(head_dim)) with the causal mask, shape (1, n_head, num_tokens, num_tokens). */
    attnWeights: Tensor;
  }[];
  /** The logits at the last position, shape (n_out): ln_f(x)[-1] @ out_head^T (GPT-2's tied wte; a classifier's classes, with its bias). */
  lastLogits: Float32Array;
  /** The 5 most likely next tokens by softmax of lastLogits, most likely first. */
  nextTokens: {
    /** The token id. */
    id: number;
    /** Its probability. */
    prob: number;
  }[];
}

/** model.run with `attention: "thumbnails"`: per layer what a layer x head grid and a head view draw. */
export interface GPT2ThumbnailResult extends Omit<GPT2Result, "layers"> {
  /** One entry per block, h.0 first. */
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
   * With the cache: hold at most this many positions (1 .. n_ctx) and shift the oldest entries
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
  /** The token id picked. */
  token: number;
  /** Its probability under the distribution it was picked from: softmax of the (top-k) logits / temperature (temperature 1 when greedy). */
  prob: number;
  /** The 5 most likely tokens of that distribution, most likely first (the picked one among them when it is that likely). */
  top: {
    /** The token id. */
    id: number;
    /** Its probability. */
    prob: number;
  }[];
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
  attention: {
    /** [n_layer, n_head, keys]. */
    shape: [number, number, number];
    /** The rows, row-major. */
    data: Float32Array;
  } | null;
  /** Milliseconds this token took (reads included). */
  ms: number;
}

/** What model.generate gives. */
export interface GPT2Generation {
  /** The prompt, then the new tokens (eosId not appended). */
  tokenIds: number[];
  /** One step per generated token, in order. */
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
  /** What the file holds, from its header. */
  readonly config: Readonly<GPT2Config>;
  /**
   * Bytes a run on numTokens tokens takes at its peak, its results as the caller holds them included (checked before every run).
   * @param numTokens - num_tokens of the run: a whole number from 1 to n_ctx.
   * @param options - `attention`: what the run keeps per layer, as in {@link GPT2RunOptions}.
   * @returns Bytes of WebAssembly memory and results.
   * @throws {@link AttentionError} "run_option" (slot "num_tokens": NaN, 1.5, 0 or past n_ctx; slot
   *   "attention"), "unknown_option", "disposed".
   */
  estimateBytes(numTokens: number, options?: { attention?: "full" | "thumbnails" }): number;
  /**
   * The whole forward in eval mode on GPT-2 BPE token ids. Rejects (never throws, bad options too) with
   * AttentionError: bad_options, checkpoint_token, input_empty, context_too_short, too_large, busy,
   * cancelled, callback, checkpoint_read, checkpoint_source (a buffer detached since loadGPT2),
   * non_finite_parameter (a NaN or infinity in the file), non_finite_stage (finite weights overflowed
   * float32: `slot` is the first stage that turned non-finite, one of "embedding", "ln_1", "attn",
   * "attn_residual", "ln_2", "c_fc", "gelu", "mlp_c_proj", "mlp_residual", "ln_f", "logits"; the message
   * names its block h.L and the token and column), disposed, run_option (the `attention` option).
   * @param tokenIds - GPT-2 BPE ids, at most n_ctx of them.
   * @param options - onProgress, signal; `attention` "full" (the default).
   * @returns A promise of each layer's input `(1, num_tokens, n_embd)` and attention weights
   *   `(1, n_head, num_tokens, num_tokens)`, the last position's logits `(vocab_size)` and the 5 likeliest next tokens.
   * @throws {@link AttentionError} (the promise rejects with it): the codes above.
   */
  run(tokenIds: ArrayLike<number>, options?: GPT2RunOptions & { attention?: "full" }): Promise<GPT2Result>;
  /**
   * The same forward with `attention: "thumbnails"`: per layer what a layer x head grid and a head
   * view draw, computed in the core, instead of the whole weights (see {@link GPT2ThumbnailResult}).
   * @param tokenIds - GPT-2 BPE ids, at most n_ctx of them.
   * @param options - onProgress, signal, `attention: "thumbnails"`.
   * @returns A promise of the {@link GPT2ThumbnailResult}.
   * @throws {@link AttentionError} (the promise rejects with it): the codes of the "full" run.
   */
  run(tokenIds: ArrayLike<number>, options: GPT2RunOptions & { attention: "thumbnails" }): Promise<GPT2ThumbnailResult>;
  /**
   * Writes text: up to maxNewTokens GPT-2 BPE ids after tokenIds (see GPT2GenerateOptions). Rejects with
   * AttentionError: generate_option (names the option; slot "model" for a classifier, whose head gives classes), cache_context, cache_window, checkpoint_token, input_empty,
   * too_large, generator, busy, cancelled, callback (slot "onToken"), checkpoint_read, non_finite_parameter,
   * non_finite_probabilities, disposed.
   * @param tokenIds - The prompt, GPT-2 BPE ids.
   * @param options - maxNewTokens (required), temperature, topK, eosId, generator, cache, window, ... (see {@link GPT2GenerateOptions}).
   * @returns A promise of the prompt and new ids, each step, why it stopped.
   * @throws {@link AttentionError} (the promise rejects with it): the codes above.
   * @example
   * ```ts
   * const out = await model.generate([15496, 11, 314, 716], { maxNewTokens: 10, temperature: 1.4, topK: 25, generator: lab.manualSeed(123) });
   * out.tokenIds; // the prompt, then up to 10 new ids: chapter 5's generate(...) after torch.manual_seed(123)
   * ```
   */
  generate(tokenIds: ArrayLike<number>, options: GPT2GenerateOptions): Promise<GPT2Generation>;
  /**
   * What block `layer`'s attention sees: ln_1 of the stream entering it.
   * @param tokenIds - GPT-2 BPE ids.
   * @param layer - The block, 0 .. n_layer - 1.
   * @param options - onProgress, signal (the run's `attention` is not an option here: the input is the same).
   * @returns A promise of the tensor `(1, num_tokens, n_embd)`.
   * @throws {@link AttentionError} (the promise rejects with it): "checkpoint_layer", and the codes of run.
   */
  attentionInput(tokenIds: ArrayLike<number>, layer: number, options?: Pick<GPT2RunOptions, "onProgress" | "signal">): Promise<Tensor>;
  /** Frees the model's WebAssembly memory now (otherwise garbage collection does it). */
  dispose(): void;
}

/**
 * The library, loaded: every call into the attention core (web/lib/attention-lab.js over the WebAssembly
 * build of core/). Get it from {@link loadAttentionLab}. Where a call takes a class name and a config, a
 * literal class name checks the config against that class's type ({@link ConfigFor}); a `string` takes
 * any {@link Config} and the core diagnoses it.
 */
export interface AttentionLab {
  /** Every class the core has a recipe for, in the core's order: the book's five (chapter 3), then the bonus classes. */
  readonly classes: ClassName[];
  /**
   * The seeds the core takes (manualSeed, run's seed, seededTokens, sentenceTokens), from its one range:
   * whole numbers from `lowest` = -(2**53 - 1) to `highest` = 2**53 - 1, the ints a number holds exactly.
   * A negative seed wraps to 64 bits, as torch.manual_seed(-1) does.
   */
  readonly seedRange: {
    /** The smallest seed taken: -(2**53 - 1), Number.MIN_SAFE_INTEGER. */
    readonly lowest: number;
    /** The largest seed taken: 2**53 - 1, Number.MAX_SAFE_INTEGER. */
    readonly highest: number;
  };
  /** The four GPT-2 sizes from the core's one table, smallest first (head_dim 64 in all four). */
  readonly gpt2Sizes: ReadonlyArray<{
    /** The size's name, as in GPT2Config.size. */
    name: "small" | "medium" | "large" | "XL";
    /** Width of the residual stream (d_in = d_out of each layer's attention). */
    n_embd: number;
    /** Heads per layer. */
    n_head: number;
    /** Transformer blocks. */
    n_layer: number;
  }>;
  /**
   * A class's constructor slots in the order of its Python signature (the core's recipe, core/src/recipes.cpp).
   * @param className - One of {@link AttentionLab.classes}.
   * @returns Fresh copies of the slot specs: name, 1-based position, type, Python default (undefined when required), doc.
   * @throws {@link AttentionError} "unknown_class" for a name that is not a class (the hint lists them).
   * @example
   * ```ts
   * lab.slots("MultiHeadAttention").map((s) => s.name);
   * // ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"]
   * ```
   */
  slots(className: ClassName): SlotSpec[];
  /**
   * Reads a pasted Python constructor call as Python would, naming each positional value by its slot,
   * left to right, and filling in the defaults. Never throws: what is wrong is in `diagnostics`.
   * @param text - A call such as `MultiHeadAttention(768, 768, 1024, 0.0, 12)` or with keywords
   *   (`num_heads=12`); Python literals only (True, None, 0.1, torch.float32).
   * @returns The class name read ("" when none), the config (a {@link ParsedConfig}: pass it to
   *   describe, setup, create, ...), every slot with its position and source, and every diagnostic
   *   (codes "syntax", "empty", "too_long", "not_a_literal", "unknown_class", "unknown_slot",
   *   "duplicate_slot", "extra_positional", "positional_after_keyword", "missing_slot", ...).
   * @example
   * ```ts
   * const call = lab.parseCall("MultiHeadAttention(768, 768, 1024, 0.0, 12)");
   * call.slots[4]; // {name: "num_heads", position: 5, value: 12, source: "positional", text: "12"}
   * lab.describe(call.className, call.config).parameterCount; // 2360064
   * ```
   */
  parseCall(text: string): ParsedCall;
  /**
   * With a config read from a pasted call ({@link ParsedConfig}), for any class name: the core diagnoses it.
   * Otherwise the next signature (a literal class name checks its config against the class's type).
   * @param className - The class.
   * @param config - `parseCall(text).config`.
   * @param options - As in the next signature.
   * @returns As in the next signature.
   */
  check(className: string, config: ParsedConfig, options?: { inputShape?: number[]; training?: boolean }): Diagnostic[];
  /**
   * Every diagnostic of a configuration at once (errors, warnings, info); never throws.
   * @param className - The class; a `string` is accepted and an unknown one is the "unknown_class" diagnostic.
   * @param config - Slot name -> value (see {@link ConfigFor}).
   * @param options - `inputShape`: also the input checks (rank, width "input_width", num_tokens vs
   *   context_length "context_too_short", memory "too_large"); `training: false`: the "dropout_eval" warning.
   * @returns Each problem with its code ({@link ErrorCode}), severity, slots, message, hint, PyTorch's own error and fixes.
   * @example
   * ```ts
   * lab.check("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2 })[0].code;
   * // "heads_divisibility"
   * ```
   */
  check<C extends string>(className: C, config: ConfigFor<C>, options?: { inputShape?: number[]; training?: boolean }): Diagnostic[];
  /**
   * With a config read from a pasted call ({@link ParsedConfig}), for any class name: the core diagnoses it.
   * Otherwise the next signature (a literal class name checks its config against the class's type).
   * @param className - The class.
   * @param config - `parseCall(text).config`.
   * @returns As in the next signature.
   */
  describe(className: string, config: ParsedConfig): Description;
  /**
   * The facts of a configuration derived before anything is allocated: head_dim, output width and
   * its rule, the parameter table and count, the mask buffer, KV cache bytes, the class's facts.
   * Never throws: with an error diagnostic, `ok` is false and the derived facts are absent.
   * @param className - The class; a `string` is accepted (an unknown one gives the "unknown_class" diagnostic).
   * @param config - Slot name -> value; omit it to read only `class` (and the "missing_slot" diagnostics).
   * @returns The {@link Description}.
   * @example
   * ```ts
   * const d = lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 });
   * d.headDim; d.outputWidth; d.parameterCount; // 64, 768, 2360064
   * ```
   */
  describe<C extends string>(className: C, config?: ConfigFor<C>): Description;
  /**
   * With a config read from a pasted call ({@link ParsedConfig}), for any class name: the core diagnoses it.
   * Otherwise the next signature (a literal class name checks its config against the class's type).
   * @param className - The class.
   * @param config - `parseCall(text).config`.
   * @param options - As in the next signature.
   * @returns As in the next signature.
   */
  setup(className: string, config: ParsedConfig, options?: { inputShape?: number[] | null; training?: boolean; trace?: boolean }): Setup;
  /**
   * check, describe and estimateBytes of one edit in one call into the core (see Setup): one validation
   * of the configuration and one with the input. Never throws for a configuration's problems (they are
   * diagnostics).
   * @param className - The class; a `string` is accepted.
   * @param config - Slot name -> value (see {@link ConfigFor}).
   * @param options - `inputShape`: the input, `(b, num_tokens, d_in)` or `(num_tokens, d_in)` for the
   *   SelfAttention classes (see inputShape); `training` (default true); `trace` (default true) counts
   *   the traced stages in memory.bytes.
   * @returns The {@link Setup}: diagnostics, description, memory estimate and budget.
   * @throws {@link AttentionError} "bad_options" or "unreadable_argument" for options that cannot be
   *   read, and "tensor_shape" (slot "inputShape") when inputShape is not a list of sizes.
   */
  setup<C extends string>(className: C, config: ConfigFor<C>, options?: { inputShape?: number[] | null; training?: boolean; trace?: boolean }): Setup;
  /**
   * With a config read from a pasted call ({@link ParsedConfig}), for any class name: the core diagnoses it.
   * Otherwise the next signature (a literal class name checks its config against the class's type).
   * @param className - The class.
   * @param config - `parseCall(text).config`.
   * @param x - As in the next signature.
   * @param options - As in the next signature.
   * @returns As in the next signature.
   */
  run(className: ClassName, config: ParsedConfig, x: TensorLike, options?: { seed?: number; training?: boolean; trace?: boolean }): RunResult;
  /**
   * run with the trace kept in WASM memory ({@link LazyTrace}), for a pasted call's config.
   * @param className - The class.
   * @param config - `parseCall(text).config`.
   * @param x - As in the typed signature.
   * @param options - As there, with `trace: "lazy"`.
   * @returns As there, with a {@link LazyTrace}.
   */
  run(className: ClassName, config: ParsedConfig, x: TensorLike, options: { seed?: number; training?: boolean; trace: "lazy" }): LazyRunResult;
  /**
   * run with the trace kept in WASM memory: the stages' facts at once, their values asked of the
   * {@link LazyTrace} as they are drawn (no JS copy of the whole trace). The output is the same bits.
   * @param className - The class.
   * @param config - Slot name -> value (see {@link ConfigFor}).
   * @param x - As in the next signature.
   * @param options - As in the next signature, with `trace: "lazy"`.
   * @returns The module's facts, `output` and the {@link LazyTrace} (dispose it when drawn).
   * @throws {@link AttentionError} as the next signature.
   */
  run<C extends ClassName>(className: C, config: ConfigFor<C>, x: TensorLike, options: { seed?: number; training?: boolean; trace: "lazy" }): LazyRunResult;
  /**
   * torch.manual_seed(seed) (default 123), the constructor, then forward on x in training mode unless
   * `training: false`, traced unless `trace: false`: one call into the core, nothing kept (dropout draws
   * continue from the constructor's generator, as create + forward with one generator do).
   * @param className - The class.
   * @param config - Slot name -> value (see {@link ConfigFor}).
   * @param x - The input, `(b, num_tokens, d_in)` row-major float32, or `(num_tokens, d_in)` for the SelfAttention classes.
   * @param options - `seed` (default 123), `training` (default true), `trace` (default true).
   * @returns The module's facts, `output` `(b, num_tokens, outputWidth)` and the trace's stages.
   * @throws {@link AttentionError} "seed"; the configuration's first error (its code and slot, as
   *   create; call setup for every diagnostic); forward's input codes ("tensor_shape", "tensor_size",
   *   "input_rank", "input_empty", "input_width", "context_too_short", "too_large", "non_finite_input");
   *   "results_not_released" when the WebAssembly heap is full of results not released (lazy traces,
   *   modules, KV caches: the message counts them and their MiB, the hint says how to release them)
   *   while this run alone is within the budget. Results the garbage collector already found
   *   unreachable are released, and the run tried again, before that.
   * @example
   * ```ts
   * const x = lab.bookTokens(); // (6, 3)
   * const r = lab.run("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 },
   *   { shape: [1, 6, 3], data: x.data }, { seed: 123, training: false });
   * r.output.shape; // [1, 6, 2]: (b, num_tokens, d_out)
   * ```
   */
  run<C extends ClassName>(className: C, config: ConfigFor<C>, x: TensorLike, options?: { seed?: number; training?: boolean; trace?: boolean }): RunResult;
  /**
   * The core's facts about a class (slots, input axes, heads, presets, tolerance, python name, ...):
   * the same frozen object as `describe(className, config).class`, read without a call into the core.
   * @param className - Any string.
   * @returns The frozen {@link ClassFacts}, or undefined for a name that is not in `classes`.
   */
  classFacts(className: string): ClassFacts | undefined;
  /**
   * A random stream equal to PyTorch's CPU default generator after `torch.manual_seed(seed)`
   * (torch-rng.md): pass it to create (the parameters' init) and forward (the dropout masks).
   * @param seed - A whole number in {@link AttentionLab.seedRange} (-(2**53 - 1) to 2**53 - 1), as torch.manual_seed takes.
   * @returns A {@link Generator} in WASM memory (released on dispose() or garbage collection).
   * @throws {@link AttentionError} "seed" (slot "seed") for a seed that is not a whole number in seedRange.
   * @example
   * ```ts
   * lab.manualSeed(123).rand([2, 3]).data; // torch.manual_seed(123); torch.rand(2, 3)
   * ```
   */
  manualSeed(seed: number): Generator;
  /**
   * With a config read from a pasted call ({@link ParsedConfig}), for any class name: the core diagnoses it.
   * Otherwise the next signature (a literal class name checks its config against the class's type).
   * @param className - The class.
   * @param config - `parseCall(text).config`.
   * @param options - As in the next signature.
   * @returns As in the next signature.
   */
  create(className: ClassName, config: ParsedConfig, options?: { generator?: Generator }): AttentionModule;
  /**
   * Builds a module as `torch.manual_seed(...)` then the Python constructor would (same parameters,
   * bit for bit), in WASM memory.
   * @param className - The class.
   * @param config - Slot name -> value (see {@link ConfigFor}).
   * @param options - `generator`: the stream the parameters are drawn from (default: manualSeed(123)).
   * @returns The {@link AttentionModule}.
   * @throws {@link AttentionError} with the code and slot of the configuration's first error diagnostic
   *   (all of them in `.diagnostics`); "generator" for a generator not made by manualSeed; "disposed";
   *   "results_not_released" when the WebAssembly heap is full of results not released (as run).
   * @example
   * ```ts
   * const mha = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 },
   *   { generator: lab.manualSeed(123) });
   * mha.forward({ shape: [1, 6, 3], data: lab.bookTokens().data }).output.shape; // [1, 6, 2]
   * ```
   */
  create<C extends ClassName>(className: C, config: ConfigFor<C>, options?: { generator?: Generator }): AttentionModule;
  /**
   * Copies weights from one module into another with the book's map (exercise 3.1: SelfAttention_v2's
   * nn.Linear weights into SelfAttention_v1's matrices, each transposed; MultiHeadAttention into a
   * chapter 3 bonus class), then runs both on `tokens` in eval mode and compares every stage.
   * @param from - The source module.
   * @param to - The module written into.
   * @param plan - Per parameter, whether to copy and transpose (see {@link CopyPlan}).
   * @param options - `tokens`: the input compared on (default: the book's tokens when d_in is 3, else seeded tokens).
   * @returns The {@link CopyReport}: what happened to each matrix, whether the outputs agree, the PyTorch lines.
   * @throws {@link AttentionError} "copy_unsupported", "copy_plan" (slot: the plan key), or forward's
   *   input codes for `tokens` (slot "tokens"); nothing is copied then.
   */
  copyWeights(from: AttentionModule, to: AttentionModule, plan: CopyPlan, options?: { tokens?: TensorLike }): CopyReport;
  /**
   * The PyTorch lines of a copy plan (the same text as CopyReport.code) before anything is built.
   * @param fromClass - The source class.
   * @param toClass - The target class.
   * @param plan - The copy plan.
   * @returns Python source, one assignment per line.
   * @throws {@link AttentionError} "copy_unsupported" for another class, "copy_plan" for a plan entry that does not fit.
   */
  copyCode(fromClass: "SelfAttention_v1" | "SelfAttention_v2", toClass: "SelfAttention_v1" | "SelfAttention_v2", plan: CopyPlan): string;
  /**
   * GPT-2 attention from a .safetensors or torch.save file (Hugging Face names, with or without `transformer.`):
   * c_attn split on its last axis into q, k, v and each transposed; c_proj transposed into out_proj.
   * @param source - The file's bytes, a Blob or File, or a {@link CheckpointFile}.
   * @param options - Which layer, num_heads, context_length, or a module to load `into`.
   * @returns A promise of the MultiHeadAttention module and a {@link CheckpointReport} of the keys used, ignored and transposed.
   * @throws {@link AttentionError} (the promise rejects with it): "checkpoint_truncated",
   *   "checkpoint_bad_header", "checkpoint_bad_offsets", "checkpoint_missing_key", "checkpoint_layer",
   *   "checkpoint_shape", "checkpoint_num_heads", "checkpoint_context_length",
   *   "checkpoint_config_mismatch", "checkpoint_dtype", "checkpoint_source", "disposed" (a disposed CheckpointFile),
   *   "checkpoint_legacy_format", "checkpoint_zip", "checkpoint_zip_compressed",
   *   "checkpoint_pickle", "checkpoint_pickle_global", "checkpoint_pickled_module", "checkpoint_storage",
   *   "checkpoint_limit" (a torch.save file: see {@link CheckpointFile}).
   */
  loadCheckpoint(source: CheckpointSource, options?: CheckpointOptions): Promise<{
    /** A MultiHeadAttention (or `options.into`) holding the layer's attention weights. */
    module: AttentionModule;
    /** What was read from the file, and how. */
    report: CheckpointReport;
  }>;
  /**
   * The input a real GPT-2 layer's attention sees: ln_1 of the residual stream entering block `layer`
   * (LayerNorm eps 1e-5). Layer 0 is ln_1(wte[tokenIds] + wpe[:T]) and reads only one wte row per
   * distinct token id, T wpe rows and ln_1 (as the whole model's embedding reads them); a later layer runs blocks 0 .. layer-1 first (one at a time), so the
   * file must hold the whole model (`num_heads` for widths that are not GPT-2's). Every layer refuses
   * what the whole model refuses: a NaN or infinity in a row read (non_finite_parameter), a dtype other
   * than F32, F16, BF16 (checkpoint_dtype). `signal` is checked before anything is read and races every read.
   * @param source - The file's bytes, a Blob or File, or a {@link CheckpointFile}.
   * @param options - `tokenIds` (GPT-2 BPE ids), `layer` (default 0), `num_heads`, `signal`.
   * @returns A promise of the tensor `(1, num_tokens, n_embd)`.
   * @throws {@link AttentionError} (the promise rejects with it): "checkpoint_missing_key",
   *   "checkpoint_token", "context_too_short", "checkpoint_layer", "checkpoint_num_heads",
   *   "checkpoint_dtype", "non_finite_parameter", "non_finite_stage" (layer > 0), "cancelled",
   *   "disposed" (a disposed CheckpointFile), and the header errors.
   */
  checkpointInput(source: CheckpointSource, options: { tokenIds: number[]; layer?: number; num_heads?: number; signal?: AbortSignal }): Promise<Tensor>;
  /**
   * Opens a GPT-2 .safetensors or torch.save file (Hugging Face's model.safetensors or pytorch_model.bin)
   * for the whole model (the book's chapter 4 GPTModel, the same as Hugging Face's GPT-2), reading only
   * its header now; F32, F16 or BF16; keys with or without
   * `transformer.`. GPT-2 small, medium, large and XL are recognised from their shapes; other widths
   * need `num_heads` (or an `n_head` entry in the header's __metadata__; loadCheckpoint reads it by the
   * same rule). The blocks must be h.0 .. h.{n_layer-1}, none missing or partial. Given a
   * CheckpointFile, the model shares its parsed header.
   * @param source - The file's bytes, a Blob or File, or a {@link CheckpointFile}.
   * @param options - `num_heads` for a width that is not GPT-2's.
   * @returns A promise of the {@link GPT2Model}.
   * @throws {@link AttentionError} (the promise rejects with it): "checkpoint_source",
   *   "checkpoint_read", the header errors, "checkpoint_missing_key" (a gap in the blocks or a partial
   *   block: names the missing keys), "checkpoint_bad_header" (blocks under both h. and
   *   transformer.h.), "checkpoint_shape", "checkpoint_dtype", "checkpoint_num_heads",
   *   "checkpoint_layer", "disposed" (a disposed CheckpointFile).
   * @example
   * ```ts
   * const model = await lab.loadGPT2(file); // a File from an <input type="file">
   * const r = await model.run([464, 3139]);
   * r.layers[5].attnWeights.shape; // [1, 12, 2, 2]: (1, n_head, num_tokens, num_tokens)
   * ```
   */
  loadGPT2(source: CheckpointSource, options?: { num_heads?: number }): Promise<GPT2Model>;
  /**
   * Opens a .safetensors or torch.save file (an ArrayBuffer, a typed array, a Blob or a File; File.slice:
   * never read whole) once, told apart by its bytes: reads its header (a torch.save zip: its records and
   * data.pkl, see {@link CheckpointFile}) and parses it, as loadCheckpoint,
   * checkpointInput and loadGPT2 would each do for themselves. Give the result to them to load layers,
   * trace inputs and run the model with one parse.
   * @param source - The file; a CheckpointFile given here is returned as it is.
   * @returns A promise of the {@link CheckpointFile}.
   * @throws {@link AttentionError} (the promise rejects with it): "checkpoint_source",
   *   "checkpoint_read", "checkpoint_truncated", "checkpoint_bad_header", "checkpoint_duplicate_key",
   *   "checkpoint_bad_offsets", "checkpoint_legacy_format", "checkpoint_zip", "checkpoint_zip_compressed",
   *   "checkpoint_pickle", "checkpoint_pickle_global", "checkpoint_pickled_module", "checkpoint_storage",
   *   "checkpoint_limit" (a torch.save file: see {@link CheckpointFile}).
   */
  openCheckpoint(source: CheckpointSource): Promise<CheckpointFile>;
  /**
   * Wrapper (d_out per head) <-> MultiHeadAttention (d_out total) with the same heads.
   * @param className - "MultiHeadAttentionWrapper" or "MultiHeadAttention".
   * @param config - Its config (see {@link ConfigFor}).
   * @returns The other class, its full config and its Python call.
   * @throws {@link AttentionError} the configuration's first error; "convert_unsupported" for another class.
   */
  equivalentConfig<C extends ClassName>(className: C, config: ConfigFor<C>): {
    /** The equivalent class. */
    className: ClassName;
    /** Its every slot, defaults filled in. */
    config: Record<SlotName, number | boolean>;
    /** Its positional Python call. */
    pythonCall: string;
  };
  /**
   * Wrapper -> fused MultiHeadAttention (heads stacked, out_proj = identity with zero bias) or fused ->
   * wrapper (head h takes rows h*head_dim ...). layout "interleaved" builds the head-merge mistake on purpose.
   * @param module - A MultiHeadAttentionWrapper or a MultiHeadAttention.
   * @param options - `layout`: "stacked" (default) or "interleaved".
   * @returns The new module and the PyTorch lines that build it.
   * @throws {@link AttentionError} "convert_unsupported", "convert_layout", "disposed".
   */
  convert(module: AttentionModule, options?: { layout?: "stacked" | "interleaved" }): {
    /** The converted module. */
    module: AttentionModule;
    /** The PyTorch lines of the conversion. */
    code: string;
  };
  /**
   * Both modules on x in eval mode; every stage they share (same id and shape) compared.
   * @param a - The first module.
   * @param b - The second module.
   * @param x - The input both take, `(b, num_tokens, d_in)` (or `(num_tokens, d_in)`).
   * @returns Each shared stage's max |a - b|, the largest, and whether all are within the tolerance.
   * @throws {@link AttentionError} "compare_unsupported", forward's input codes, "disposed".
   */
  compare(a: AttentionModule, b: AttentionModule, x: TensorLike): {
    /** Every stage both modules have, in order. */
    stages: StageDiff[];
    /** The largest difference over the stages. */
    maxAbsDiff: number;
    /** maxAbsDiff <= tolerance. */
    agree: boolean;
    /** The class's tolerance (1e-6). */
    tolerance: number;
  };
  /**
   * A reader's own attention module checked against the book's: the state dict loaded into the book's
   * class (names and shapes checked), the book's forward run on `x` in eval mode, the reader's output
   * and stages compared with it, and each entry of the catalogue of readers' mistakes that applies to
   * the class (the book's forward with that one mistake) run the same way. Tensors agree when
   * |reader - book| <= 1e-5 * (1 + |book|) everywhere, with NaN exactly where the book has NaN. The
   * module was in eval mode (or dropout 0), or in training mode right after `torch.manual_seed(seed)` with
   * `seed` given (then the forwards run in training mode from that seed). Checked against the memory budget before allocating
   * (the module, one traced forward and a variant's weights). Catalogue and sources: docs/check-module.md.
   * @param file - What the page's snippet saves (`torch.save({"call", "state_dict", "x", "output", "stages", "seed"})`), as tensors.
   * @returns The verdict: `agree`, `maxAbsDiff`, `firstStage`, and `causes` (each entry that applies, whether it explains the tensors).
   * @throws {@link AttentionError} "bad_options" (not an object, a stateDict or stages of another kind), "unknown_option"
   *   (a field it has no name for, e.g. state_dict: did you mean stateDict?), "empty" (no call text), the call's first
   *   error diagnostic (its code and slot, as lab.check), "tensor_shape" / "tensor_size" (naming the tensor),
   *   "missing_parameter" / "unknown_parameter" / "parameter_shape" / "mask_buffer" (every key problem in the message, the
   *   first one's key as the slot, its hint the copy rule that fixes it, e.g. `.T` for a transposed weight), "check_tensor"
   *   (output or a stage of another shape than the book's forward gives, or a stage id it has not), forward's input
   *   codes (input_rank, input_width, context_too_short, non_finite_input), "non_finite_parameter", "too_large",
   *   "seed" (slot "seed": a seed that is not a whole number in seedRange).
   */
  checkModule(file: CheckFile): CheckReport;
  /**
   * The same check of a check file: the `.pt` the page's snippet writes with torch.save
   * (`{"call": "...", "state_dict": mha.state_dict(), "x": batch, "output": context_vecs, "stages": {...}}`, and
   * `"seed": 123`, an int, when the module ran in training mode right after `torch.manual_seed(123)`), as an
   * ArrayBuffer, typed array, Blob or File, or a CheckpointFile from lab.openCheckpoint. Read by slices as
   * openCheckpoint reads: the zip's records and data.pkl first, then its keys, its call and the memory estimate
   * checked, then only its tensors read (F32, F16, BF16, F64; a BOOL mask buffer as 0 and 1). Needs the
   * checkpoint readers (not on a lean lab).
   * @param file - The check file.
   * @returns A promise of the verdict, as the in-memory form's.
   * @throws {@link AttentionError} (the promise rejects) "check_file" (a safetensors file, which is not a check
   *   file; or no "call" string, "x", "output" or "state_dict" key, or a "seed" saved as a string or a tensor: the slot
   *   names the key, the hint shows the snippet's line that writes it), "seed" (a seed outside seedRange, or not a
   *   whole number), openCheckpoint's codes (checkpoint_*), "no_checkpoints" (a lean lab), "too_large" (the
   *   bytes read, their float32 copies and the check over the budget, before any tensor is read), then every code of
   *   the in-memory form.
   */
  checkModule(file: ArrayBuffer | ArrayBufferView | Blob | CheckpointFile): Promise<CheckReport>;
  /**
   * The book's six 3-d embeddings of "Your journey starts with one step" (section 3.3.1).
   * @returns The tensor `(num_tokens, d_in)` = (6, 3).
   */
  bookTokens(): Tensor;
  /**
   * Word tokens with seeded embeddings; a repeated word gets the same row:
   * vocab = list(dict.fromkeys(words)); table = torch.rand(len(vocab), d_in, generator=torch.Generator().manual_seed(seed));
   * x = table[[vocab.index(w) for w in words]]  -> (num_tokens, d_in)
   * @param words - The words, one token each.
   * @param dIn - d_in, the embedding width.
   * @param seed - The table's seed.
   * @returns The tensor `(num_tokens, d_in)`.
   * @throws {@link AttentionError} "tensor_shape" (slot "words": no words; slot "d_in": not a whole
   *   number from 1, e.g. 1.5 or NaN), "too_large" (slot "d_in": more than 67,108,864 values).
   */
  sentenceTokens(words: string[], dIn: number, seed: number): Tensor;
  /**
   * torch.rand(num_tokens, d_in, generator=torch.Generator().manual_seed(seed)).
   * @param numTokens - num_tokens, a whole number from 1.
   * @param dIn - d_in, a whole number from 1.
   * @param seed - The generator's seed.
   * @returns The tensor `(num_tokens, d_in)`.
   * @throws {@link AttentionError} "tensor_shape" (slot "num_tokens" or "d_in") for sizes that are not
   *   whole numbers from 1 (1.5, NaN: the message shows the value as given), "too_large" (slot "d_in":
   *   more than 67,108,864 values).
   */
  seededTokens(numTokens: number, dIn: number, seed: number): Tensor;
  /**
   * Bytes the parameters plus a forward on inputShape need at their peak, traced unless `trace: false`,
   * JS results included (the WASM heap, and the output and trace copied out of it into Float32Arrays),
   * and the budget the core refuses above (one budget: the page refuses by it too). The estimate bounds
   * the real peak: a forward grows `heapPeak()` plus its results' bytes by at most `bytes`
   * (tests/node/memory-estimate.test.mjs measures it).
   * @param className - The class.
   * @param config - Slot name -> value (see {@link ConfigFor}).
   * @param inputShape - The input, `(b, num_tokens, d_in)` (or `(num_tokens, d_in)`); without it the parameters alone.
   * @param options - `trace` (default true); `"lazy"`: a trace kept in WASM memory (the traced forward's
   *   heap, the output's copy, the stages' facts and one query's copy of at most a whole stage, no JS
   *   copy of the trace).
   * @returns The estimate and the budget, in bytes.
   * @throws {@link AttentionError} the configuration's first error; "tensor_shape" for a bad inputShape.
   */
  estimateBytes<C extends ClassName>(className: C, config: ConfigFor<C>, inputShape?: number[], options?: { trace?: boolean | "lazy" }): {
    /** Peak bytes of the parameters and the forward, results included. */
    bytes: number;
    /** The core's memory budget in bytes (kDefaultMemoryBudgetBytes). */
    budget: number;
  };
  /**
   * Takes the WebAssembly heap a forward of this setup will need now (the estimate of estimateBytes on
   * the same arguments), touches every page of it and gives it back: the heap has grown and its pages
   * are in memory, so the forward does not pay for that itself (GPT-2 small's traced forward on 1024
   * tokens spends ~0.15 s growing the heap the first time). For a Worker that will run a large forward,
   * while it waits for it. Core: Session::reserve_memory.
   * @param className - The class.
   * @param config - Slot name -> value (see {@link ConfigFor}).
   * @param inputShape - The input, `(b, num_tokens, d_in)` (or `(num_tokens, d_in)`).
   * @param options - `trace` as in estimateBytes (default true; `"lazy"`: a trace kept in WASM memory).
   * @returns The bytes taken and the budget; `bytes` is 0 on a lean lab (loadAttentionLab({checkpoints: false})), whose binary has no reserve.
   * @throws {@link AttentionError} the configuration's first error; "tensor_shape" for a bad inputShape; "too_large" over the budget; "out_of_memory" when the heap cannot grow that far.
   */
  reserveMemory<C extends ClassName>(className: C, config: ConfigFor<C>, inputShape: number[], options?: { trace?: boolean | "lazy" }): {
    /** Bytes taken from the heap and given back. */
    bytes: number;
    /** The core's memory budget in bytes (kDefaultMemoryBudgetBytes). */
    budget: number;
  };
  /**
   * A module rebuilt from plain data (e.g. posted to a Web Worker): every parameter by PyTorch name
   * (a whole state_dict() may also carry the causal mask buffers, checked and reported in `notes`).
   * @param className - The class.
   * @param config - Slot name -> value (see {@link ConfigFor}).
   * @param parameters - Every parameter, `{name, shape, data}` with PyTorch's names and shapes (e.g. module.parameters()).
   * @param options - `generator`: the stream later dropout draws from (default: manualSeed(123)).
   * @returns The {@link AttentionModule}.
   * @throws {@link AttentionError} "missing_parameter", "unknown_parameter", "parameter_shape",
   *   "mask_buffer", "non_finite_parameter", or the config's errors; "results_not_released" when the
   *   WebAssembly heap is full of results not released (as run).
   */
  fromParameters<C extends ClassName>(className: C, config: ConfigFor<C>, parameters: Array<{ name: string } & TensorLike>, options?: { generator?: Generator }): AttentionModule;
  /**
   * Bytes of WASM heap in use (for leak checks).
   * @returns Bytes allocated now.
   */
  heapInUse(): number;
  /**
   * The most WASM heap ever taken from memory so far, in bytes (allocator footprint, including
   * fragmentation; it never shrinks). Its growth over one call, plus the bytes of the results the call
   * copied out, is that call's real peak, which the memory estimate (`estimateBytes`) bounds.
   * @returns The high-water mark in bytes.
   */
  heapPeak(): number;
  /**
   * Bytes the lazy traces alive now hold in WASM memory (their float32 values; 0 once each is disposed).
   * @returns Bytes held.
   */
  traceBytesInUse(): number;
  /**
   * Which products the loaded binary runs, as the core was compiled (issue 21.3):
   * - `"relaxed_madd"`: `attention_core_fma.wasm`, each multiply-add of the matrix products one
   *   relaxed-SIMD `f32x4.relaxed_madd` (fused, one rounding, where the engine has FMA). The default
   *   where `WebAssembly.validate` accepts relaxed SIMD (Chromium; Node 20 only with
   *   `--experimental-wasm-relaxed-simd`). Its outputs differ from the plain binary's in the last bits
   *   (within every PyTorch fixture's tolerance); parameters and dropout masks are the same bits.
   * - `"simd128"`: `attention_core.wasm`, a multiply then an add (the bits of the sequential scalar sum,
   *   as the native build). Elsewhere the default, and what `wasmUrl` pointing at
   *   `attention-lab/attention_core.wasm` always loads.
   */
  readonly kernel: "relaxed_madd" | "simd128";
  /**
   * Whether this lab reads checkpoints: `openCheckpoint`, `loadCheckpoint`, `checkpointInput` and
   * `loadGPT2`. False only for a lean binary (`attention_core_lean.wasm`, `attention_core_lean_fma.wasm`:
   * built without the safetensors, checkpoint and GPT-2 code, ~200 KB gzip instead of ~345), which
   * `loadAttentionLab({checkpoints: false})` loads on one thread; those four methods then reject with
   * `no_checkpoints`. The teaching page's main thread runs one (`<attention-lab lean>`): its Worker,
   * a full lab, reads the files.
   */
  readonly hasCheckpoints: boolean;
  /**
   * The threads the core's matrix products run on (issue 21.2): its thread pool's size, as it really
   * started. Above 1 only for the threaded binaries (`attention_core_mt.wasm`, `attention_core_mt_fma.wasm`
   * with `attention_core_mt.mjs` and its pthread worker), which a default load picks in Node and in a
   * Worker of a cross-origin isolated page (`crossOriginIsolated`: served with `Cross-Origin-Opener-Policy:
   * same-origin` and `Cross-Origin-Embedder-Policy: require-corp`), and `{threads}` asks for on such a
   * page's main thread; 1 elsewhere (a page's main thread by default), with `{threads: 1}`, and with
   * `wasmUrl`/`wasmBinary` (single-thread binaries). Results have the same bits at any count.
   */
  readonly threads: number;
  /**
   * Modules, generators, checkpoint files, GPT-2 models and lazy traces alive in WASM memory (released on dispose() or garbage collection).
   * @returns How many handles are alive.
   */
  handlesInUse(): number;
  /**
   * The input shape a class takes.
   * @param className - The class.
   * @param numTokens - num_tokens.
   * @param dIn - d_in.
   * @param b - The batch size (default 1).
   * @returns `[b, numTokens, dIn]` for the batched classes, `[numTokens, dIn]` for SelfAttention_v1/v2.
   */
  inputShape(className: ClassName, numTokens: number, dIn: number, b?: number): number[];
}

/**
 * A file of the package's WebAssembly core, as {@link LoadOptions.wasmPaths} is asked for it: the
 * single-thread binaries (`attention_core.wasm`; `_fma`: relaxed-SIMD multiply-adds; `_lean`: no
 * checkpoint readers), the threaded ones (`attention_core_mt[_fma].wasm`) with their glue
 * (`attention_core_mt.mjs`) and its pthread worker (`.worker.js` in browsers, `.worker.cjs` in Node).
 * All sit in the package's `web/lib/` folder.
 */
export type CoreFileName =
  | "attention_core.wasm"
  | "attention_core_fma.wasm"
  | "attention_core_lean.wasm"
  | "attention_core_lean_fma.wasm"
  | "attention_core_mt.wasm"
  | "attention_core_mt_fma.wasm"
  | "attention_core_mt.mjs"
  | "attention_core_mt.worker.js"
  | "attention_core_mt.worker.cjs";

/**
 * Where {@link loadAttentionLab} gets the WebAssembly core (`attention_core.wasm`, about 1.2 MB, 380 KB
 * gzip, and its twins) from: at most one of `wasmPaths`, `wasmUrl` and `wasmBinary` (two of them:
 * `wasm_options`). With none, the browser module fetches its files relative to its own URL
 * (`new URL("./attention_core.wasm", import.meta.url)`, which webpack 5, Vite and Rollup's
 * `@web/rollup-plugin-import-meta-assets` copy as assets), and the Node entry reads them from disk
 * (beside it; in a bundle, beside the bundle or from the installed package).
 *
 * What each keeps: `wasmPaths` (like the default) picks the binary: the relaxed-SIMD twin where the
 * engine has relaxed SIMD (falling back to the plain one, with a console note, when the twin is
 * missing), the lean one for `{checkpoints: false}`, and threads where they can run. `wasmUrl` and
 * `wasmBinary` load the one binary they name, on one thread.
 * Anchors: onnxruntime-web `env.wasm.wasmPaths`, sql.js `locateFile`, tfjs `setWasmPaths`.
 */
export interface LoadOptions {
  /**
   * Where every file of the core is served, as onnxruntime-web's `env.wasm.wasmPaths` and sql.js's
   * `locateFile` take it: a folder's URL ending in `/` (a URL, or a string resolved as `fetch`
   * resolves it: against the page, or the worker's URL; in Node a path, against the working
   * directory, or a `file:`/`http:` URL), to which each file's name is added; or a function from a
   * file's name ({@link CoreFileName}) to its URL (a string or a URL), called once at once (for
   * `attention_core.wasm`) and again for each file the load fetches. Copy the package's
   * `web/lib/attention_core*` files there. Threads need the threaded files on the page's own origin
   * (a Worker cannot start from another); elsewhere the core runs on one thread, with a console note.
   * @throws {@link AttentionError} (as a rejection) `wasm_url` (not a string, URL or function; a
   *   folder without the final `/`; a function that throws or gives no URL), `wasm_fetch` (a file
   *   missing: the message names it and its URL), `wasm_binary` (a file that is not this build's).
   * @example
   * ```js
   * await loadAttentionLab({ wasmPaths: "/assets/attention-lab/" });
   * await loadAttentionLab({ wasmPaths: (file) => `https://cdn.example/attention-lab@0.1.0/${file}` });
   * ```
   */
  wasmPaths?: string | URL | ((file: CoreFileName) => string | URL);
  /**
   * The URL of one `.wasm` (a single-thread binary): a URL, or a string that `fetch` resolves
   * (relative to the page or worker). Compiled while it streams in when served as `application/wasm`.
   * In Node a `file:` URL is read from disk. A bundler gives it: esbuild's `--loader:.wasm=file` with
   * `import wasmUrl from "attention-lab/attention_core.wasm"`, Vite's `?url` suffix, webpack's
   * `asset/resource`. Loads that file only (no relaxed-SIMD twin, no threads): prefer `wasmPaths`.
   */
  wasmUrl?: string | URL;
  /**
   * The bytes of `attention_core.wasm` (an ArrayBuffer, a typed array or a DataView; a Node Buffer
   * is one): for a host that fetches or caches them itself. Copied when compiled.
   */
  wasmBinary?: ArrayBuffer | ArrayBufferView;
  /**
   * The most threads the core runs on: a whole number from 1 to 16 (else `bad_threads`). Without it,
   * the machine's cores (`os.availableParallelism()` in Node, `navigator.hardwareConcurrency` in a
   * browser's Worker), at most 4; on a page's main thread (a Window) one: a pool there starts slower
   * than the page's small forwards run, and a Window cannot block on it, so run big work in a module
   * Worker (the teaching page does) or pass `{threads}`. Threads need shared memory: Node always has it, a browser only on a
   * cross-origin isolated page, so elsewhere the core runs on one thread whatever this says
   * ({@link AttentionLab.threads} tells). `1` loads the single-thread binary (no Workers at all).
   * With `wasmUrl` or `wasmBinary` the core is the single-thread one, and so it is in a bundle that
   * has not the threaded files (`attention_core_mt.mjs`, its worker and binaries: webpack and Vite do
   * not emit them; where they cannot be imported, the load falls back to one thread): `wasmPaths`
   * names where they are.
   */
  threads?: number;
  /**
   * `false`: the caller needs no checkpoint readers, so a single-thread load may take the lean binary
   * (`attention_core_lean[_fma].wasm`, without the safetensors, checkpoint and GPT-2 code: ~200 KB gzip
   * instead of ~345; the same forwards, bit for bit), and {@link AttentionLab.hasCheckpoints} is then
   * false. A threaded load, `wasmUrl` and `wasmBinary` are what they are (full unless the URL or the
   * bytes are a lean binary); a bundle without the lean files falls back to the full binary. A later
   * call with `checkpoints: true` on a lean lab rejects with `wasm_loaded`. Not a boolean: `wasm_options`.
   */
  checkpoints?: boolean;
}

/**
 * Loads the WebAssembly core and resolves to the lab: the one entry point of the library.
 *
 * The core is loaded once per realm (a page, a worker, a Node process) and shared by every caller,
 * `<attention-lab>` elements included; the first call decides where the `.wasm` comes from. A later
 * call with no `wasmPaths`/`wasmUrl`/`wasmBinary` resolves to that same lab (while it loads too); one
 * naming the same folder, URL or bytes as the first call does too; one naming another source rejects
 * with `wasm_loaded`: pass the options on the first call, before any `<attention-lab>` element connects.
 * A load that failed is forgotten, so the next call tries again (with corrected options, say).
 *
 * Which file runs is chosen by package.json's export conditions, never by looking at globals:
 * `node` gets `attention-lab.node.js` (reads the `.wasm` from disk; vitest under jsdom is Node too;
 * Jest's jsdom environment in ESM mode needs `testEnvironmentOptions: {customExportConditions: ["node"]}`),
 * and under it, for a `require` that cannot load an ES module (Jest's default CommonJS mode on Node <
 * 24.9), its CommonJS build `attention-lab.cjs` (Node itself, which can, takes the ES module through the
 * `module-sync` condition: one copy of the lab per process); browsers and bundlers get
 * `attention-lab.js` (no `node:` import; fetches the `.wasm`). Recipes for each bundler and test
 * runner: `docs/bundlers.md`.
 *
 * @param options - where the `.wasm` comes from ({@link LoadOptions}); nothing for the default.
 * @returns the lab (the same object for every call that shares the load).
 * @throws {@link AttentionError} as a rejection, never synchronously: `bad_options` (options not an
 *   object), `unknown_option` (a name it has not, with the nearest: "did you mean wasmPaths?"),
 *   `wasm_options` (two of wasmPaths, wasmUrl and wasmBinary), `wasm_url` (not a URL or a string;
 *   a wasmPaths without its final `/`; or, with no options, a bundle where `import.meta.url` is empty),
 *   `wasm_binary` (not the bytes of attention_core.wasm: not bytes, detached, no `\0asm` magic, an
 *   HTML page, another build), `wasm_fetch` (the request failed or answered an error status, a file
 *   is missing, or there is no `fetch`; the message names the file asked for and its URL or path),
 *   `wasm_loaded` (already loaded from another source, or on another thread count), `bad_threads`
 *   (threads not a whole number from 1 to 16), `unreadable_argument` (a throwing getter),
 *   `wasm_csp` (the page's Content-Security-Policy lets no WebAssembly compile: the hint names the
 *   directive to add, script-src 'wasm-unsafe-eval').
 * @example
 * ```js
 * import { loadAttentionLab } from "attention-lab";
 * const lab = await loadAttentionLab(); // Node, a static page, webpack 5, Vite, Rollup with import-meta-assets
 * lab.describe("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }).headDim; // 64
 * ```
 * @example
 * ```js
 * // your own host or CDN: copy node_modules/attention-lab/web/lib/attention_core* to /assets/attention-lab/
 * const lab = await loadAttentionLab({ wasmPaths: "/assets/attention-lab/" });
 * ```
 * @example
 * ```js
 * const lab = await loadAttentionLab({ wasmBinary: await (await fetch("/cache/attention_core.wasm")).arrayBuffer() });
 * ```
 */
export function loadAttentionLab(options?: LoadOptions): Promise<AttentionLab>;

/**
 * True when `err` is the browser refusing a plain script URL because the page requires Trusted Types
 * (its TypeError names `TrustedScriptURL`): what a host that starts a Worker (a head split's, the
 * widget's) checks to report `trusted_types` with the policy to allow instead of a bare TypeError.
 * Never throws.
 */
export function isTrustedTypesRefusal(err: unknown): boolean;
