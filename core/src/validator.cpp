#include "attention_lab/validator.hpp"
#include "attention_lab/plan.hpp"
#include "attention_lab/text.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention_lab/gpt2_sizes.hpp"
#include "validator_detail.hpp"

namespace attention_lab {

using namespace validator_detail;

namespace validator_detail {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

bool integral(double v) { return std::isfinite(v) && v == std::floor(v); }

Diagnostic make(Severity severity, std::string code, std::vector<std::string> slots, std::string message, std::string hint, std::string pytorch) {
  return {severity, std::move(code), std::move(slots), std::move(message), std::move(hint), std::move(pytorch)};
}

const SlotValue* find_value(const SlotMap& config, const std::string& name) {
  const auto it = config.find(name);
  return it == config.end() ? nullptr : &it->second;
}

bool slot_ok(const std::vector<Diagnostic>& diags, const std::string& slot) {
  for (const auto& d : diags)
    if (d.severity == Severity::Error && std::find(d.slots.begin(), d.slots.end(), slot) != d.slots.end()) return false;
  return true;
}

std::vector<Fix> whole_call_fix(const ClassSpec& spec, const SlotMap& config, const std::vector<std::pair<std::string, std::optional<SlotValue>>>& moved) {
  SlotMap fixed;
  for (const auto& slot : spec.slots)
    if (const SlotValue* v = find_value(config, slot.name)) fixed[slot.name] = *v;
  for (const auto& [name, value] : moved) {
    if (value)
      fixed[name] = *value;
    else
      fixed.erase(name);
  }
  for (const auto& slot : spec.slots)
    if (!slot.default_value && fixed.count(slot.name) == 0) return {};
  // A call can only be rewritten from values (an expression or a string elsewhere keeps its own error).
  for (const auto& slot : spec.slots)
    if (const SlotValue* v = find_value(fixed, slot.name); v && slot.type != SlotType::Dtype && (v->kind == SlotValue::Kind::Expression || v->kind == SlotValue::Kind::String))
      return {};
  // Offered only when it puts the moved slots right: a guessed order that meets another error there
  // (a head count that does not divide d_out) would be a dead end.
  for (const auto& d : check_config(spec.name, fixed))
    for (const auto& [name, value] : moved)
      if (d.severity == Severity::Error && std::find(d.slots.begin(), d.slots.end(), name) != d.slots.end()) return {};
  // The call as the reader would write it: the values as they are (a wrong one elsewhere stays as typed),
  // defaults left out, keywords after the first one left out.
  std::string call = spec.name + "(";  // the class id: the page reads a fix's call back (parse_call takes Name@folder)
  bool first = true, keywords = false;
  for (const auto& slot : spec.slots) {
    const SlotValue* v = find_value(fixed, slot.name);
    if (v == nullptr || (slot.default_value && v->python() == slot.default_value->python())) {
      keywords = true;
      continue;
    }
    call += (first ? "" : ", ") + (keywords ? slot.name + "=" : "") + v->python();
    first = false;
  }
  return {{"", "", call + ")"}};
}

}  // namespace validator_detail

namespace {

/// Most heads MultiHeadAttentionWrapper may build (each is a module of its own).
constexpr int64_t kMaxWrapperHeads = 1024;

/// `text` with each {field} replaced (PyTorch's error texts in the recipes).
std::string filled(std::string text, const std::vector<std::pair<std::string, std::string>>& fields) {
  for (const auto& [key, value] : fields)
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) text.replace(at, key.size(), value);
  return text;
}

}  // namespace

double estimate_bytes(const ModuleConfig& c, const std::optional<Shape>& input_shape, bool trace) { return plan_bytes(plan_forward(c), input_shape, trace); }

