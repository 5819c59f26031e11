// Session's GPT-2 files: a model opened from a checkpoint file's header, and on it one run (model.run,
// model.attentionInput) or one generation (model.generate) at a time, each step by step in one
// protocol: gpt2_reads names the bytes the next step needs, the caller reads them, and the step
// (gpt2_run_step, gpt2_generate_step) runs on them, until it is finished.
#include <memory>

#include "session_detail.hpp"

namespace attention_lab {

using namespace session_detail;

namespace {
/// The k most likely next tokens a run ends with (as each generated token's `top`).
constexpr int kRunTopTokens = 5;
}  // namespace

OpenedModel Session::gpt2_open(uint32_t file, const NumberOption& num_heads) {
  auto f = std::make_unique<Gpt2File>();
  f->header = objects_->header(file);  // shared, not copied
  f->config = gpt2_config(*f->header, whole_option(num_heads, "num_heads", 1, "checkpoint_num_heads", 12));
  OpenedModel out{objects_->next++, f->config};
  objects_->gpt2[out.handle] = std::move(f);
  return out;
}

double Session::gpt2_estimate(uint32_t model, double num_tokens, const std::string& attention) const {
  const Gpt2Config& c = objects_->model(model).config;
  const int64_t T = whole_number(num_tokens, "num_tokens", 1, static_cast<double>(c.n_ctx), "run_option",
                                 "model.estimateBytes(num_tokens) takes the tokens of a run: 1 to n_ctx (" + std::to_string(c.n_ctx) + ", the rows of wpe.weight).");
  return gpt2_run_bytes(c, T, gpt2_attention_of(attention));
}

bool Session::gpt2_run(uint32_t model, const std::vector<double>& ids, const std::string& attention, const NumberOption& input_of, double budget) {
  Gpt2File& f = objects_->model(model);
  const Gpt2Attention mode = gpt2_attention_of(attention);
  const std::optional<int64_t> layer = whole_option(input_of, "layer", 0, "checkpoint_layer", 0);
  f.run.reset();
  f.generation.reset();
  f.run = std::make_unique<Gpt2Run>(*f.header, f.config, ids_from(ids), budget > 0 ? budget : kDefaultMemoryBudgetBytes, mode, layer);
  f.run->use_pool(objects_->pool.get());
  return true;
}

std::vector<FileRead> Session::gpt2_reads(uint32_t model) const {
  const Gpt2File& f = objects_->model(model);
  if (f.run) return file_reads(*f.header, f.run->reads());
  if (f.generation) return file_reads(*f.header, f.generation->reads());
  throw AttentionError("not_in_progress", "", "no run or generation of this model is in progress", "Start one with model.run or model.generate.");
}

RunStepResult Session::gpt2_run_step(uint32_t model, const std::map<std::string, std::vector<uint8_t>>& buffers) {
  Gpt2File& f = objects_->model(model);
  if (!f.run) throw AttentionError("not_in_progress", "", "no run of this model is in progress", "Start one with model.run.");
  Gpt2Run& run = *f.run;
  Gpt2Run::Step s = run.step(bytes_of(run.reads(), buffers));
  RunStepResult out;
  out.step = s.piece;
  if (s.layer >= 0) out.layer = static_cast<double>(s.layer);
  out.done = static_cast<double>(s.done);
  out.total = static_cast<double>(s.total);
  out.block = std::move(s.block);
  out.input = std::move(s.input);
  out.finished = run.finished();
  if (out.finished && !out.input) {
    Gpt2Result r;
    // the top tokens first (their index of every row is freed before the logits are copied: gpt2_run_bytes counts one at a time)
    for (const auto& [id, p] : run.top_tokens(kRunTopTokens)) r.next_tokens.push_back({static_cast<double>(id), p});
    r.last_logits = run.last_logits();
    out.logits = std::move(r);
  }
  if (out.finished) f.run.reset();
  return out;
}

bool Session::gpt2_stop(uint32_t model) {
  const auto it = objects_->gpt2.find(model);
  if (it != objects_->gpt2.end()) {
    it->second->run.reset();
    it->second->generation.reset();
  }
  return true;
}

namespace {
/// A boolean option: its default when absent; AttentionError generate_option naming `key` otherwise.
std::optional<bool> bool_option(const NumberOption& v, const char* key) {
  if (!v.given) return std::nullopt;
  if (!v.boolean)
    throw AttentionError("generate_option", key, std::string(key) + " must be true or false, got " + given_as(v),
                         "Pass {" + std::string(key) + ": true} or {" + key + ": false}, or leave " + key + " out.");
  return v.value != 0;
}
}  // namespace

GenerateStart Session::gpt2_generate(uint32_t model, const std::vector<double>& ids, const GenerateOptionsInput& in, double budget) {
  Gpt2File& f = objects_->model(model);
  f.run.reset();
  f.generation.reset();
  Gpt2GenerateOptions o;
  const auto maybe = whole_option(in.max_new_tokens, "maxNewTokens", 1, "generate_option", 20);
  if (!maybe) throw AttentionError("generate_option", "maxNewTokens", "maxNewTokens is required: how many tokens to generate", "For example {maxNewTokens: 20}.");
  o.max_new_tokens = *maybe;
  if (in.temperature.given) {
    if (!in.temperature.number)
      throw AttentionError("generate_option", "temperature", "temperature must be a number, got " + given_as(in.temperature), "For example {temperature: 1.0}.");
    o.temperature = in.temperature.value;
  }
  o.top_k = whole_option(in.top_k, "topK", 1, "generate_option", 50);
  o.eos_id = whole_option(in.eos_id, "eosId", 0, "generate_option", 50256);
  o.cache = bool_option(in.cache, "cache").value_or(true);
  o.resident = bool_option(in.resident, "resident");
  o.window = whole_option(in.window, "window", 1, "generate_option", 1024);
  o.attention = bool_option(in.attention, "attention").value_or(false);
  f.generation = std::make_unique<Gpt2Generation>(*f.header, f.config, ids_from(ids), o, budget > 0 ? budget : kDefaultMemoryBudgetBytes);
  f.generation->use_pool(objects_->pool.get());
  return {f.generation->resident(), f.generation->estimate_bytes()};
}

GenerateStepResult Session::gpt2_generate_step(uint32_t model, uint32_t generator, const std::map<std::string, std::vector<uint8_t>>& buffers) {
  Gpt2File& f = objects_->model(model);
  if (!f.generation) throw AttentionError("not_in_progress", "", "no generation is in progress", "Start one with model.generate.");
  Gpt2Generation& g = *f.generation;
  TorchGenerator* gen = generator != 0 ? &objects_->generator(generator) : nullptr;
  GenerateStepResult out;
  if (std::optional<Gpt2Step> s = g.step(bytes_of(g.reads(), buffers), gen)) {
    GeneratedToken t{static_cast<double>(s->token), s->prob, {}, static_cast<double>(s->cache_tokens), s->cache_bytes, {}};
    for (const auto& [id, p] : s->top) t.top.push_back({static_cast<double>(id), p});
    if (s->attention_keys > 0) t.attention = Tensor{{f.config.n_layer, f.config.n_head, s->attention_keys}, std::move(s->attention)};
    out.token = std::move(t);
  }
  out.finished = g.finished();
  out.eos = g.stopped_by_eos();
  if (out.finished) f.generation.reset();
  return out;
}

}  // namespace attention_lab
