// Planning a GPT-2 attention layer's load from a safetensors header alone, in the layout its keys follow
// (checkpoint_layout.hpp: Hugging Face's c_attn / c_proj, or the book's W_query ... out_proj): which layer
// keys the file has, where each size comes from (report.sources), the checks a module from it must pass,
// and which tensors to read; nothing is read or allocated before the plan says the load fits.
#include <algorithm>
#include <cmath>
#include <set>

#include "attention_lab/checkpoint.hpp"
#include "attention_lab/checkpoint_layout.hpp"
#include "attention_lab/gpt2_sizes.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab {

namespace {

std::string shape_text(const Shape& s) { return shape_string(s); }

/// "transformer.h.11.attn.c_attn.weight" with stem "h." -> prefix "transformer.", layer 11.
bool parse_layer_key(const std::string& key, const std::string& stem, const std::string& suffix, std::string& prefix, int64_t& layer) {
  if (key.size() <= suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  const std::string head = key.substr(0, key.size() - suffix.size());  // "transformer.h.11"
  const size_t h = head.rfind(stem);
  if (h == std::string::npos || (h > 0 && head[h - 1] != '.')) return false;
  const std::string digits = head.substr(h + stem.size());
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

/// The row of a layout that gives W_query.weight: what marks a layer (c_attn.weight, att.W_query.weight).
const LayoutTensor& query_row(const CheckpointLayout& layout) { return *layout_row(layout, "att.W_query.weight", true); }

/// The layers the file has (keys of query_row under one prefix, in one layout), into plan.layout,
/// plan.prefix and the report; the chosen layer must be one of them.
void find_layers(const SafetensorsHeader& header, int64_t chosen, CheckpointPlan& plan) {
  CheckpointReport& report = plan.report;
  std::set<int64_t> layers;
  std::set<std::string> prefixes;
  std::set<const CheckpointLayout*> layouts;
  for (const CheckpointLayout& layout : checkpoint_layouts()) {
    const std::string suffix = std::string(".") + query_row(layout).key;
    for (const auto& e : header.entries) {
      std::string prefix;
      int64_t layer = 0;
      if (parse_layer_key(e.key, layout.block_stem, suffix, prefix, layer)) {
        layers.insert(layer);
        prefixes.insert(prefix);
        layouts.insert(&layout);
      }
    }
  }
  if (layers.empty()) {
    throw AttentionError(
        "checkpoint_missing_key", "",
        "no GPT-2 attention weights in this file: no key like 'h.0.attn.c_attn.weight' (or 'transformer.h.0.attn.c_attn.weight', or the book's 'trf_blocks.0.att.W_query.weight')",
        "Choose a GPT-2 checkpoint (Hugging Face names: h.{i}.attn.c_attn.weight, c_attn.bias, c_proj.weight, c_proj.bias; the book's GPTModel: trf_blocks.{i}.att.W_query.weight "
        "...).");
  }
  if (layouts.size() > 1)
    throw AttentionError("checkpoint_bad_header", "", "the file mixes Hugging Face's keys (c_attn) and the book's (W_query)", "Use a checkpoint of one model.");
  if (prefixes.size() > 1) {
    throw AttentionError("checkpoint_bad_header", "", "the file mixes key prefixes ('" + *prefixes.begin() + "' and '" + *prefixes.rbegin() + "')",
                         "Use a checkpoint of one model.");
  }
  plan.layout = *layouts.begin();
  plan.prefix = *prefixes.begin();
  const CheckpointLayout& layout = *plan.layout;
  report.layout = layout.id;
  report.layout_name = layout.name;
  report.max_layer = *layers.rbegin();
  report.sources["layers"] = "layers " + list_layers(layers) + " (" + std::to_string(layers.size()) + (layers.size() == 1 ? " layer)" : " layers)");
  const std::string wte_key = plan.prefix + layout.model.front().key;
  if (const SafetensorsEntry* wte = header.find(wte_key); wte != nullptr && wte->shape.size() == 2) {
    report.sources["vocab"] = wte_key + " rows (" + std::to_string(wte->shape[0]) + " tokens)";
    report.gpt2_vocab = wte->shape[0] == kGpt2Vocab;
  }
  if (layout.prefixes.empty())
    report.sources["prefix"] =
        plan.prefix.empty() ? std::string("keys without a prefix (") + layout.name + "'s state_dict)" : "keys with the prefix '" + plan.prefix + "' (" + layout.name + ")";
  else
    report.sources["prefix"] = plan.prefix.empty() ? "keys without a prefix (GPT2Model)" : "keys with the prefix '" + plan.prefix + "' (GPT2LMHeadModel)";
  if (chosen < 0 || layers.count(chosen) == 0) {
    throw AttentionError("checkpoint_layer", "layer", "there is no layer " + std::to_string(chosen) + " in this file (layers " + list_layers(layers) + ")",
                         "Choose a layer from " + list_layers(layers) + ".");
  }
}

/// One layer's attention tensors: the layout's rows that give the book's att.* weights, each with its key
/// and entry (the q/k/v biases may be absent), and the width d they give.
struct LayerKeys {
  std::string base;  // "transformer.h.11." / "module.trf_blocks.11."
  std::vector<const LayoutTensor*> rows;
  std::vector<std::string> keys;
  std::vector<const SafetensorsEntry*> entries;
  const SafetensorsEntry* query = nullptr;  // c_attn.weight / W_query.weight
  std::string query_key;
  bool qkv_bias = false;
  int64_t d = 0;
};

/// A row that gives q/k/v biases (c_attn.bias, W_query.bias ...): optional for one layer.
bool gives_qkv_bias(const LayoutTensor& row) {
  const std::string t = row.targets.front();
  return t == "att.W_query.bias" || t == "att.W_key.bias" || t == "att.W_value.bias";
}

/// d from the query row: c_attn.weight is Conv1D's (d, 3d), the book's W_query.weight nn.Linear's (d, d).
int64_t width_of(const LayoutTensor& row, const SafetensorsEntry& e, const std::string& key) {
  const Shape& s = e.shape;
  const int64_t parts = row.shape[1];  // 3 for c_attn, 1 for W_query
  if (s.size() != 2 || s[0] <= 0 || s[1] != parts * s[0]) {
    const bool reversed = s.size() == 2 && s[0] == parts * s[1] && parts != 1;
    throw AttentionError("checkpoint_shape", "", key + " has shape " + shape_text(s) + (parts == 3 ? "; GPT-2's Conv1D layout is (d, 3d)" : "; nn.Linear(d, d)'s weight is (d, d)"),
                         reversed ? "The shape is exactly reversed: it looks transposed (a Linear layout, not Conv1D)." : "");
  }
  return s[0];
}

/// The chosen layer's tensors, each present where required and shaped for one width d.
LayerKeys layer_keys(const SafetensorsHeader& header, const CheckpointPlan& plan, int64_t layer, CheckpointReport& report) {
  const CheckpointLayout& layout = *plan.layout;
  LayerKeys k;
  k.base = plan.prefix + layout.block_stem + std::to_string(layer) + ".";
  for (const LayoutTensor& row : layout.block) {
    if (std::string(row.targets.front()).rfind("att.", 0) != 0) continue;
    k.rows.push_back(&row);
    k.keys.push_back(layout_key(layout, plan.prefix, row, layer));
    k.entries.push_back(header.find(k.keys.back()));
  }
  k.query_key = layout_key(layout, plan.prefix, query_row(layout), layer);
  k.query = header.find(k.query_key);
  if (k.query == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + k.query_key, "Choose a GPT-2 checkpoint.");
  for (size_t i = 0; i < k.rows.size(); ++i) {
    if (k.entries[i] == nullptr && !gives_qkv_bias(*k.rows[i])) {
      throw AttentionError("checkpoint_missing_key", "", "the file has " + k.query_key + " but no " + k.keys[i],
                           std::string("The checkpoint is incomplete; every layer of ") + layout.name + " has it.");
    }
    if (k.entries[i] != nullptr && gives_qkv_bias(*k.rows[i])) k.qkv_bias = true;
  }
  const int64_t d = k.d = width_of(query_row(layout), *k.query, k.query_key);
  report.sources["d"] = k.query_key + " " + shape_text(k.query->shape) + ": d = " + std::to_string(d);
  for (size_t i = 0; i < k.rows.size(); ++i) {
    Shape expected;
    for (const int64_t v : k.rows[i]->shape) expected.push_back(v * d);
    if (k.entries[i] != nullptr && k.entries[i]->shape != expected) {
      throw AttentionError("checkpoint_shape", "",
                           k.keys[i] + " has shape " + shape_text(k.entries[i]->shape) + ", expected " + shape_text(expected) + " for d = " + std::to_string(d), "");
    }
  }
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

/// context_length: the target's, else the position embedding's rows, else the layer's mask buffer, else the option.
int64_t plan_context_length(const SafetensorsHeader& header, const CheckpointPlan& plan, const std::string& base, const CheckpointOptions& options, CheckpointReport& report) {
  const CheckpointLayout& layout = *plan.layout;
  int64_t context_length = 0;
  const std::string wpe_key = layout_key(layout, plan.prefix, *layout_row(layout, "pos_emb.weight", false));
  const SafetensorsEntry* wpe = header.find(wpe_key);
  const std::string mask_key = base + layout.buffers.front().key;  // attn.bias (1, 1, n, n) / att.mask (n, n)
  const SafetensorsEntry* mask = header.find(mask_key);
  if (options.into) {
    context_length = options.into->context_length;
    report.sources["context_length"] = "the target module (context_length = " + std::to_string(context_length) + ")";
  } else if (wpe != nullptr && wpe->shape.size() == 2) {
    context_length = wpe->shape[0];
    report.sources["context_length"] = wpe_key + " rows (" + std::to_string(context_length) + ")";
  } else if (mask != nullptr && mask->shape.size() >= 2) {
    context_length = mask->shape.back();
    report.sources["context_length"] = mask_key + " (the causal mask buffer, " + std::to_string(context_length) + " x " + std::to_string(context_length) + ")";
  } else if (options.context_length) {
    context_length = *options.context_length;
    report.sources["context_length"] = "the context_length option (" + std::to_string(context_length) + ")";
  } else {
    throw AttentionError("checkpoint_context_length", "context_length", "the file has neither " + wpe_key + " nor a mask buffer to give context_length",
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
    problems.push_back("the target has d_in = " + std::to_string(t.d_in) + ", d_out = " + std::to_string(t.d_out) + " but " + k.query_key + " " + shape_text(k.query->shape) +
                       " gives d = " + std::to_string(d));
  std::string bias_key;
  int64_t bias_values = 0;
  for (size_t i = 0; i < k.rows.size(); ++i)
    if (bias_key.empty() && k.entries[i] != nullptr && gives_qkv_bias(*k.rows[i])) bias_key = k.keys[i], bias_values = numel_of(k.entries[i]->shape);
  const bool drops_bias = k.qkv_bias && !t.qkv_bias;
  if (drops_bias)
    problems.push_back("the file has q/k/v biases (" + bias_key + ", " + std::to_string(bias_values) + " values) but the target has qkv_bias=False: they would be dropped");
  if (!problems.empty()) {
    std::string message;
    for (const auto& p : problems) message += (message.empty() ? "" : "; ") + p;
    throw AttentionError(
        "checkpoint_config_mismatch", drops_bias ? "qkv_bias" : "d_out", message,
        drops_bias ? "GPT-2 needs MultiHeadAttention(..., qkv_bias=True)." : "Build the target as MultiHeadAttention(d, d, context_length, 0.0, num_heads, qkv_bias=True).");
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
  for (const SafetensorsEntry* e : k.entries) {
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

/// The tensors to read (with their layout rows), and the report's used, transposed (a copy rule that
/// transposes: Conv1D keeps (in, out)) and missing keys.
void list_used(const LayerKeys& k, CheckpointPlan& plan) {
  CheckpointReport& report = plan.report;
  for (size_t i = 0; i < k.rows.size(); ++i) {
    if (k.entries[i] == nullptr) {
      report.missing.push_back(k.keys[i]);
      continue;
    }
    plan.needed.push_back(*k.entries[i]);
    plan.needed_rows.push_back(k.rows[i]);
    report.used.push_back(k.keys[i]);
    if (k.rows[i]->copy == LayoutCopy::Transposed || k.rows[i]->copy == LayoutCopy::SplitThreeTransposed) report.transposed.push_back(k.keys[i]);
    report.mapping.push_back(layout_mapping_line(k.keys[i], k.entries[i]->shape, *k.rows[i], true));
  }
}

/// Why a key outside the layer's attention is not read.
std::string ignored_reason(const SafetensorsEntry& e, int64_t chosen, const CheckpointPlan& plan) {
  const CheckpointLayout& layout = *plan.layout;
  std::string prefix;
  int64_t layer = 0;
  for (const LayoutBuffer& buffer : layout.buffers)
    if (parse_layer_key(e.key, layout.block_stem, std::string(".") + buffer.key, prefix, layer)) return layout_buffer_text(buffer, e.shape);
  const std::string wpe = plan.prefix + layout_row(layout, "pos_emb.weight", false)->key, wte = plan.prefix + layout.model.front().key;
  if (e.key == wpe) return "position embeddings (not attention); its " + std::to_string(e.shape.empty() ? 0 : e.shape[0]) + " rows give context_length";
  if (e.key == wte) return "token embeddings (not attention)";
  const std::string blocks = plan.prefix + layout.block_stem;
  if (e.key.rfind(blocks, 0) == 0) {
    const std::string rest = e.key.substr(blocks.size());
    const std::string layer_text = rest.substr(0, rest.find('.'));
    return layer_text == std::to_string(chosen) ? "not part of attention (layer norm or MLP)" : "layer " + layer_text + " (loading layer " + std::to_string(chosen) + ")";
  }
  return "not part of attention";
}

/// Every other key of the file with why it is not read (the first kCheckpointIgnoredListed of them).
void list_ignored(const SafetensorsHeader& header, int64_t chosen, CheckpointPlan& plan) {
  CheckpointReport& report = plan.report;
  for (const auto& e : header.entries) {
    if (std::find(report.used.begin(), report.used.end(), e.key) != report.used.end()) continue;
    if (++report.ignored_count > kCheckpointIgnoredListed) continue;
    report.ignored.push_back({e.key, ignored_reason(e, chosen, plan)});
  }
}

}  // namespace

CheckpointPlan plan_gpt2_attention(const SafetensorsHeader& header, const CheckpointOptions& options) {
  CheckpointPlan plan;
  find_layers(header, options.layer, plan);
  const LayerKeys k = layer_keys(header, plan, options.layer, plan.report);
  const int64_t num_heads = plan_num_heads(header, k.d, options, plan.report);
  const int64_t context_length = plan_context_length(header, plan, k.base, options, plan.report);
  if (options.into) check_target(*options.into, k);

  ModuleConfig& c = plan.config;
  c.spec = &checkpoint_class();
  c.d_in = k.d;
  c.d_out = k.d;
  c.context_length = context_length;
  c.dropout = options.into ? options.into->dropout : 0.0;
  c.num_heads = num_heads;
  c.qkv_bias = options.into ? options.into->qkv_bias : k.qkv_bias;
  check_plan_fits(c, k, options, plan.report);
  list_used(k, plan);
  list_ignored(header, options.layer, plan);
  return plan;
}

}  // namespace attention_lab
