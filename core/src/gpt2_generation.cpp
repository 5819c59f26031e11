// GPT-2 generation (the book's chapter 5 generate, with the KV cache of ch04/03_kv-cache): its memory
// estimate, the pick of each token, and Gpt2Generation's steps. Each forward runs the blocks of
// gpt2_block.cpp, the cached ones with a KvCache per layer: no attention is computed here.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "attention_lab/gpt2.hpp"
#include "attention_lab/plan.hpp"
#include "attention_lab/text.hpp"
#include "gpt2_block.hpp"

namespace attention_lab {

namespace {

/// Floats pack_b allocates for a (k, n) operand.
double packed(double k, double n) { return static_cast<double>(ops::packed_floats(static_cast<int64_t>(k), static_cast<int64_t>(n))); }

/// The positions a generation's forward passes compute at most, and what its cache holds.
struct GenerationShape {
  double chunk = 0;     // the longest chunk one forward computes (the prompt's prefill, or the cropped context)
  double capacity = 0;  // keys one forward attends to at most (and the cache's entries)
  double reserve = 0;   // rows each layer's KvCache reserves: every position, or a window and as many rows of room (KvCache::reserve)
};

GenerationShape generation_shape(const Gpt2Config& c, int64_t prompt, const Gpt2GenerateOptions& o) {
  const int64_t positions = prompt + std::max<int64_t>(o.max_new_tokens, 1) - 1;  // the last token is never fed back
  GenerationShape s;
  // a KvCache grows to the positions seen (a window: to at most its size); without it, the context is cropped to n_ctx
  s.capacity = static_cast<double>(o.cache ? (o.window ? std::min(*o.window, positions) : positions) : std::min(positions, c.n_ctx));
  s.chunk = o.cache ? static_cast<double>(prompt) : s.capacity;
  // the window's oldest rows shift out in place while room is left after the held ones (KvCache)
  if (o.cache) s.reserve = static_cast<double>(o.window ? std::min(2 * *o.window, positions) : positions);
  return s;
}

std::string mib(double bytes) { return std::to_string(static_cast<long long>(std::ceil(bytes / 1048576.0))); }

}  // namespace

double gpt2_generation_bytes(const Gpt2Config& c, int64_t prompt_tokens, const Gpt2GenerateOptions& o, bool resident) {
  const double d = static_cast<double>(c.n_embd), H = static_cast<double>(c.n_head), hd = d / H, V = static_cast<double>(c.vocab_size);
  const double L = static_cast<double>(c.n_layer), raw = static_cast<double>(c.value_bytes > 0 ? c.value_bytes : gpt2_dtype_bytes(c.dtype)), f = 4.0;
  const GenerationShape s = generation_shape(c, prompt_tokens, o);
  const double n = s.chunk, T = s.capacity;
  // Kept through the generation: every layer's KvCache (with the cache: its reserved rows), the chunk's
  // residual stream, the last position's norm, ln_f, the logits, the ids.
  const double kv = f * L * 2.0 * s.reserve * d;
  // With the attention rows: the last position's row per layer and head (kept), one step's copy of them,
  // and every step's rows the caller holds (the keys each new token sees, summed over the tokens).
  const double rows_kept = o.attention ? f * L * H * T : 0.0, rows_step = o.attention ? f * L * H * T : 0.0;
  double seen = 0;
  if (o.attention)
    for (int64_t i = 0; i < std::max<int64_t>(o.max_new_tokens, 1); ++i) seen += static_cast<double>(o.cache ? prompt_tokens + i : std::min(prompt_tokens + i, c.n_ctx));
  const double results = f * L * H * seen;
  const double kept = kv + rows_kept + results + f * (n * d + 3.0 * d + V) + 8.0 * (static_cast<double>(prompt_tokens) + static_cast<double>(o.max_new_tokens));
  // Picking a token: the top-k copy of the logits, the probabilities, the order of the 5 most likely
  // (and the step's copy of the attention rows).
  const double pick = f * 2.0 * V + 8.0 * V + rows_step;
  // One block (gpt2_block.cpp): its weights (the attention module as plan_heap_bytes counts it, the
  // MLP's packed, the vectors); its raw bytes and what loading decodes at once (c_attn and c_proj and
  // one transposed part: 5 d^2); the activations: ln's output, the attention forward (q, the keys and
  // values of every key it sees, the projection scratch, one head's queries x keys and its packed keys
  // and values, the context, merged heads and out_proj, every head's weights when the rows are asked;
  // with the cache, its reserved rows take the chunk's keys and values), the MLP's 4d.
  const double module = plan_heap_bytes(plan_forward(gpt2_attention_config(c)), std::nullopt);
  const double weights = module + f * (packed(d, 4 * d) + packed(4 * d, d) + 9.0 * d);
  const double block_raw = raw * (12.0 * d * d + 13.0 * d) + f * 5.0 * d * d;
  const double scores = o.cache ? std::max(n * n, T) : n * T;  // queries x keys: the prefill's, or one position's against the cache
  const double attn = f * (6.0 * n * d + 2.0 * T * d + scores + packed(hd, T) + packed(T, hd) + (o.attention ? H * scores : 0.0));
  const double acts = attn + f * 5.0 * n * d;
  // A logits chunk: wte rows raw, as float32 and packed.
  const double rows = static_cast<double>(std::min<int64_t>(kGpt2LogitsChunkRows, c.vocab_size));
  const double chunk = (raw + f) * rows * d + f * packed(d, rows);
  const double embed = (raw + f) * 2.0 * n * d;
  // The allocator's bookkeeping, rounding and holes (measured on GPT-2 small: up to 6 MiB past the sum,
  // re-read per token with the cache, whose storage, allocated at the start, can split a hole that a
  // block's 9 MiB matrix would have fitted)
  const double slack = 12.0 * 1048576.0;
  if (!resident) return kept + std::max({embed, pick, block_raw + weights + acts, chunk}) + slack;
  double wte = 0;
  for (int64_t begin = 0; begin < c.vocab_size; begin += kGpt2LogitsChunkRows) wte += f * packed(d, static_cast<double>(std::min(kGpt2LogitsChunkRows, c.vocab_size - begin)));
  // Resident: every block and wte packed, on top of the load in progress. The blocks' loads leave
  // holes the larger wte chunks cannot use, so a block's load and a chunk's both count.
  return kept + L * weights + wte + std::max({embed, pick, block_raw + acts + chunk}) + slack;
}

Gpt2Step gpt2_pick_token(std::vector<float> z, double temperature, std::optional<int64_t> top_k, TorchGenerator* generator) {
  const int64_t V = static_cast<int64_t>(z.size());
  if (top_k) {  // torch.topk(logits, k), then torch.where(logits < top_logits[-1], -inf, logits): ties with the k-th stay
    std::vector<float> copy = z;
    std::nth_element(copy.begin(), copy.begin() + (*top_k - 1), copy.end(), std::greater<float>());
    const float kth = copy[static_cast<size_t>(*top_k - 1)];
    for (float& v : z)
      if (v < kth) v = -std::numeric_limits<float>::infinity();
  }
  Gpt2Step s;
  bool overflow = false;  // a finite logit / temperature past float32's largest (~3.4e38): a temperature near 0
  if (temperature > 0.0) {
    const float t = static_cast<float>(temperature);  // logits / temperature: the scalar as float32, one division
    for (float& v : z) {
      const float scaled = v / t;
      overflow = overflow || (std::isfinite(v) && !std::isfinite(scaled));
      v = scaled;
    }
  } else {
    s.token = std::max_element(z.begin(), z.end()) - z.begin();  // torch.argmax: the first maximum
  }
  ops::softmax_rows(z.data(), 1, V);  // torch.softmax(logits, dim=-1); z now holds the probabilities
  if (temperature > 0.0) {
    for (const float p : z)
      if (!(p >= 0.0f && std::isfinite(p)))
        throw AttentionError(
            "non_finite_probabilities", "temperature",
            "the probabilities are not finite at temperature " + format_number(temperature) + (overflow ? ": logits / temperature overflow float32 (past ~3.4e38)" : ""),
            "torch.multinomial refuses them too. Use temperature 0 for the most likely token (greedy), or one such as 0.7 to sample.");
    if (generator == nullptr) throw AttentionError("generator", "generator", "sampling at a temperature above 0 needs a generator", "Pass {generator: lab.manualSeed(123)}.");
    s.token = generator->multinomial_one(z.data(), V);
  }
  s.prob = z[static_cast<size_t>(s.token)];
  std::vector<int64_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  const auto k = static_cast<std::ptrdiff_t>(std::min<int64_t>(5, V));
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
    return z[static_cast<size_t>(a)] > z[static_cast<size_t>(b)] || (z[static_cast<size_t>(a)] == z[static_cast<size_t>(b)] && a < b);
  });
  for (std::ptrdiff_t i = 0; i < k; ++i) s.top.emplace_back(order[static_cast<size_t>(i)], z[static_cast<size_t>(order[static_cast<size_t>(i)])]);
  return s;
}

