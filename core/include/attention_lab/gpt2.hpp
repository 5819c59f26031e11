// The whole GPT-2 forward of the book's chapter 4 (GPTModel; the same as Hugging Face's GPT-2), run on a
// .safetensors file read by slices: only the wte rows of the tokens, wpe[:T], then one block at a time
// (read it, run it, release it), then ln_f and the logits at the last position, through the tied wte a
// chunk of rows at a time. Memory is bounded by one block plus the activations, whatever the depth.
//
//   x = wte[ids] + wpe[:T]
//   per block L:  x = x + attn(ln_1(x));  x = x + mlp(ln_2(x)),  mlp = c_proj(gelu_tanh(c_fc(.)))
//   logits = ln_f(x)[-1] @ wte^T
//
// LayerNorm eps 1e-5, GELU with the tanh approximation, dropout off (eval). The attention is the book's
// MultiHeadAttention(d, d, n_ctx, 0.0, n_head, qkv_bias=True), loaded as load_gpt2_attention does
// (c_attn split into q, k, v and transposed): the engine's one forward path. Conv1D weights are stored
// (in, out). The caller reads the byte ranges each step names (ByteRead) and hands their bytes back.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention_lab/checkpoint.hpp"
#include "attention_lab/checkpoint_layout.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/ops.hpp"

