#include "attention_lab/gpt2.hpp"
#include "attention_lab/gpt2_sizes.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "attention_lab/plan.hpp"
#include "gpt2_block.hpp"

namespace attention_lab {

Gpt2Attention gpt2_attention_of(const std::string& name) {
  if (name == "full") return Gpt2Attention::Full;
  if (name == "thumbnails") return Gpt2Attention::Thumbnails;
  throw AttentionError(
      "run_option", "attention", "attention must be \"full\" or \"thumbnails\", got \"" + name + "\"",
      "Use \"full\" for every layer's whole weights, or \"thumbnails\" for a grid's averaged cells and the first " + std::to_string(kGpt2FirstTokens) + " tokens' weights.");
}

Tensor attention_thumbnail(const Tensor& w, int64_t size) {
  const int64_t H = w.shape[1], T = w.shape[2], S = std::min(T, size);
  Tensor out({1, H, S, S});
  for (int64_t hh = 0; hh < H; ++hh)
    for (int64_t a = 0; a < S; ++a) {
      const int64_t r0 = a * T / S, r1 = (a + 1) * T / S;
      for (int64_t b = 0; b < S; ++b) {
        const int64_t c0 = b * T / S, c1 = (b + 1) * T / S;
        double sum = 0.0;
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = c0; j < c1; ++j) sum += w.data[static_cast<size_t>((hh * T + i) * T + j)];
        out.data[static_cast<size_t>((hh * S + a) * S + b)] = static_cast<float>(sum / static_cast<double>((r1 - r0) * (c1 - c0)));
      }
    }
  return out;
}

Tensor attention_first_tokens(const Tensor& w, int64_t count) {
  const int64_t H = w.shape[1], T = w.shape[2], F = std::min(T, count);
  Tensor out({1, H, F, F});
  for (int64_t hh = 0; hh < H; ++hh)
    for (int64_t i = 0; i < F; ++i) std::copy_n(w.data.begin() + (hh * T + i) * T, F, out.data.begin() + (hh * F + i) * F);
  return out;
}

double gpt2_run_bytes(const Gpt2Config& c, int64_t num_tokens, Gpt2Attention attention) {
  const double d = static_cast<double>(c.n_embd), T = static_cast<double>(num_tokens), H = static_cast<double>(c.n_head);
  // raw bytes per value: the widest dtype read (an F16 wte beside F32 blocks reads the blocks at 4)
  const double V = static_cast<double>(c.vocab_size), raw = static_cast<double>(c.value_bytes > 0 ? c.value_bytes : gpt2_dtype_bytes(c.dtype));
  const double panel = static_cast<double>(ops::packed_floats(1, 1));
  const auto packed = [panel](double k, double n) { return std::ceil(n / panel) * k * panel; };
  // Kept through the run: the residual stream, the last position's norm, the logits and one layer's
  // input and attention weights until the caller has copied them out.
  const double kept = 4.0 * (T * d + d + V + T * d + H * T * T);
  // Embedding: a wte row per token (at most: one per distinct id) and T wpe rows, raw and as float32.
  const double embed = (raw + 4.0) * 2.0 * T * d;
  // A block (load_gpt2_block, then run_gpt2_block): its raw bytes (all read before it runs), its
  // weights as they stay through the block (the attention module packed, with its forward's buffers
  // in plan_heap_bytes as no caller copies its output out; both MLP weights packed; the vectors), what
  // loading them holds at most on top (c_attn and c_proj as float32 and one transposed part, or one
  // MLP weight as float32), and the activations: ln's output, the attention's output, the MLP's hidden
  // 4d (the attention weights are in `kept`). Loading and running both count: the allocator does not
  // always reuse what the first freed.
  const ForwardPlan attn = plan_forward(gpt2_attention_config(c));
  const double block_raw = raw * (12.0 * d * d + 13.0 * d);
  const double weights = plan_heap_bytes(attn, Shape{1, num_tokens, c.n_embd}, false) + 4.0 * (packed(d, 4 * d) + packed(4 * d, d) + 9.0 * d);
  const double loading = 4.0 * 5.0 * d * d;
  const double acts = 4.0 * (2.0 * T * d + 4.0 * T * d);
  const double block = block_raw + weights + loading + acts;
  // A logits step: a chunk of wte rows, raw and as float32.
  const double logits = (raw + 4.0) * static_cast<double>(std::min<int64_t>(kGpt2LogitsChunkRows, c.vocab_size)) * d;
  // The top tokens: an int64 index of every vocabulary row (top_tokens), then the logits' copy out.
  const double top = 8.0 * V;
  // Every layer's results as the caller holds them (their JS copies, all kept to the end of the run).
  const double S = static_cast<double>(std::min<int64_t>(num_tokens, kGpt2ThumbnailSize)), F = static_cast<double>(std::min<int64_t>(num_tokens, kGpt2FirstTokens));
  const double per_layer = attention == Gpt2Attention::Full ? 4.0 * (T * d + H * T * T) : 4.0 * H * (S * S + F * F);
  const double results = static_cast<double>(c.n_layer) * per_layer + 4.0 * V;  // and the last position's logits
  return kept + std::max({embed, block, logits, top}) + results;
}