namespace {

/// The rules of a generation's prompt and options, before anything is allocated (Gpt2Generation's
/// constructor documents the codes).
void check_generation(const Gpt2Config& c, const std::vector<int64_t>& ids, const Gpt2GenerateOptions& o) {
  const int64_t prompt = static_cast<int64_t>(ids.size());
  const auto bad = [](const std::string& slot, const std::string& message, const std::string& hint) { return AttentionError("generate_option", slot, message, hint); };
  if (ids.empty()) throw AttentionError("input_empty", "tokens", "no prompt tokens to generate from", "Type at least one word.");
  if (c.n_out != c.vocab_size || c.head_bias)
    throw bad("model",
              "this model's head gives " + std::to_string(c.n_out) + " class scores (" + c.head_key + "), not a next token over the " + std::to_string(c.vocab_size) +
                  " tokens: a classifier does not generate",
              "Run it with model.run (its logits are the classes), or generate with a language model's file (out_head.weight of vocab_size rows).");
  for (const int64_t id : ids) {
    if (id < 0 || id >= c.vocab_size) {
      throw AttentionError("checkpoint_token", "tokens", "token id " + std::to_string(id) + " is outside the vocabulary (0 to " + std::to_string(c.vocab_size - 1) + ")",
                           "Tokenize with the checkpoint's own tokenizer.");
    }
  }
  if (o.max_new_tokens < 1 || o.max_new_tokens > 100000)
    throw bad("maxNewTokens", "maxNewTokens must be a whole number from 1 to 100000, got " + std::to_string(o.max_new_tokens), "For example {maxNewTokens: 20}.");
  if (!(std::isfinite(o.temperature) && o.temperature >= 0.0))
    throw bad("temperature", "temperature must be a finite number, 0 or more", "0 picks the most likely token (greedy); 1.0 samples from the model's own probabilities.");
  if (o.top_k && (*o.top_k < 1 || *o.top_k > c.vocab_size))
    throw bad("topK", "topK must be from 1 to vocab_size " + std::to_string(c.vocab_size) + ", got " + std::to_string(*o.top_k), "For example {topK: 25}, or null for all.");
  if (o.eos_id && (*o.eos_id < 0 || *o.eos_id >= c.vocab_size))
    throw bad("eosId", "eosId " + std::to_string(*o.eos_id) + " is outside the vocabulary (0 to " + std::to_string(c.vocab_size - 1) + ")", "GPT-2's <|endoftext|> is 50256.");
  if (o.window) {
    const int64_t w = *o.window;
    if (!o.cache) throw bad("window", "window is the KV cache's size, and cache is false", "Leave window out, or pass {cache: true}.");
    if (w < 1 || w > c.n_ctx)
      throw bad("window", "window must be a whole number from 1 to n_ctx " + std::to_string(c.n_ctx) + ", got " + std::to_string(w),
                "A window of n_ctx already holds every position wpe has; for example {window: 64}.");
    if (prompt > w)  // the prompt is one prefill chunk: the book's shift would leave its pointer below 0
      throw AttentionError("cache_window", "window", "the prompt's " + std::to_string(prompt) + " tokens are one prefill chunk, longer than the window of " + std::to_string(w),
                           "Use a window of at least " + std::to_string(prompt) + ", or a shorter prompt.");
  }
  const int64_t positions = prompt + o.max_new_tokens - 1;
  if (o.cache && positions > c.n_ctx) {
    // with or without a window: each position reads its own wpe row, and wpe has n_ctx of them
    throw AttentionError("cache_context", "maxNewTokens",
                         "the KV cache would " + std::string(o.window ? "see " : "hold ") + std::to_string(positions) + " positions (" + std::to_string(prompt) +
                             " prompt tokens + maxNewTokens " + std::to_string(o.max_new_tokens) + " - 1) but n_ctx is " + std::to_string(c.n_ctx) + " (wpe.weight rows)" +
                             (o.window ? ": a window bounds the keys held, not the positions, and position " + std::to_string(c.n_ctx) + " has no wpe row" : ""),
                         "Generate fewer tokens, or pass {cache: false} to crop the context to its last n_ctx tokens as the book's generate does.");
  }
}

}  // namespace