namespace {
/// The size slots that make the parameters alone go over the budget: each whose reduction to GPT-2
/// small's size (768 wide, 12 heads; a multiple of num_heads where the heads split d_out) would remove
/// more than half of their bytes. MultiHeadLatentAttention(3, 4, 0.0, 2, latent_dim=10**9): latent_dim;
/// MultiHeadAttention(100000, 100000, ...): d_in and d_out; SelfAttention_v1(10**9, 2): d_in.
std::vector<std::string> oversized_slots(const ModuleConfig& c) {
  const Gpt2Size& small = kGpt2Sizes[0];
  const std::pair<const char*, int64_t ModuleConfig::*> sizes[] = {
      {"d_in", &ModuleConfig::d_in}, {"d_out", &ModuleConfig::d_out}, {"latent_dim", &ModuleConfig::latent_dim}, {"num_heads", &ModuleConfig::num_heads}};
  const double bytes = estimate_bytes(c, std::nullopt);
  std::vector<std::string> out;
  for (const auto& size : sizes) {
    const std::string name = size.first;
    const auto field = size.second;
    const bool has = std::any_of(c.recipe().slots.begin(), c.recipe().slots.end(), [&](const SlotSpec& s) { return s.name == name; });
    if (!has || (field == &ModuleConfig::num_heads && !c.recipe().per_head_modules)) continue;  // fused heads share d_out: no parameters of their own
    ModuleConfig smaller = c;
    const int64_t typical = field == &ModuleConfig::num_heads ? small.n_head : small.n_embd;
    smaller.*field = std::min(c.*field, field == &ModuleConfig::d_out && c.fused_heads() ? typical - typical % std::min(c.num_heads, typical) : typical);
    if (estimate_bytes(smaller, std::nullopt) < bytes / 2) out.push_back(name);
  }
  if (out.empty()) out = {"d_in", "d_out"};
  return out;
}
}  // namespace

void check_input_shape(const ModuleConfig& c, const Shape& s, std::vector<Diagnostic>& out) {
  const bool batched = c.batched();
  const size_t want = batched ? 3 : 2;
  const std::string expected = batched ? "(b, num_tokens, d_in)" : "(num_tokens, d_in)";
  if (s.size() != want) {
    std::string hint;
    if (batched && s.size() == 2)
      hint = "Add a batch axis: x.unsqueeze(0) gives (1, " + std::to_string(s[0]) + ", " + std::to_string(s[1]) + "), or stack copies with torch.stack((x, x)).";
    else if (!batched && s.size() == 3)
      hint = c.class_name() + " has no batch axis: pass one sequence, x[0] of shape (" + std::to_string(s[1]) + ", " + std::to_string(s[2]) + ").";
    else
      hint = "Reshape the input to " + expected + ".";
    out.push_back(make(Severity::Error, "input_rank", {}, c.class_name() + " takes x of shape " + expected + ", got " + shape_string(s), hint,
                       batched ? "ValueError: not enough values to unpack (expected 3, got " + std::to_string(s.size()) + ")" : ""));
    return;
  }
  for (int64_t d : s) {
    if (d <= 0) {
      out.push_back(make(Severity::Error, "input_empty", {}, "the input " + shape_string(s) + " has an empty axis", "Give at least one token (and one batch item)."));
      return;
    }
  }
  const int64_t width = s.back();
  const int64_t num_tokens = s[s.size() - 2];
  if (width != c.d_in) {
    int64_t rows = 0;  // num_tokens x b as PyTorch flattens them; sizes from C++ callers may overflow it
    const std::string rows_text = __builtin_mul_overflow(num_tokens, batched ? s[0] : int64_t{1}, &rows) ? "more than 2**63" : std::to_string(rows);
    std::string hint = "Set d_in = " + std::to_string(width) + ", or give tokens of width " + std::to_string(c.d_in) + ".";
    if (width == c.d_out && c.d_in != c.d_out)
      hint = "d_in and d_out look swapped: the tokens are " + std::to_string(width) + " wide, which is d_out. Try d_in = " + std::to_string(width) +
             ", d_out = " + std::to_string(c.d_in) + ".";
    out.push_back(make(Severity::Error, "input_width", {"d_in"}, "the tokens are " + std::to_string(width) + " wide but d_in = " + std::to_string(c.d_in), hint,
                       "RuntimeError: mat1 and mat2 shapes cannot be multiplied (" + rows_text + "x" + std::to_string(width) + " and " + std::to_string(c.d_in) + "x" +
                           std::to_string(c.d_out) + ")"));
    out.back().fixes = {{"d_in", std::to_string(width)}};
  }
  if (c.has_context_length() && num_tokens > c.context_length) {
    out.push_back(make(Severity::Error, "context_too_short", {"context_length"},
                       "num_tokens " + std::to_string(num_tokens) + " > context_length " + std::to_string(c.context_length) + ": the causal mask buffer is only " +
                           std::to_string(c.context_length) + " x " + std::to_string(c.context_length),
                       "Use at most " + std::to_string(c.context_length) + " tokens, or set context_length >= " + std::to_string(num_tokens) + ".",
                       filled(c.recipe().context_error, {{"{num_tokens}", std::to_string(num_tokens)}, {"{context_length}", std::to_string(c.context_length)}})));
    out.back().fixes = {{"context_length", std::to_string(num_tokens)}};
  }
}