Gpt2Run::Gpt2Run(const SafetensorsHeader& header, const Gpt2Config& config, std::vector<int64_t> token_ids, double memory_budget_bytes, Gpt2Attention attention,
                 std::optional<int64_t> input_of)
    : header_(&header), config_(config), ids_(std::move(token_ids)), attention_(attention), input_of_(input_of), blocks_(input_of.value_or(config.n_layer)) {
  if (ids_.empty()) throw AttentionError("input_empty", "tokens", "no tokens to run the model on", "Type at least one word.");
  for (const int64_t id : ids_) {
    if (id < 0 || id >= config_.vocab_size) {
      throw AttentionError("checkpoint_token", "tokens", "token id " + std::to_string(id) + " is outside the vocabulary (0 to " + std::to_string(config_.vocab_size - 1) + ")",
                           "Tokenize with the checkpoint's own tokenizer.");
    }
  }
  if (num_tokens() > config_.n_ctx) {
    throw AttentionError("context_too_short", "context_length", "num_tokens " + std::to_string(num_tokens()) + " > n_ctx " + std::to_string(config_.n_ctx) + " (wpe.weight rows)",
                         "Use at most " + std::to_string(config_.n_ctx) + " tokens.");
  }
  if (input_of_ && (*input_of_ < 0 || *input_of_ >= config_.n_layer)) {
    throw AttentionError("checkpoint_layer", "layer", "layer " + std::to_string(*input_of_) + " is not in the file (layers 0 to " + std::to_string(config_.n_layer - 1) + ")", "");
  }
  const double bytes = gpt2_run_bytes(config_, num_tokens(), attention_);
  if (bytes > memory_budget_bytes) {
    const bool thumbnails_fit = attention_ == Gpt2Attention::Full && gpt2_run_bytes(config_, num_tokens(), Gpt2Attention::Thumbnails) <= memory_budget_bytes;
    throw AttentionError("too_large", "tokens",
                         "running the model on " + std::to_string(num_tokens()) + " tokens needs about " + std::to_string(static_cast<long long>(bytes / 1048576.0)) +
                             " MiB, over the " + std::to_string(static_cast<long long>(memory_budget_bytes / 1048576.0)) + " MiB this page allows",
                         thumbnails_fit ? "Use fewer tokens, or {attention: \"thumbnails\"}: every layer's whole attention weights are what does not fit." : "Use fewer tokens.");
  }
}

std::vector<ByteRead> Gpt2Run::reads() const {
  switch (phase_) {
    case Phase::Embed:
      return gpt2_embedding_reads(*header_, config_, ids_, 0);
    case Phase::Block:
      return gpt2_block_reads(*header_, config_, layer_);
    case Phase::Input: {
      std::vector<ByteRead> reads = gpt2_block_reads(*header_, config_, layer_);
      reads.resize(2);  // ln_1.weight, ln_1.bias
      return reads;
    }
    case Phase::Final:
      return gpt2_final_reads(*header_, config_);
    case Phase::Logits:
      return {gpt2_logits_read(*header_, config_, chunk_)};
    case Phase::Done:
      break;
  }
  return {};
}

Gpt2Run::Step Gpt2Run::step(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  switch (phase_) {
    case Phase::Embed:
      return embed(bytes);
    case Phase::Block:
      return block(bytes);
    case Phase::Input:
      return attention_input(bytes);
    case Phase::Final:
      return final_norm(bytes);
    case Phase::Logits:
      return logits_rows(bytes);
    case Phase::Done:
      break;
  }
  throw AttentionError("not_in_progress", "", "the run is finished", "Start another with model.run.");
}

Gpt2Run::Phase Gpt2Run::after_blocks() const { return layer_ < blocks_ ? Phase::Block : input_of_ ? Phase::Input : Phase::Final; }

Gpt2Run::Step Gpt2Run::embed(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  x_ = gpt2_embedding(*header_, config_, ids_, 0, bytes);  // (1, num_tokens, d) = wte[ids] + wpe[:T]
  check_gpt2_stage(x_.data.data(), x_.data.size(), config_.n_embd, -1, "embedding", "wte[ids] + wpe[:T]");
  phase_ = after_blocks();
  return {"embedding", -1, 1, blocks_ + 2, std::nullopt, std::nullopt};
}

