// Planning a GPT-2 attention layer's load from a safetensors header alone: which layer keys the file
// has, where each size comes from (report.sources), the checks a module from it must pass, and which
// tensors to read; nothing is read or allocated before the plan says the load fits.
#include <algorithm>
#include <cmath>
#include <set>

#include "attention_lab/checkpoint.hpp"
#include "attention_lab/gpt2_sizes.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab {

namespace {

std::string shape_text(const Shape& s) { return shape_string(s); }

/// "transformer.h.11.attn.c_attn.weight" -> prefix "transformer.", layer 11.
bool parse_layer_key(const std::string& key, const std::string& suffix, std::string& prefix, int64_t& layer) {
  if (key.size() <= suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  const std::string head = key.substr(0, key.size() - suffix.size());  // "transformer.h.11"
  const size_t h = head.rfind("h.");
  if (h == std::string::npos || (h > 0 && head[h - 1] != '.')) return false;
  const std::string digits = head.substr(h + 2);
  if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  // "h.00." is not layer 0: its keys would not be found again under "h.0." (found by fuzz_checkpoint_header).
  if (digits.size() > 1 && digits[0] == '0') return false;
  prefix = head.substr(0, h);
  layer = std::stoll(digits);
  return true;
}

std::string list_layers(const std::set<int64_t>& layers) {
  if (layers.empty()) return "none";
  const int64_t lo = *layers.begin(), hi = *layers.rbegin();
  if (static_cast<int64_t>(layers.size()) == hi - lo + 1) return lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
  std::string s;
  for (int64_t l : layers) s += (s.empty() ? "" : ", ") + std::to_string(l);
  return s;
}

/// The layers the file has (keys h.{i}.attn.c_attn.weight under one prefix), into plan.prefix and the
/// report; the chosen layer must be one of them.
void find_layers(const SafetensorsHeader& header, int64_t chosen, CheckpointPlan& plan) {
  CheckpointReport& report = plan.report;
  std::set<int64_t> layers;
  std::set<std::string> prefixes;
  for (const auto& e : header.entries) {
    std::string prefix;
    int64_t layer = 0;
    if (parse_layer_key(e.key, ".attn.c_attn.weight", prefix, layer)) {
      layers.insert(layer);
      prefixes.insert(prefix);
    }
  }
  if (layers.empty()) {
    throw AttentionError("checkpoint_missing_key", "", "no GPT-2 attention weights in this file: no key like 'h.0.attn.c_attn.weight' (or 'transformer.h.0.attn.c_attn.weight')",
                         "Choose a GPT-2 checkpoint (Hugging Face names: h.{i}.attn.c_attn.weight, c_attn.bias, c_proj.weight, c_proj.bias).");
  }
  if (prefixes.size() > 1) {
    throw AttentionError("checkpoint_bad_header", "", "the file mixes key prefixes ('" + *prefixes.begin() + "' and '" + *prefixes.rbegin() + "')",
                         "Use a checkpoint of one model.");
  }
  plan.prefix = *prefixes.begin();
  report.max_layer = *layers.rbegin();
  report.sources["layers"] = "layers " + list_layers(layers) + " (" + std::to_string(layers.size()) + (layers.size() == 1 ? " layer)" : " layers)");
  if (const SafetensorsEntry* wte = header.find(plan.prefix + "wte.weight"); wte != nullptr && wte->shape.size() == 2) {
    report.sources["vocab"] = plan.prefix + "wte.weight rows (" + std::to_string(wte->shape[0]) + " tokens)";
    report.gpt2_vocab = wte->shape[0] == kGpt2Vocab;
  }
  report.sources["prefix"] = plan.prefix.empty() ? "keys without a prefix (GPT2Model)" : "keys with the prefix '" + plan.prefix + "' (GPT2LMHeadModel)";
  if (chosen < 0 || layers.count(chosen) == 0) {
    throw AttentionError("checkpoint_layer", "layer", "there is no layer " + std::to_string(chosen) + " in this file (layers " + list_layers(layers) + ")",
                         "Choose a layer from " + list_layers(layers) + ".");
  }
}

/// One layer's attention tensors: c_attn (q/k/v packed, Conv1D's (d, 3d)) and c_proj, keys and entries
/// (the biases may be absent), and the width d they give.
struct LayerKeys {
  std::string base;  // "transformer.h.11.attn."
  std::string k_attn_w, k_attn_b, k_proj_w, k_proj_b;
  const SafetensorsEntry *attn_w = nullptr, *attn_b = nullptr, *proj_w = nullptr, *proj_b = nullptr;
  int64_t d = 0;
};

/// The chosen layer's tensors, each present where required and shaped for one width d.
LayerKeys layer_keys(const SafetensorsHeader& header, const std::string& prefix, int64_t layer, CheckpointReport& report) {
  LayerKeys k;
  k.base = prefix + "h." + std::to_string(layer) + ".attn.";
  k.k_attn_w = k.base + "c_attn.weight", k.k_attn_b = k.base + "c_attn.bias", k.k_proj_w = k.base + "c_proj.weight", k.k_proj_b = k.base + "c_proj.bias";
  k.attn_w = header.find(k.k_attn_w);
  k.attn_b = header.find(k.k_attn_b);
  k.proj_w = header.find(k.k_proj_w);
  k.proj_b = header.find(k.k_proj_b);
  if (k.attn_w == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + k.k_attn_w, "Choose a GPT-2 checkpoint.");
  for (const auto& [key, entry] : {std::pair{k.k_proj_w, k.proj_w}, std::pair{k.k_proj_b, k.proj_b}}) {
    if (entry == nullptr) {
      throw AttentionError("checkpoint_missing_key", "", "the file has " + k.k_attn_w + " but no " + key,
                           "The checkpoint is incomplete; every GPT-2 layer has c_proj.weight and c_proj.bias.");
    }
  }
  if (k.attn_w->shape.size() != 2 || k.attn_w->shape[1] != 3 * k.attn_w->shape[0] || k.attn_w->shape[0] <= 0) {
    throw AttentionError(
        "checkpoint_shape", "", k.k_attn_w + " has shape " + shape_text(k.attn_w->shape) + "; GPT-2's Conv1D layout is (d, 3d)",
        k.attn_w->shape.size() == 2 && k.attn_w->shape[0] == 3 * k.attn_w->shape[1] ? "The shape is exactly reversed: it looks transposed (a Linear layout, not Conv1D)." : "");
  }
  const int64_t d = k.d = k.attn_w->shape[0];
  report.sources["d"] = k.k_attn_w + " " + shape_text(k.attn_w->shape) + ": d = " + std::to_string(d);
  const auto expect = [&](const SafetensorsEntry* e, const std::string& key, const Shape& shape) {
    if (e != nullptr && e->shape != shape) {
      throw AttentionError("checkpoint_shape", "", key + " has shape " + shape_text(e->shape) + ", expected " + shape_text(shape) + " for d = " + std::to_string(d), "");
    }
  };
  expect(k.attn_b, k.k_attn_b, {3 * d});
  expect(k.proj_w, k.k_proj_w, {d, d});
  expect(k.proj_b, k.k_proj_b, {d});
  return k;
}

/// num_heads: the target's, else the one rule of the whole model (option, __metadata__ n_head, GPT-2's preset).
int64_t plan_num_heads(const SafetensorsHeader& header, int64_t d, const CheckpointOptions& options, CheckpointReport& report) {
  int64_t num_heads = 0;
  if (options.into) {
    num_heads = options.into->num_heads;
    report.sources["num_heads"] = "the target module (num_heads = " + std::to_string(num_heads) + ")";
    if (num_heads <= 0 || d % num_heads != 0)
      throw AttentionError("checkpoint_num_heads", "num_heads", "num_heads " + std::to_string(num_heads) + " (the target module) does not divide n_embd " + std::to_string(d), "");
  } else {
    const HeadCount heads = gpt2_head_count(header, d, options.num_heads);
    num_heads = heads.n_head;
    report.sources["num_heads"] = heads.source;
  }
  return num_heads;
}

/// context_length: the target's, else wpe rows, else the mask buffer, else the option.
int64_t plan_context_length(const SafetensorsHeader& header, const std::string& prefix, const std::string& base, const CheckpointOptions& options, CheckpointReport& report) {
  int64_t context_length = 0;
  const SafetensorsEntry* wpe = header.find(prefix + "wpe.weight");
  const SafetensorsEntry* mask = header.find(base + "bias");
  if (options.into) {
    context_length = options.into->context_length;
    report.sources["context_length"] = "the target module (context_length = " + std::to_string(context_length) + ")";
  } else if (wpe != nullptr && wpe->shape.size() == 2) {
    context_length = wpe->shape[0];
    report.sources["context_length"] = prefix + "wpe.weight rows (" + std::to_string(context_length) + ")";
  } else if (mask != nullptr && mask->shape.size() == 4) {
    context_length = mask->shape[3];
    report.sources["context_length"] = base + "bias (the causal mask buffer, " + std::to_string(context_length) + " x " + std::to_string(context_length) + ")";
  } else if (options.context_length) {
    context_length = *options.context_length;
    report.sources["context_length"] = "the context_length option (" + std::to_string(context_length) + ")";
  } else {
    throw AttentionError("checkpoint_context_length", "context_length", "the file has neither wpe.weight nor a mask buffer to give context_length",
                         "Pass context_length (GPT-2 uses 1024).");
  }
  if (context_length <= 0) throw AttentionError("checkpoint_context_length", "context_length", "context_length must be at least 1", "");
  return context_length;
}

/// A target module given (load into it): it must be the checkpoint class, d wide, with q/k/v biases
/// when the file has them.
void check_target(const ModuleConfig& t, const LayerKeys& k) {
  const int64_t d = k.d;
  std::vector<std::string> problems;
  if (!t.recipe().loads_checkpoints) problems.push_back("the target is " + t.class_name() + ", not " + checkpoint_class().name);
  if (t.d_in != d || t.d_out != d)
    problems.push_back("the target has d_in = " + std::to_string(t.d_in) + ", d_out = " + std::to_string(t.d_out) + " but " + k.k_attn_w + " " + shape_text(k.attn_w->shape) +
                       " gives d = " + std::to_string(d));
  if (k.attn_b != nullptr && !t.qkv_bias)
    problems.push_back("the file has q/k/v biases (" + k.k_attn_b + ", " + std::to_string(3 * d) + " values) but the target has qkv_bias=False: they would be dropped");
  if (!problems.empty()) {
    std::string message;
    for (const auto& p : problems) message += (message.empty() ? "" : "; ") + p;
    throw AttentionError("checkpoint_config_mismatch", k.attn_b != nullptr && !t.qkv_bias ? "qkv_bias" : "d_out", message,
                         k.attn_b != nullptr && !t.qkv_bias ? "GPT-2 needs MultiHeadAttention(..., qkv_bias=True)."
                                                            : "Build the target as MultiHeadAttention(d, d, context_length, 0.0, num_heads, qkv_bias=True).");
  }
}

/// The module this file gives must pass every check `create` applies (a width over the memory budget,
/// a context_length of 2**40 from a lying wpe.weight), and loading must fit the budget too: the raw
/// bytes of the tensors read, their float32 values and the module, all held at once.
void check_plan_fits(const ModuleConfig& c, const LayerKeys& k, const CheckpointOptions& options, const CheckpointReport& report) {
  CheckOptions check;
  check.memory_budget_bytes = options.memory_budget_bytes;
  for (const Diagnostic& problem : check_config(c.class_name(), c.slots(), check)) {
    if (problem.severity != Severity::Error) continue;
    const std::string slot = problem.slots.empty() ? "" : problem.slots.front();
    const std::string from = slot.empty() || report.sources.count(slot) == 0 ? "" : " (" + slot + " from " + report.sources.at(slot) + ")";
    throw AttentionError(problem.code, slot, "this file gives " + c.python_call() + from + ": " + problem.message,
                         problem.hint.empty() ? "Check the file: a real GPT-2 checkpoint gives a module that create() accepts." : problem.hint);
  }
  double read_bytes = 0, values = 0;
  for (const SafetensorsEntry* e : {k.attn_w, k.attn_b, k.proj_w, k.proj_b}) {
    if (e == nullptr) continue;
    read_bytes += static_cast<double>(e->end - e->begin);
    values += static_cast<double>(numel_of(e->shape));
  }
  const double need = estimate_bytes(c, std::nullopt) + read_bytes + 4.0 * values;
  if (need > options.memory_budget_bytes) {
    throw AttentionError("too_large", "d_out",
                         "loading layer " + std::to_string(options.layer) + " (d = " + std::to_string(k.d) + ") needs about " + with_commas(need) + " bytes (" +
                             with_commas(std::ceil(need / 1048576.0)) + " MiB), over the " + with_commas(options.memory_budget_bytes / 1048576.0) + " MiB budget",
                         "This checkpoint is too wide for the page; GPT-2 XL (d = " + std::to_string(std::end(kGpt2Sizes)[-1].n_embd) + ") fits.");
  }
}

/// The tensors to read, and the report's used, transposed (Conv1D keeps (in, out)) and missing keys.
void list_used(const LayerKeys& k, CheckpointPlan& plan) {
  CheckpointReport& report = plan.report;
  plan.needed.push_back(*k.attn_w);
  report.used.push_back(k.k_attn_w);
  report.transposed.push_back(k.k_attn_w);
  if (k.attn_b != nullptr) {
    plan.needed.push_back(*k.attn_b);
    report.used.push_back(k.k_attn_b);
  } else {
    report.missing.push_back(k.k_attn_b);
  }
  plan.needed.push_back(*k.proj_w);
  plan.needed.push_back(*k.proj_b);
  report.used.push_back(k.k_proj_w);
  report.used.push_back(k.k_proj_b);
  report.transposed.push_back(k.k_proj_w);
}

/// Every other key of the file with why it is not read (the first kCheckpointIgnoredListed of them).
void list_ignored(const SafetensorsHeader& header, int64_t chosen, CheckpointPlan& plan) {
  CheckpointReport& report = plan.report;
  for (const auto& e : header.entries) {
    if (std::find(report.used.begin(), report.used.end(), e.key) != report.used.end()) continue;
    if (++report.ignored_count > kCheckpointIgnoredListed) continue;
    std::string prefix;
    int64_t layer = 0;
    std::string reason;
    if (parse_layer_key(e.key, ".attn.bias", prefix, layer)) {
      reason = "causal mask buffer " + shape_text(e.shape) + ", not the q/k/v bias (that is c_attn.bias); the mask is rebuilt from context_length";
    } else if (parse_layer_key(e.key, ".attn.masked_bias", prefix, layer)) {
      reason = "the mask's fill value buffer, not a weight";
    } else if (e.key == plan.prefix + "wpe.weight") {
      reason = "position embeddings (not attention); its " + std::to_string(e.shape.empty() ? 0 : e.shape[0]) + " rows give context_length";
    } else if (e.key == plan.prefix + "wte.weight") {
      reason = "token embeddings (not attention)";
    } else if (e.key.rfind(plan.prefix + "h.", 0) == 0) {
      const std::string rest = e.key.substr(plan.prefix.size() + 2);
      const std::string layer_text = rest.substr(0, rest.find('.'));
      reason = layer_text == std::to_string(chosen) ? "not part of attention (layer norm or MLP)" : "layer " + layer_text + " (loading layer " + std::to_string(chosen) + ")";
    } else {
      reason = "not part of attention";
    }
    report.ignored.push_back({e.key, reason});
  }
}

}  // namespace

CheckpointPlan plan_gpt2_attention(const SafetensorsHeader& header, const CheckpointOptions& options) {
  CheckpointPlan plan;
  find_layers(header, options.layer, plan);
  const LayerKeys k = layer_keys(header, plan.prefix, options.layer, plan.report);
  const int64_t num_heads = plan_num_heads(header, k.d, options, plan.report);
  const int64_t context_length = plan_context_length(header, plan.prefix, k.base, options, plan.report);
  if (options.into) check_target(*options.into, k);

  ModuleConfig& c = plan.config;
  c.spec = &checkpoint_class();
  c.d_in = k.d;
  c.d_out = k.d;
  c.context_length = context_length;
  c.dropout = options.into ? options.into->dropout : 0.0;
  c.num_heads = num_heads;
  c.qkv_bias = options.into ? options.into->qkv_bias : k.attn_b != nullptr;
  check_plan_fits(c, k, options, plan.report);
  list_used(k, plan);
  list_ignored(header, options.layer, plan);
  return plan;
}

}  // namespace attention_lab