namespace {

/// Classes whose forward only works when x's width is d_out (a view to x's width,
/// nn.MultiheadAttention's embed_dim): PyTorch builds them, then fails on the first forward.
void check_d_in_equals_d_out(const ClassSpec& spec, const SlotMap& config, const std::vector<Diagnostic>& alone, const CheckOptions& options, std::vector<Diagnostic>& out) {
  const SlotValue* heads = find_value(config, "num_heads");
  const SlotValue* d_out_v = find_value(config, "d_out");
  const SlotValue* d_in_v = find_value(config, "d_in");
  if (!(!spec.needs_square.empty() && d_in_v && d_out_v && slot_ok(alone, "d_in") && slot_ok(alone, "d_out") && d_in_v->number != d_out_v->number)) return;
  const std::string d_in = d_in_v->python(), d_out_text = d_out_v->python();
  // With the input's shape known, PyTorch's message with its numbers; else with the axes' names.
  const Shape* x = options.input_shape && options.input_shape->size() == 3 ? &*options.input_shape : nullptr;
  const std::string b = x ? std::to_string((*x)[0]) : "b", t = x ? std::to_string((*x)[1]) : "num_tokens";
  const std::string size = x ? std::to_string((*x)[0] * (*x)[1] * static_cast<int64_t>(d_out_v->number)) : "b * num_tokens * " + d_out_text;
  const std::string error = filled(spec.needs_square, {{"{d_in}", d_in}, {"{d_out}", d_out_text}, {"{b}", b}, {"{num_tokens}", t}, {"{size}", size}});
  Diagnostic d = make(Severity::Error, "d_in_d_out_differ", {"d_in", "d_out"},
                      spec.name + " needs d_in == d_out (got d_in = " + d_in + ", d_out = " + d_out_text + "): its forward works on x's own width",
                      "Set d_out = " + d_in + " (or d_in = " + d_out_text + "); classes such as MHAPyTorchScaledDotProduct or MultiHeadAttention take any d_in.", error);
  // d_out = d_in only when the heads still divide it (else heads_divisibility would follow).
  const bool heads_divide_d_in =
      !(spec.heads == HeadsRule::Fused && heads && slot_ok(alone, "num_heads") && static_cast<int64_t>(d_in_v->number) % static_cast<int64_t>(heads->number) != 0);
  if (heads_divide_d_in) d.fixes.push_back({"d_out", d_in});
  d.fixes.push_back({"d_in", d_out_text});
  out.push_back(std::move(d));
}

/// The wrapper builds one CausalAttention per head (3 or 6 parameter tensors each): millions of tiny
/// heads fit the byte budget yet would flood every parameter table and trace. True when refused.
bool too_many_wrapper_heads(const ClassSpec& spec, const ModuleConfig& c, std::vector<Diagnostic>& out) {
  if (!(spec.per_head_modules && c.num_heads > kMaxWrapperHeads)) return false;
  out.push_back(make(Severity::Error, "too_large", {"num_heads"},
                     "num_heads = " + std::to_string(c.num_heads) + " would build " + with_commas(static_cast<double>(c.num_heads)) + " separate CausalAttention heads; at most " +
                         std::to_string(kMaxWrapperHeads) + " are accepted",
                     "Real models use up to about 128 heads (GPT-2 XL: 25).", ""));
  return true;
}

/// The memory budget: the parameters and a traced forward on the input must fit the page's heap.
void check_memory_budget(const ModuleConfig& c, const CheckOptions& options, std::vector<Diagnostic>& out) {
  const double bytes = estimate_bytes(c, options.input_shape);
  if (bytes > options.memory_budget_bytes) {
    // The parameters alone, or the traced forward on the input (then the input is at fault: no slot).
    std::vector<std::string> slots;
    if (estimate_bytes(c, std::nullopt) > options.memory_budget_bytes) slots = oversized_slots(c);
    out.push_back(make(Severity::Error, "too_large", slots,
                       "this setup needs about " + with_commas(bytes) + " bytes (" + with_commas(bytes / (1024.0 * 1024.0)) + " MiB), over the " +
                           with_commas(options.memory_budget_bytes / (1024.0 * 1024.0)) + " MiB budget of this page",
                       slots.empty() ? "Use fewer tokens (or smaller sizes: GPT-2 small is d_in = d_out = 768)."
                                     : "Use a smaller " + join(slots, " or ") + ": its parameters alone are over the budget (GPT-2 small is d_in = d_out = 768).",
                       ""));
  }
}

/// Warnings about the heads: d_out read as the wrong width, GPT-2's layer count as its head count, one head.
void check_head_warnings(const ClassSpec& spec, const SlotMap& config, const ModuleConfig& c, std::vector<Diagnostic>& out) {
  if (spec.width == WidthRule::HeadsTimesDOut) {
    if (const Gpt2Size* p = gpt2_size_of_width(c.d_out); p && (c.num_heads == p->n_head || c.num_heads == p->n_layer)) {
      out.push_back(make(Severity::Warning, "wrapper_total_width", {"d_out", "num_heads"},
                         "d_out is per head in MultiHeadAttentionWrapper: the output is " + std::to_string(c.num_heads) + " x " + std::to_string(c.d_out) + " = " +
                             std::to_string(c.output_width()) + " wide, not " + std::to_string(c.d_out),
                         "To match MultiHeadAttention(" + std::to_string(c.d_out) + ", " + std::to_string(c.d_out) + ", ..., " + std::to_string(c.num_heads) +
                             "), give the wrapper d_out = " + std::to_string(c.d_out / c.num_heads) + " per head.",
                         ""));
      if (c.d_out % c.num_heads == 0) out.back().fixes = {{"d_out", std::to_string(c.d_out / c.num_heads)}};
    }
  }
  check_d_out_per_head(spec, config, c, out);
  if (spec.heads != HeadsRule::Single) {
    for (const auto& p : kGpt2Sizes) {
      if (p.n_embd == c.d_out && p.n_layer == c.num_heads && p.n_layer != p.n_head && spec.width == WidthRule::HeadsTimesDOut) {
        out.push_back(make(Severity::Warning, "layer_count_as_heads", {"num_heads"},
                           std::to_string(c.num_heads) + " is GPT-2 " + p.name + "'s number of layers, not its head count (" + std::to_string(p.n_head) + ")",
                           "Use num_heads = " + std::to_string(p.n_head) + ".", ""));
      }
    }
    if (c.num_heads == 1) {
      out.push_back(make(Severity::Warning, "one_head", {"num_heads"}, "with one head, mistakes in splitting and merging heads cannot show",
                         "Use num_heads >= 2 to see how the heads divide the work.", ""));
    }
  }
}

/// Warnings about what a valid setup will not show: square weights hide a missing .T, dropout that never
/// acts (ignored by the class, or eval mode), and the class whose mask is inverted.
void check_quiet_mistakes(const ClassSpec& spec, const ModuleConfig& c, const CheckOptions& options, std::vector<Diagnostic>& out) {
  if (c.d_in == c.d_out) {
    out.push_back(make(Severity::Info, "square_weights", {"d_in", "d_out"}, "d_in == d_out: the weight matrices are square, so a copy that forgets .T still fits",
                       "Compare outputs after a weight copy; shapes alone will not catch a missing transpose.", ""));
  }
  if (spec.dropout == DropoutRule::Ignored && c.dropout > 0) {
    out.push_back(make(Severity::Warning, "dropout_ignored", {"dropout"},
                       "dropout = " + SlotValue::floating(c.dropout).python() + " is stored but never used: " + spec.name + "'s forward applies no dropout",
                       "FlexAttention has no dropout; set dropout = 0.0, or pick a class that drops attention weights in training.", ""));
    out.back().fixes = {{"dropout", "0.0"}};
  }
  if (spec.mask == MaskRule::InvertedBuffer) {
    out.push_back(make(Severity::Warning, "inverted_mask", {},
                       spec.name + " passes triu(ones, diagonal=1).bool() as attn_mask, where True means \"attend\": each query sees only later tokens, and the last "
                                   "query none, so its row of attention weights is NaN",
                       "The fix: pass the mask inverted (attn_mask=~self.mask[:num_tokens, :num_tokens]) or is_causal=True, as MHAPyTorchScaledDotProduct does.", ""));
  }
  if (c.has_dropout() && c.dropout > 0 && options.training && !*options.training) {
    out.push_back(make(Severity::Warning, "dropout_eval", {"dropout"}, "dropout = " + SlotValue::floating(c.dropout).python() + " has no effect in eval mode: no weight is dropped",
                       "Switch to training mode to see dropout act, or set dropout = 0.0.", ""));
  }
}

}  // namespace