namespace attention_lab {

/// What a GPT-2 file holds, from its header alone.
struct Gpt2Config {
  int64_t n_embd = 0;                        // d: wte.weight's columns
  int64_t n_head = 0;                        // from the option, the header's __metadata__ "n_head", or GPT-2's sizes
  int64_t n_layer = 0;                       // blocks h.0 .. h.{n_layer - 1}
  int64_t n_ctx = 0;                         // wpe.weight's rows
  int64_t vocab_size = 0;                    // wte.weight's rows
  std::string dtype;                         // of wte.weight: F32, F16 or BF16
  int64_t value_bytes = 0;                   // bytes per value of the widest dtype among the tensors the model reads (4 for F16 wte and F32 blocks)
  std::string prefix;                        // the keys' prefix: "" or "transformer." (Hugging Face), any for the book's ("module.", ...)
  std::string size;                          // "small", "medium", "large", "XL" when the shapes are GPT-2's own, else ""
  const CheckpointLayout* layout = nullptr;  // the file's layout (find_checkpoint_layout): every key is read through it
  bool qkv_bias = true;                      // the blocks have q/k/v biases (the book's qkv_bias; always in Hugging Face's c_attn.bias)
  int64_t n_out = 0;                         // the head's rows: vocab_size for a language model, num_classes for a classifier (ch06)
  std::string head_key;                      // the file key of the head's weight: out_head.weight, lm_head.weight, or the tied wte.weight
  bool head_bias = false;                    // the head has a bias (out_head.bias: the ch06 classifier's nn.Linear)
  /// How each tensor maps into the book's GPTModel, one line per tensor of the model and of block 0 (every
  /// block alike), from the layout table: "h.0.attn.c_attn.weight (768, 2304): split in three along
  /// dim 1, each transposed -> W_query.weight (768, 768), ...", "trf_blocks.0.att.W_query.weight (768, 768): copied as is".
  std::vector<std::string> mapping;
  /// The layout's id ("huggingface", "book") and its name for the page; "" before a layout is found.
  std::string layout_id() const { return layout != nullptr ? layout->id : ""; }
  std::string layout_name() const { return layout != nullptr ? layout->name : ""; }
};

/// Rows of wte read per logits step (about 12 MiB of float32 at width 768).
constexpr int64_t kGpt2LogitsChunkRows = 4096;

/// Reads the model's shape from the header, in the layout its keys follow (Hugging Face's GPT-2 or the
/// book's GPTModel, find_checkpoint_layout). The blocks must be h.0 .. h.{n_layer - 1} (trf_blocks.0 ...)
/// with no gap, each with its tensors (the book's q/k/v biases in every block or in none: qkv_bias); the
/// head is lm_head.weight / out_head.weight (any rows: a classifier's classes) or the tied wte.weight;
/// a mask buffer present must be (n_ctx, n_ctx); the head count follows gpt2_head_count (the option, __metadata__ n_head, GPT-2's
/// sizes), the same rule as plan_gpt2_attention. Throws AttentionError: checkpoint_missing_key (no wte,
/// wpe or ln_f; a gap in the block numbers or a partial block: names the blocks and the missing keys),
/// checkpoint_bad_header (blocks under both "h." and "transformer.h.", or both layouts' keys), checkpoint_shape (a tensor whose
/// shape does not fit n_embd; names it and both shapes), checkpoint_dtype (a dtype other than F32, F16,
/// BF16), checkpoint_num_heads (no head count known for this width, or one that does not divide it),
/// checkpoint_layer (no blocks).
Gpt2Config gpt2_config(const SafetensorsHeader& header, std::optional<int64_t> num_heads = std::nullopt);

struct Gpt2BlockWeights;  // one block's weights (core/src/gpt2_block.hpp)

/// What a run hands back per layer.
/// - Full: the residual stream entering the block (1, num_tokens, n_embd) and its attention weights
///   (1, n_head, num_tokens, num_tokens): n_layer x n_head x T x T floats (GPT-2 XL on 1024 tokens:
///   4.7 GiB), so long runs of big models do not fit the budget this way.
/// - Thumbnails: what a layer x head grid and a head view draw. Each head's weights averaged into at
///   most kGpt2ThumbnailSize x kGpt2ThumbnailSize cells (attention_thumbnail), and the exact weights
///   among the first kGpt2FirstTokens tokens (attention_first_tokens); nothing T x T leaves the core.
enum class Gpt2Attention { Full, Thumbnails };
/// "full" / "thumbnails" (model.run's `attention` option); throws AttentionError run_option otherwise.
Gpt2Attention gpt2_attention_of(const std::string& name);
constexpr int64_t kGpt2ThumbnailSize = 64;
constexpr int64_t kGpt2FirstTokens = 48;

/// Attention weights (1, H, T, T) averaged into (1, H, S, S) cells, S = min(T, size): cell (a, b) is the
/// mean over queries [floor(a T / S), floor((a + 1) T / S)) and keys [floor(b T / S), floor((b + 1) T / S)).
/// Under a causal mask every cell with b > a is all masked (exactly 0) and b < a none; S = T is the
/// weights themselves. Row-major.
Tensor attention_thumbnail(const Tensor& attn_weights, int64_t size);
/// The weights among the first F = min(T, count) tokens, (1, H, F, F): exact, as a causal query sees no
/// later key (each row still sums to 1).
Tensor attention_first_tokens(const Tensor& attn_weights, int64_t count);

/// Bytes a run on `num_tokens` tokens takes at its peak: the biggest of the embedding step, one block
/// (its raw bytes at value_bytes per value and float32 weights, packed for the kernel, plus the
/// attention's forward and the MLP's activations), a logits step and the top tokens' index (8 bytes
/// per vocabulary row), on top of what the run keeps (the residual stream, the logits, and a layer's
/// results until they are copied out), plus every layer's results as the caller holds them (their JS
/// copies): `attention` says which.
double gpt2_run_bytes(const Gpt2Config& config, int64_t num_tokens, Gpt2Attention attention = Gpt2Attention::Full);

/// What the real GPT-2 layer `layer` sees for `token_ids`: ln_1(wte[ids] + wpe[:T]), reading only
/// the rows needed: the embedding's, as the whole model reads them (one wte row per distinct id, then
/// wpe[:T]), and block `layer`'s ln_1 weight and bias. A file holding only those keys will do.
/// Throws AttentionError: checkpoint_missing_key (no wte/wpe/ln_1), checkpoint_dtype (one of them not
/// F32, F16 or BF16: the whole model's rule), checkpoint_shape (they do not fit together), input_empty,
/// checkpoint_token (an id past the vocabulary), context_too_short (more tokens than wpe rows),
/// checkpoint_layer.
std::vector<ByteRead> plan_gpt2_block_input(const SafetensorsHeader& header, const std::vector<int64_t>& token_ids, int64_t layer);

/// (1, num_tokens, d) from the bytes of plan_gpt2_block_input's reads (by ByteRead::name), LayerNorm eps
/// 1e-5 as GPT-2. Throws plan_gpt2_block_input's errors, and AttentionError non_finite_parameter (a NaN
/// or infinity in a row read) and non_finite_stage (the embedding or ln_1 overflowed float32), as the
/// whole model does.
Tensor gpt2_block_input(const SafetensorsHeader& header, const std::vector<int64_t>& token_ids, int64_t layer, const std::map<std::string, std::vector<uint8_t>>& bytes);

/// One run of the model on token ids, step by step as a generation goes (Gpt2Generation): reads()
/// names the byte ranges the next step needs, the caller reads them (any order) and hands their bytes
/// to step() by ByteRead::name, until finished(). The steps: the embedding, each block (0, 1, ...), then
/// either ln_f and the logits a chunk of wte's rows at a time, or (a run to a layer's input) ln_1 of
/// that layer.
class Gpt2Run {
 public:
  /// `input_of`: end at the input of block `input_of`'s attention (after blocks 0 .. input_of - 1)
  /// instead of the logits. Throws AttentionError: input_empty (no tokens), checkpoint_token (an id
  /// outside the vocabulary), context_too_short (more tokens than n_ctx), checkpoint_layer (input_of
  /// outside 0 .. n_layer - 1), too_large (gpt2_run_bytes over memory_budget_bytes). Each step then
  /// throws non_finite_stage when finite weights overflow float32: the slot is the first stage that
  /// turned NaN or infinite (embedding, ln_1, attn, attn_residual, ln_2, c_fc, gelu, mlp_c_proj,
  /// mlp_residual, ln_f, logits), the message names its block (h.L), formula and position.
  Gpt2Run(const SafetensorsHeader& header, const Gpt2Config& config, std::vector<int64_t> token_ids, double memory_budget_bytes = kDefaultMemoryBudgetBytes,
          Gpt2Attention attention = Gpt2Attention::Full, std::optional<int64_t> input_of = std::nullopt);