Gpt2Generation::Gpt2Generation(const SafetensorsHeader& header, const Gpt2Config& config, std::vector<int64_t> prompt, const Gpt2GenerateOptions& options,
                               double memory_budget_bytes)
    : header_(&header), config_(config), options_(options), ids_(std::move(prompt)) {
  check_generation(config_, ids_, options_);
  prompt_ = static_cast<int64_t>(ids_.size());
  const double lean = gpt2_generation_bytes(config_, prompt_, options_, false), full = gpt2_generation_bytes(config_, prompt_, options_, true);
  resident_ = options_.resident.value_or(full <= memory_budget_bytes);
  estimate_ = resident_ ? full : lean;
  if (estimate_ > memory_budget_bytes) {
    throw AttentionError("too_large", "tokens",
                         "generating from " + std::to_string(prompt_) + " tokens needs about " + mib(estimate_) + " MiB" + (resident_ ? " with the weights resident" : "") +
                             ", over the " + mib(memory_budget_bytes) + " MiB this page allows",
                         resident_ && lean <= memory_budget_bytes ? "Let the weights be re-read per token (resident: null)." : "Use a shorter prompt or fewer new tokens.");
  }
  const GenerationShape shape = generation_shape(config_, prompt_, options_);
  capacity_ = static_cast<int64_t>(shape.capacity);
  if (options_.cache) {  // the core's KvCache, one per layer (a window's keeps its last `window` entries)
    caches_.resize(static_cast<size_t>(config_.n_layer));
    for (KvCache& cache : caches_) {
      cache.window = options_.window.value_or(0);
      cache.reserve(1, config_.n_head, config_.n_embd / config_.n_head, static_cast<int64_t>(shape.reserve));  // the estimate's rows, allocated once
    }
  }
  if (options_.attention) attention_.assign(static_cast<size_t>(config_.n_layer * config_.n_head * capacity_), 0.0f);
  if (resident_) blocks_.resize(static_cast<size_t>(config_.n_layer));
  // the first forward: the whole prompt (cropped to n_ctx without the cache)
  const int64_t window = options_.cache ? prompt_ : std::min(prompt_, config_.n_ctx);
  chunk_ids_.assign(ids_.end() - window, ids_.end());
  pos0_ = 0;
  n_ = window;
}