std::vector<Diagnostic> check_config(const std::string& class_name, const SlotMap& config, const CheckOptions& options) {
  const ClassSpec* spec = find_class(class_name);
  if (spec == nullptr) return {unknown_class(class_name)};
  std::vector<Diagnostic> out;
  check_slot_names(*spec, config, out);
  check_slot_values(*spec, config, out);
  check_slot_order(*spec, config, out);
  // Relations between slots are only checked once each slot involved is right on its own; all of them
  // at once (one relation's error does not hide another's: a fix for one would then meet the next).
  const std::vector<Diagnostic> alone = out;
  check_heads_divide(*spec, config, alone, out);
  check_kv_groups_divide(*spec, config, alone, out);
  check_rope_head_dim(*spec, config, alone, out);
  check_d_in_equals_d_out(*spec, config, alone, options, out);
  if (has_error(out)) return out;

  const ModuleConfig c = to_module_config(class_name, config);
  if (too_many_wrapper_heads(*spec, c, out)) return out;
  check_memory_budget(c, options, out);
  check_head_warnings(*spec, config, c, out);
  check_quiet_mistakes(*spec, c, options, out);
  if (options.input_shape) check_input_shape(c, *options.input_shape, out);
  return out;
}

ModuleConfig validated_config(const std::string& class_name, const SlotMap& config, const CheckOptions& options) {
  for (const auto& d : check_config(class_name, config, options)) {
    if (d.severity == Severity::Error) throw AttentionError(d.code, d.slots.empty() ? "" : d.slots.front(), d.message, d.hint);
  }
  return to_module_config(class_name, config);
}