  const Gpt2Config& config() const { return config_; }
  int64_t num_tokens() const { return static_cast<int64_t>(ids_.size()); }

  struct Layer {
    Tensor input;         // Full: (1, num_tokens, n_embd), the residual stream entering the block
    Tensor attn_weights;  // Full: (1, n_head, num_tokens, num_tokens), softmax(q k^T / sqrt(head_dim)), masked
    Tensor thumbnail;     // Thumbnails: (1, n_head, S, S), attention_thumbnail(attn_weights, kGpt2ThumbnailSize)
    Tensor first_tokens;  // Thumbnails: (1, n_head, F, F), attention_first_tokens(attn_weights, kGpt2FirstTokens)
  };
  /// What a step did, as model.run's onProgress reports it.
  struct Step {
    /// "embedding", "block", "input" (ln_1 of block `layer`'s stream: the run is finished) or "logits"
    /// (the last chunk: the run is finished); "" for a step not reported (ln_f, a logits chunk before the last).
    std::string piece;
    int64_t layer = -1;           // "block" and "input": the block
    int64_t done = 0, total = 0;  // pieces reported so far, of 1 + the blocks the run runs + 1
    std::optional<Layer> block;   // "block": what the block gives the caller
    std::optional<Tensor> input;  // "input": (1, num_tokens, n_embd)
  };

  /// The byte ranges the next step needs (none once finished): wte's rows of the tokens (one read per
  /// distinct id) and wpe[:T]; a block's 12 tensors; ln_1's or ln_f's weight and bias; a logits chunk.
  std::vector<ByteRead> reads() const;
  /// Runs the next step on the bytes of reads() (a block's weights are released when it ends).
  /// AttentionError not_in_progress once finished.
  Step step(const std::map<std::string, std::vector<uint8_t>>& bytes);
  bool finished() const { return phase_ == Phase::Done; }

  /// Runs the products of every later step on `pool` (null: one thread; the same bits either way).
  /// The pool must outlive the steps that use it.
  void use_pool(ThreadPool* pool) { pool_ = pool; }

  /// The logits at the last position (n_out: vocab_size, or a classifier's classes), once every chunk is in.
  const std::vector<float>& last_logits() const;
  /// The k most likely next tokens by softmax of last_logits: (id, probability), most likely first.
  std::vector<std::pair<int64_t, double>> top_tokens(int k) const;

 private:
  enum class Phase { Embed, Block, Input, Final, Logits, Done };
  Step embed(const std::map<std::string, std::vector<uint8_t>>& bytes);
  Step block(const std::map<std::string, std::vector<uint8_t>>& bytes);
  Step attention_input(const std::map<std::string, std::vector<uint8_t>>& bytes);
  Step final_norm(const std::map<std::string, std::vector<uint8_t>>& bytes);
  Step logits_rows(const std::map<std::string, std::vector<uint8_t>>& bytes);
  /// The phase after the embedding or a block: the next block, else the input of input_of_ or ln_f.
  Phase after_blocks() const;