Gpt2Generation::~Gpt2Generation() = default;

std::vector<ByteRead> Gpt2Generation::reads() const {
  if (finished_) return {};
  switch (phase_) {
    case Phase::Embed:
      return gpt2_embedding_reads(*header_, config_, chunk_ids_, pos0_);
    case Phase::Block:
      if (resident_ && blocks_[static_cast<size_t>(layer_)]) return {};
      return gpt2_block_reads(*header_, config_, layer_);
    case Phase::Final:
      if (!ln_f_w_.empty()) return {};
      return gpt2_final_reads(*header_, config_);
    case Phase::Logits:
      if (resident_ && static_cast<size_t>(chunk_) < wte_chunks_.size()) return {};
      return {gpt2_logits_read(*header_, config_, chunk_)};
  }
  return {};
}

void Gpt2Generation::embed_step(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  x_ = gpt2_embedding(*header_, config_, chunk_ids_, pos0_, bytes);  // (1, n, d) = wte[ids] + wpe[pos0 : pos0 + n]
  phase_ = Phase::Block;
  layer_ = 0;
}

void Gpt2Generation::block_step(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const size_t L = static_cast<size_t>(layer_);
  std::unique_ptr<Gpt2BlockWeights> loaded;
  const Gpt2BlockWeights* w = resident_ ? blocks_[L].get() : nullptr;
  if (w == nullptr) {
    loaded = std::make_unique<Gpt2BlockWeights>(load_gpt2_block(*header_, config_, layer_, bytes));
    w = loaded.get();
  }
  Tensor weights;  // with the attention rows: (1, n_head, n, keys)
  Gpt2BlockOptions o;
  o.layer = layer_;
  o.cache = options_.cache ? &caches_[L] : nullptr;
  o.attn_weights = options_.attention ? &weights : nullptr;
  o.pool = pool_;
  run_gpt2_block(*w, x_, o);
  if (options_.attention) {  // the new token's row: the chunk's last query, in every head
    const int64_t H = config_.n_head, n = weights.shape[2], keys = weights.shape[3];
    for (int64_t hh = 0; hh < H; ++hh) std::copy_n(weights.data.data() + ((hh * n) + n - 1) * keys, keys, attention_.data() + (layer_ * H + hh) * capacity_);
  }
  if (resident_ && loaded) blocks_[L] = std::move(loaded);
  if (++layer_ == config_.n_layer) phase_ = Phase::Final;
}