ModuleConfig to_module_config(const std::string& class_name, const SlotMap& config) {
  const ClassSpec* spec = find_class(class_name);
  if (spec == nullptr) throw AttentionError("unknown_class", "", "there is no class named '" + class_name + "'", "");
  ModuleConfig c;
  c.spec = spec;
  const auto get = [&](const std::string& name) -> const SlotValue* {
    const SlotValue* v = find_value(config, name);
    if (v) return v;
    for (const auto& s : spec->slots)
      if (s.name == name && s.default_value) return &*s.default_value;
    return nullptr;
  };
  for (const auto& s : spec->slots) {
    const SlotValue* v = get(s.name);
    if (v == nullptr) throw AttentionError("missing_slot", s.name, "slot '" + s.name + "' is missing", "");
    if (s.name == "d_in")
      c.d_in = static_cast<int64_t>(v->number);
    else if (s.name == "d_out")
      c.d_out = static_cast<int64_t>(v->number);
    else if (s.name == "context_length")
      c.context_length = static_cast<int64_t>(v->number);
    else if (s.name == "dropout")
      c.dropout = v->number;
    else if (s.name == "num_heads")
      c.num_heads = static_cast<int64_t>(v->number);
    else if (s.name == "qkv_bias")
      c.qkv_bias = v->kind == SlotValue::Kind::Bool ? v->boolean : v->number != 0;
    else if (s.name == "num_kv_groups")
      c.num_kv_groups = static_cast<int64_t>(v->number);
    else if (s.name == "sliding_window_size")
      c.sliding_window_size = v->kind == SlotValue::Kind::None ? 0 : static_cast<int64_t>(v->number);
    else if (s.name == "latent_dim")
      c.latent_dim = v->kind == SlotValue::Kind::None ? 0 : static_cast<int64_t>(v->number);
    else if (s.name == "need_weights")
      c.need_weights = v->kind == SlotValue::Kind::Bool ? v->boolean : v->number != 0;
  }
  return c;
}

}  // namespace attention_lab