  const SafetensorsHeader* header_;
  Gpt2Config config_;
  std::vector<int64_t> ids_;
  Gpt2Attention attention_;
  std::optional<int64_t> input_of_;
  int64_t blocks_ = 0;            // the blocks the run runs: n_layer, or input_of
  Tensor x_;                      // (1, T, d) residual stream
  std::vector<float> last_;       // ln_f(x)[-1], (d)
  std::vector<float> head_bias_;  // the head's bias (n_out) when it has one
  std::vector<float> logits_;     // (n_out)
  Phase phase_ = Phase::Embed;
  int64_t layer_ = 0, chunk_ = 0;  // the next block, the next logits chunk
  ThreadPool* pool_ = nullptr;
};

/// The options of a generation, as the book's chapter 5 `generate(model, idx, max_new_tokens,
/// context_size, temperature=0.0, top_k=None, eos_id=None)` takes them, plus the KV cache.
struct Gpt2GenerateOptions {
  int64_t max_new_tokens = 1;
  double temperature = 0.0;       // 0: greedy argmax (generate_text_simple); > 0: softmax(logits / T) + multinomial
  std::optional<int64_t> top_k;   // keep the logits >= the k-th largest (others -inf), as torch.topk + torch.where
  std::optional<int64_t> eos_id;  // stop before appending it
  bool cache = true;              // keep each layer's keys and values: a decode step computes one position
  /// With the cache: a cache of at most this many positions whose oldest entries shift out before a
  /// chunk that would overflow it (gpt_with_kv_cache_optimized.py's kv_window_size; KvCache::window); each
  /// token then attends to at most `window` keys, itself included. It bounds the keys held, not the
  /// positions: GPT-2's wpe has n_ctx rows, so prompt + max_new_tokens - 1 positions must still fit
  /// n_ctx (the book's pos_emb lookup fails past it). nullopt: grow to every position. Each layer's
  /// cache reserves min(2 x window, positions) rows, so the shift moves its keys once per window tokens.
  std::optional<int64_t> window;
  std::optional<bool> resident;  // keep the weights in memory between tokens; nullopt: when the estimate allows
  bool attention = false;        // return each token's attention rows (Gpt2Step::attention); off: nothing kept or copied
};

/// What one generated token reports.
struct Gpt2Step {
  int64_t token = 0;
  double prob = 0;                              // its probability under the distribution it was picked from (softmax of the top-k logits / temperature; T = 1 when greedy)
  std::vector<std::pair<int64_t, double>> top;  // the 5 most likely tokens of that distribution, most likely first
  int64_t cache_tokens = 0;                     // positions held in the KV cache after this step (0 without the cache; at most the window)
  double cache_bytes = 0;                       // their keys and values: 2 x n_layer x cache_tokens x n_embd x 4
  // With options.attention: (n_layer, n_head, attention_keys) row-major float32, the attn_weights row of
  // the position the token was read at (the last of the forward that produced it), in every layer and
  // head: softmax(q k^T / sqrt(head_dim)) over the attention_keys positions it sees (the whole cropped
  // context without the cache). The last row of that forward's (num_tokens, num_tokens) attn_weights.
  std::vector<float> attention;
  int64_t attention_keys = 0;
};

/// Bytes a generation takes at its peak (the same estimate decides whether the weights stay resident:
/// resident = true counts them all, packed, plus the block or logits chunk being loaded). With a
/// window, the cache counted holds min(window, positions) positions per layer, the most it holds. With
/// options.attention it also counts the rows of every step the caller keeps (4 x n_layer x n_head x
/// the keys each token sees, summed over the tokens).
double gpt2_generation_bytes(const Gpt2Config& config, int64_t prompt_tokens, const Gpt2GenerateOptions& options, bool resident);

/// The book's generate step on the logits at the last position: top-k, then greedy argmax
/// (temperature 0; no draw) or softmax(logits / temperature) and torch.multinomial(probs, 1) on
/// `generator` (2 x vocab_size draws). Returns the token, its probability and the 5 most likely.
Gpt2Step gpt2_pick_token(std::vector<float> logits, double temperature, std::optional<int64_t> top_k, TorchGenerator* generator);

/// One generation, step by step like Gpt2Run: each step names its reads (none when everything it needs
/// is resident), the caller reads them and passes their bytes; step() runs until a token is out or more
/// bytes are needed. Every forward runs the whole-model run's blocks (their attention the core's
/// AttentionModule). Cached: a prefill of the prompt, then one position per token, each layer's keys
/// and values kept across steps in the core's KvCache (with a window: at most `window` positions, the
/// oldest shifted out first). Uncached: each token reruns the whole context, cropped to its last n_ctx
/// tokens as the book's generate does.
class Gpt2Generation {
 public:
  /// Throws AttentionError: input_empty, checkpoint_token (a prompt id or eos_id outside the
  /// vocabulary), generate_option (max_new_tokens < 1, temperature < 0 or not finite, top_k outside
  /// 1 .. vocab_size, window outside 1 .. n_ctx or without the cache), cache_window (a prompt longer
  /// than the window: the prefill is one chunk), cache_context (with the cache, window or not,
  /// prompt + max_new_tokens - 1 positions past n_ctx),
  /// too_large (over the budget even when the weights are re-read per token, or resident forced over it).
  /// step() throws non_finite_stage when finite weights overflow float32 in a block, as Gpt2Run does
  /// (the row it names is the forward's: the chunk's, not the context's).
  Gpt2Generation(const SafetensorsHeader& header, const Gpt2Config& config, std::vector<int64_t> prompt, const Gpt2GenerateOptions& options,
                 double memory_budget_bytes = kDefaultMemoryBudgetBytes);
  ~Gpt2Generation();