Gpt2Run::Step Gpt2Run::block(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const int64_t layer = layer_;
  Layer out;
  {
    const Gpt2BlockWeights w = load_gpt2_block(*header_, config_, layer, bytes);  // released at the end of the block
    if (attention_ == Gpt2Attention::Full) out.input = x_;
    Gpt2BlockOptions options;
    options.layer = layer;
    options.attn_weights = &out.attn_weights;
    options.pool = pool_;
    run_gpt2_block(w, x_, options);
  }
  if (attention_ == Gpt2Attention::Thumbnails) {
    out.thumbnail = attention_thumbnail(out.attn_weights, kGpt2ThumbnailSize);
    out.first_tokens = attention_first_tokens(out.attn_weights, kGpt2FirstTokens);
    out.attn_weights = Tensor();
  }
  ++layer_;
  phase_ = after_blocks();
  return {"block", layer, layer + 2, blocks_ + 2, std::move(out), std::nullopt};
}

Gpt2Run::Step Gpt2Run::attention_input(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const std::vector<ByteRead> r = reads();
  Tensor h = x_;
  gpt2_layer_norm(h, gpt2_values(r[0], bytes), gpt2_values(r[1], bytes));  // the block's ln_1
  check_gpt2_stage(h.data.data(), h.data.size(), config_.n_embd, layer_, "ln_1", "ln_1(x)");
  phase_ = Phase::Done;
  return {"input", layer_, blocks_ + 2, blocks_ + 2, std::nullopt, std::move(h)};
}

Gpt2Run::Step Gpt2Run::final_norm(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const std::vector<ByteRead> r = reads();
  const int64_t d = config_.n_embd;
  last_.assign(x_.data.end() - d, x_.data.end());  // the last position only: the logits are wanted there
  ops::layer_norm_rows(last_.data(), 1, d, gpt2_values(r[0], bytes).data(), gpt2_values(r[1], bytes).data(), 1e-5f);
  check_gpt2_stage(last_.data(), last_.size(), d, -1, "ln_f", "ln_f(x)[-1]");
  if (config_.head_bias) head_bias_ = gpt2_values(r[2], bytes);  // a classifier's out_head.bias (n_out)
  logits_.assign(static_cast<size_t>(config_.n_out), 0.0f);
  phase_ = Phase::Logits;
  chunk_ = 0;
  return {"", -1, layer_ + 1, blocks_ + 2, std::nullopt, std::nullopt};
}

Gpt2Run::Step Gpt2Run::logits_rows(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const ByteRead r = reads().front();
  const int64_t d = config_.n_embd, n = r.entry.shape[0], begin = chunk_ * kGpt2LogitsChunkRows;
  // logits[begin:end] = ln_f(x)[-1] @ head[begin:end]^T (+ its bias), the head (GPT-2's tied wte, or out_head), on the product kernel
  ops::PackedMatrix rows;
  {
    const std::vector<float> values = gpt2_values(r, bytes);  // (n, d)
    rows = ops::pack_b(values.data(), d, n, true);
  }
  ops::gemm(pool_, last_.data(), 1, d, rows, config_.head_bias ? head_bias_.data() + begin : nullptr, logits_.data() + begin);
  // the earlier rows are finite (each chunk is checked as it comes), so the first bad one is named by its token id
  if (!first_non_finite(logits_.data() + begin, static_cast<size_t>(n), Shape{n}).empty())
    check_gpt2_stage(logits_.data(), static_cast<size_t>(begin + n), 1, -1, "logits", "ln_f(x)[-1] @ wte^T");
  if (++chunk_ < gpt2_logits_chunks(config_)) return {"", -1, layer_ + 1, blocks_ + 2, std::nullopt, std::nullopt};
  phase_ = Phase::Done;
  return {"logits", -1, blocks_ + 2, blocks_ + 2, std::nullopt, std::nullopt};
}

const std::vector<float>& Gpt2Run::last_logits() const {
  if (!finished() || input_of_) throw AttentionError("checkpoint_layer", "", "the logits are not complete: every chunk of wte must be read", "");
  return logits_;
}

std::vector<std::pair<int64_t, double>> Gpt2Run::top_tokens(int k) const {
  const std::vector<float>& z = last_logits();
  const double top = *std::max_element(z.begin(), z.end());
  double sum = 0.0;
  for (const float v : z) sum += std::exp(static_cast<double>(v) - top);
  std::vector<int64_t> order(z.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t n = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(), [&](int64_t a, int64_t b) {
    return z[static_cast<size_t>(a)] > z[static_cast<size_t>(b)] || (z[static_cast<size_t>(a)] == z[static_cast<size_t>(b)] && a < b);
  });
  std::vector<std::pair<int64_t, double>> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(order[i], std::exp(static_cast<double>(z[static_cast<size_t>(order[i])]) - top) / sum);
  return out;
}

}  // namespace attention_lab