void Gpt2Generation::final_step(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const int64_t d = config_.n_embd;
  if (ln_f_w_.empty()) {
    const std::vector<ByteRead> r = reads();
    ln_f_w_ = gpt2_values(r[0], bytes);
    ln_f_b_ = gpt2_values(r[1], bytes);
  }
  last_.assign(x_.data.end() - d, x_.data.end());  // the last position only: the next token is read there
  ops::layer_norm_rows(last_.data(), 1, d, ln_f_w_.data(), ln_f_b_.data(), 1e-5f);
  logits_.assign(static_cast<size_t>(config_.vocab_size), 0.0f);
  phase_ = Phase::Logits;
  chunk_ = 0;
}

void Gpt2Generation::logits_step(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const int64_t d = config_.n_embd, begin = chunk_ * kGpt2LogitsChunkRows;
  if (resident_ && static_cast<size_t>(chunk_) < wte_chunks_.size()) {
    ops::gemm(pool_, last_.data(), 1, d, wte_chunks_[static_cast<size_t>(chunk_)], nullptr, logits_.data() + begin);
  } else {
    const ByteRead r = reads().front();
    ops::PackedMatrix rows;
    {
      const std::vector<float> values = gpt2_values(r, bytes);  // (rows, d)
      rows = ops::pack_b(values.data(), d, r.entry.shape[0], true);
    }
    ops::gemm(pool_, last_.data(), 1, d, rows, nullptr, logits_.data() + begin);
    if (resident_) wte_chunks_.push_back(std::move(rows));
  }
  ++chunk_;
}

void Gpt2Generation::run_phase(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  switch (phase_) {
    case Phase::Embed:
      return embed_step(bytes);
    case Phase::Block:
      return block_step(bytes);
    case Phase::Final:
      return final_step(bytes);
    case Phase::Logits:
      return logits_step(bytes);
  }
}

std::optional<Gpt2Step> Gpt2Generation::finish_token(TorchGenerator* generator) {
  Gpt2Step s = gpt2_pick_token(logits_, options_.temperature, options_.top_k, generator);
  cached_ = options_.cache ? caches_.front().entries() : 0;  // a window keeps its last `window` entries
  s.cache_tokens = cached_;
  s.cache_bytes = 2.0 * 4.0 * static_cast<double>(config_.n_layer * cached_ * config_.n_embd);
  if (!attention_.empty()) {                                                                   // (n_layer, n_head, T) out of (n_layer, n_head, capacity)
    const int64_t T = options_.cache ? cached_ : n_, rows = config_.n_layer * config_.n_head;  // the keys the row saw: at most a window's
    s.attention_keys = T;
    s.attention.resize(static_cast<size_t>(rows * T));
    for (int64_t r = 0; r < rows; ++r) std::copy_n(attention_.data() + r * capacity_, T, s.attention.data() + r * T);
  }
  if (options_.eos_id && s.token == *options_.eos_id) {  // the book's `if idx_next == eos_id: break`: not appended
    eos_ = finished_ = true;
    return std::nullopt;
  }
  ids_.push_back(s.token);
  if (++made_ == options_.max_new_tokens) {
    finished_ = true;
    return s;
  }
  // the next forward: the new token alone (cached), or the whole context cropped to n_ctx
  if (options_.cache) {
    pos0_ += n_;  // the absolute position: wpe's row, whatever the window holds
    n_ = 1;
    chunk_ids_.assign(1, s.token);
  } else {
    n_ = std::min<int64_t>(static_cast<int64_t>(ids_.size()), config_.n_ctx);
    pos0_ = 0;
    chunk_ids_.assign(ids_.end() - n_, ids_.end());
  }
  phase_ = Phase::Embed;
  return s;
}

std::optional<Gpt2Step> Gpt2Generation::step(const std::map<std::string, std::vector<uint8_t>>& bytes, TorchGenerator* generator) {
  if (finished_) throw AttentionError("not_in_progress", "", "the generation is finished", "Start another with model.generate.");
  if (options_.temperature > 0.0 && generator == nullptr)
    throw AttentionError("generator", "generator", "sampling at a temperature above 0 needs a generator", "Pass {generator: lab.manualSeed(123)}.");
  static const std::map<std::string, std::vector<uint8_t>> none;
  const std::map<std::string, std::vector<uint8_t>>* given = &bytes;
  for (;;) {
    run_phase(*given);
    given = &none;
    if (phase_ == Phase::Logits && chunk_ == gpt2_logits_chunks(config_)) {
      std::optional<Gpt2Step> s = finish_token(generator);
      if (s || finished_) return s;
    }
    if (finished_ || !reads().empty()) return std::nullopt;
  }
}

}  // namespace attention_lab