  bool resident() const { return resident_; }
  double estimate_bytes() const { return estimate_; }
  bool finished() const { return finished_; }
  bool stopped_by_eos() const { return eos_; }
  const std::vector<int64_t>& token_ids() const { return ids_; }

  /// Runs the products of every later step on `pool` (null: one thread; the same bits either way).
  /// The pool must outlive the steps that use it.
  void use_pool(ThreadPool* pool) { pool_ = pool; }

  /// The byte ranges the next step needs (empty when it needs none).
  std::vector<ByteRead> reads() const;
  /// Runs the next step on `bytes` (by ByteRead::name), then every following step that needs no
  /// bytes, until a token is out (returned) or a step needs bytes (nullopt). `generator` draws when
  /// temperature > 0 (required then).
  std::optional<Gpt2Step> step(const std::map<std::string, std::vector<uint8_t>>& bytes, TorchGenerator* generator);

 private:
  enum class Phase { Embed, Block, Final, Logits };
  void run_phase(const std::map<std::string, std::vector<uint8_t>>& bytes);
  void embed_step(const std::map<std::string, std::vector<uint8_t>>& bytes);
  void block_step(const std::map<std::string, std::vector<uint8_t>>& bytes);
  void final_step(const std::map<std::string, std::vector<uint8_t>>& bytes);
  void logits_step(const std::map<std::string, std::vector<uint8_t>>& bytes);
  std::optional<Gpt2Step> finish_token(TorchGenerator* generator);

  const SafetensorsHeader* header_;
  Gpt2Config config_;
  Gpt2GenerateOptions options_;
  std::vector<int64_t> ids_;  // prompt + new
  int64_t prompt_ = 0, made_ = 0;
  bool resident_ = false, finished_ = false, eos_ = false;
  double estimate_ = 0;
  Phase phase_ = Phase::Embed;
  int64_t layer_ = 0, chunk_ = 0;
  // the positions this forward computes: [pos0_, pos0_ + n_) of the (cropped) context; ids of the chunk;
  // cached_: the entries each layer's cache holds before it (= pos0_ unless a window shifted some out)
  int64_t pos0_ = 0, n_ = 0, cached_ = 0;
  std::vector<int64_t> chunk_ids_;
  Tensor x_;                                               // (1, n_, d) residual stream of the chunk
  std::vector<KvCache> caches_;                            // with the cache: each layer's keys and values
  int64_t capacity_ = 0;                                   // keys a forward attends to at most (the window, when there is one)
  std::vector<std::unique_ptr<Gpt2BlockWeights>> blocks_;  // resident: every block, packed
  std::vector<ops::PackedMatrix> wte_chunks_;              // resident: wte in logits chunks, packed
  std::vector<float> ln_f_w_, ln_f_b_, last_, logits_;
  std::vector<float> attention_;  // with options.attention: (n_layer, n_head, capacity) the last position's attn_weights row
  ThreadPool* pool_ = nullptr;
};

}  // namespace attention_lab
