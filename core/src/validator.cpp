#include "attention_lab/validator.hpp"
#include "attention_lab/plan.hpp"
#include "attention_lab/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "attention_lab/gpt2_sizes.hpp"
#include "validator_detail.hpp"

namespace attention_lab {

using namespace validator_detail;

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

}  // namespace

namespace validator_detail {
Diagnostic make(Severity severity, std::string code, std::vector<std::string> slots, std::string message, std::string hint, std::string pytorch) {
  return {severity, std::move(code), std::move(slots), std::move(message), std::move(hint), std::move(pytorch)};
}
}  // namespace validator_detail

namespace {

/// Names people bring from other code bases (GPT-2 configs, nn.MultiheadAttention, the book's GPT_CONFIG).
std::string alias_for(const std::string& key) {
  static const std::pair<const char*, const char*> aliases[] = {
      {"embed_dim", "d_out"},
      {"emb_dim", "d_in"},
      {"n_embd", "d_in"},
      {"d_model", "d_in"},
      {"n_head", "num_heads"},
      {"n_heads", "num_heads"},
      {"heads", "num_heads"},
      {"nhead", "num_heads"},
      {"context_len", "context_length"},
      {"n_ctx", "context_length"},
      {"block_size", "context_length"},
      {"n_positions", "context_length"},
      {"drop_rate", "dropout"},
      {"attn_pdrop", "dropout"},
      {"p", "dropout"},
      {"dropout_rate", "dropout"},
      {"bias", "qkv_bias"},
      {"head_dim", "num_heads"},
  };
  for (const auto& [from, to] : aliases)
    if (key == from) return to;
  return "";
}

bool integral(double v) { return std::isfinite(v) && v == std::floor(v); }

/// The first non-ASCII character of `text` as "'x' (U+XXXX)", or "" when it is all ASCII.
std::string first_non_ascii(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) continue;
    const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    uint32_t cp = len == 1 ? c : c & (0x7Fu >> len);
    for (size_t k = 1; k < len && i + k < text.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3Fu);
    char code[16];
    std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(cp));
    return "'" + text.substr(i, std::min(len, text.size() - i)) + "' (" + code + ")";
  }
  return "";
}

/// Long values (a pasted 100 kB expression) are cut in messages; the slot keeps the whole text.
std::string shortened(const std::string& text) { return text.size() <= 80 ? text : text.substr(0, 60) + " ... (" + std::to_string(text.size()) + " characters)"; }

/// Python's CausalAttention registers a context_length x context_length float32 mask at construction;
/// past 2**20 (a 4 TiB mask) no machine can build the book's module.
constexpr double kMaxContextLength = 1048576.0;
/// Most heads MultiHeadAttentionWrapper may build (each is a module of its own).
constexpr int64_t kMaxWrapperHeads = 1024;

void check_slot_value(const SlotSpec& slot, const SlotValue& v, std::vector<Diagnostic>& out) {
  const std::string& n = slot.name;
  const std::string shown = shortened(v.python());
  // None is a value of its own for the optional slots (sliding_window_size=None: plain causal;
  // latent_dim=None: the slot's NoneRule).
  if ((slot.type == SlotType::OptionalInt || slot.type == SlotType::Dtype) && v.kind == SlotValue::Kind::None) return;
  if (slot.type == SlotType::Dtype) {
    // Numbers here are float32, as PyTorch's default dtype: torch.float32 (or torch.float) says so.
    if (v.kind == SlotValue::Kind::Expression && (v.text == "torch.float32" || v.text == "torch.float")) return;
    out.push_back(make(Severity::Error, "dtype", {n}, n + " = " + shown + " is not a dtype this lab computes in: every number here is float32",
                       "Leave dtype out (None) or write torch.float32; the book passes torch.bfloat16 only to save memory on a GPU.", ""));
    return;
  }
  if (v.kind == SlotValue::Kind::Expression) {
    std::string hint = "Type the value itself (for example " + std::string(slot.type == SlotType::Bool ? "True" : "768") + ").";
    if (const std::string odd = first_non_ascii(v.text); !odd.empty())
      hint = "It contains the non-ASCII character " + odd + ", which only looks like a digit or letter: retype it with ASCII digits 0-9. " + hint;
    // 2**31, 768 // 12: Python computes them; this lab reads each slot as one literal, and says so.
    const bool arithmetic = v.text.find_first_of("0123456789") != std::string::npos && v.text.find_first_not_of("0123456789.+-*/%() _eE") == std::string::npos;
    const std::string what = arithmetic ? " is arithmetic: Python would compute it, but this lab reads each slot as one literal value" : " is an expression, not a number";
    out.push_back(make(Severity::Error, "not_a_literal", {n}, n + " = " + shown + what, arithmetic ? "Type the result itself (for example 768)." : hint, ""));
    return;
  }
  if (v.kind == SlotValue::Kind::None || v.kind == SlotValue::Kind::String) {
    out.push_back(make(Severity::Error, "wrong_type", {n}, n + " must be " + (slot.type == SlotType::Bool ? "True or False" : std::string("a number")) + ", got " + shown,
                       slot.doc.empty() ? "" : n + ": " + slot.doc + ".", "TypeError"));
    return;
  }
  switch (slot.type) {
    case SlotType::Dtype:
      return;  // handled above
    case SlotType::OptionalInt:
    case SlotType::Int: {
      if (v.kind == SlotValue::Kind::Bool) {
        out.push_back(make(Severity::Error, "wrong_type", {n}, n + " must be an int, got " + shown + " (Python reads it as " + (v.boolean ? "1" : "0") + ")",
                           "Type a size such as 768.", ""));
        return;
      }
      if (v.kind == SlotValue::Kind::Int && std::isinf(v.number)) {
        // An int literal too long for a double (hundreds of digits): Python keeps it exact, PyTorch refuses it.
        if (v.number > 0) {
          out.push_back(make(Severity::Error, "too_large", {n}, n + " is an int with more digits than any size can have", "Use a size below 100,000.",
                             "RuntimeError: Overflow when unpacking long"));
        } else {
          out.push_back(make(Severity::Error, "non_positive", {n}, n + " must be at least 1, got a huge negative int", n + ": " + slot.doc + ".",
                             "RuntimeError: Overflow when unpacking long"));
        }
        return;
      }
      if (!std::isfinite(v.number)) {
        out.push_back(make(Severity::Error, "wrong_type", {n}, n + " must be a whole number, got " + shown, "Type a size such as 768.", "TypeError"));
        return;
      }
      // An Int whose number is not whole only comes from C++ callers (SlotValue::integer(0.5)); it is
      // refused like a float, before it could truncate to a zero head count.
      if (v.kind == SlotValue::Kind::Float || !integral(v.number)) {
        // "Write 0 without the decimal point" would lead to "must be at least 1": say so at once.
        const std::string fix = integral(v.number) && v.number >= 1 ? "Write " + SlotValue::integer(v.number).python() + " without the decimal point."
                                : integral(v.number)                ? n + " is a whole number of at least 1, written without a decimal point: " + n + ": " + slot.doc + "."
                                                                    : "Sizes are whole numbers.";
        out.push_back(make(Severity::Error, "wrong_type", {n}, n + " must be an int, got the float " + shown, fix,
                           "TypeError: empty(): argument 'size' must be tuple of ints, but found element of type float"));
        return;
      }
      if (v.number > 2147483647.0) {
        out.push_back(make(Severity::Error, "too_large", {n},
                           n + " = " + shown + " is far beyond any model (GPT-2 XL uses " + std::to_string(std::end(kGpt2Sizes)[-1].n_embd) + ")", "Use a size below 100,000.",
                           ""));
        return;
      }
      if (v.number <= 0) {
        std::string py = v.number < 0 ? "RuntimeError: Trying to create tensor with negative dimension " + shown : "";
        if (n == "num_heads" && v.number == 0) py = "ZeroDivisionError: integer division or modulo by zero";
        out.push_back(make(Severity::Error, "non_positive", {n}, n + " must be at least 1, got " + shown, n + ": " + slot.doc + ".", py));
        return;
      }
      if (n == "context_length" && v.number > kMaxContextLength) {
        const double mask_bytes = v.number * v.number * 4.0;
        out.push_back(make(
            Severity::Error, "too_large", {n},
            "context_length = " + shown + " would make PyTorch register a " + shown + " x " + shown + " float32 causal mask at construction: " + with_commas(mask_bytes) + " bytes",
            "GPT-2 uses 1024. The largest context_length accepted is 1,048,576 (a 4 TiB mask already).",
            "RuntimeError: [enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: not enough memory: you tried to allocate " + with_commas(mask_bytes) + " bytes"));
      }
      return;
    }
    case SlotType::Float: {
      if (v.kind == SlotValue::Kind::Bool) {
        out.push_back(make(Severity::Error, "wrong_type", {n}, n + " must be a probability such as 0.1, got " + shown, "Type 0.0 for no dropout.", ""));
        return;
      }
      if (!(v.number >= 0.0 && v.number <= 1.0)) {
        const std::string py = "ValueError: dropout probability has to be between 0 and 1, but got " + shown;
        out.push_back(make(Severity::Error, "dropout_range", {n}, "dropout must be in [0, 1], got " + shown, "dropout is a probability: 0.0 (off) to about 0.5.", py));
      } else if (v.number == 1.0) {
        // PyTorch accepts p = 1: in training mode it multiplies by zero and draws no random numbers.
        out.push_back(make(Severity::Warning, "dropout_all", {n},
                           "dropout = 1.0 drops every attention weight in training mode: the output then carries no attention (only out_proj's bias, or zeros)",
                           "PyTorch accepts it and draws no random numbers for it; use 0.0 to about 0.5 to see attention, or run in eval mode.", ""));
      }
      return;
    }
    case SlotType::Bool: {
      if (v.kind == SlotValue::Kind::Bool) return;
      if (v.kind == SlotValue::Kind::Int && (v.number == 0 || v.number == 1)) {
        out.push_back(make(Severity::Warning, "bool_as_int", {n}, n + " = " + shown + " is read as " + (v.number == 1 ? "True" : "False"), "Write True or False.", ""));
        return;
      }
      out.push_back(
          make(Severity::Error, "wrong_type", {n}, n + " must be True or False, got " + shown, "Python would treat any nonzero number as True; write True or False.", ""));
      return;
    }
  }
}

}  // namespace

namespace validator_detail {
const SlotValue* find_value(const SlotMap& config, const std::string& name) {
  const auto it = config.find(name);
  return it == config.end() ? nullptr : &it->second;
}
}  // namespace validator_detail

namespace {

/// `text` with each {field} replaced (PyTorch's error texts in the recipes).
std::string filled(std::string text, const std::vector<std::pair<std::string, std::string>>& fields) {
  for (const auto& [key, value] : fields)
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) text.replace(at, key.size(), value);
  return text;
}

/// The 1-based position of a slot, or 0 when the class has none.
int slot_position(const ClassSpec& spec, const std::string& slot) {
  for (const auto& s : spec.slots)
    if (s.name == slot) return s.position;
  return 0;
}

}  // namespace

namespace validator_detail {
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
  std::string call = spec.name + "(";
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

/// A key/value group count for `num_heads` query heads when the call gives none: the divisor of
/// num_heads nearest num_heads / 3 (three query heads per key/value head, as the gqaSmall preset).
int64_t kv_groups_for(int64_t num_heads) {
  int64_t best = 1;
  if (num_heads > (int64_t{1} << 20)) return best;  // far beyond any model: the slot's own error follows
  for (int64_t g = 1; g <= num_heads; ++g)
    if (num_heads % g == 0 && std::llabs(3 * g - num_heads) < std::llabs(3 * best - num_heads)) best = g;
  return best;
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

std::vector<Diagnostic> check_config(const std::string& class_name, const SlotMap& config, const CheckOptions& options) {
  std::vector<Diagnostic> out;
  const ClassSpec* spec = find_class(class_name);
  if (spec == nullptr) {
    std::vector<std::string> names;
    for (const auto& s : class_specs()) names.push_back(s.name);
    std::string hint = "The chapter's classes: " + join(names, ", ") + ".";
    if (class_name == "MultiheadAttention") {
      hint =
          "torch.nn.MultiheadAttention is PyTorch's built-in (embed_dim, num_heads, ...); the book's class is MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads).";
    } else if (const std::string guess = did_you_mean(class_name, names); !guess.empty()) {
      hint = "Did you mean " + guess + "? " + hint;
    }
    if (const std::string odd = first_non_ascii(class_name); !odd.empty())
      hint = "The name contains the non-ASCII character " + odd + ", a lookalike of a Latin letter or digit: retype it. " + hint;
    out.push_back(make(Severity::Error, "unknown_class", {}, class_name.empty() ? "no class name given" : "there is no class named '" + shortened(class_name) + "'", hint,
                       class_name.empty() ? "" : "NameError: name '" + shortened(class_name) + "' is not defined"));
    return out;
  }

  std::vector<std::string> slot_names;
  for (const auto& s : spec->slots) slot_names.push_back(s.name);

  for (const auto& [key, value] : config) {
    if (std::find(slot_names.begin(), slot_names.end(), key) != slot_names.end()) continue;
    std::string hint;
    std::string guess = did_you_mean(key, slot_names);
    const std::string alias = alias_for(key);
    if (guess.empty() && !alias.empty() && std::find(slot_names.begin(), slot_names.end(), alias) != slot_names.end()) guess = alias;
    if (!guess.empty()) hint = "Did you mean " + guess + "?";
    if (guess.empty()) {
      for (const auto& other : class_specs()) {
        if (other.name == spec->name) continue;
        for (const auto& s : other.slots) {
          if (s.name == key) {
            hint = spec->name + " has no " + key + " slot; " + other.name + " does. " + spec->name + " takes (" + join(slot_names, ", ") + ").";
            break;
          }
        }
        if (!hint.empty()) break;
      }
    }
    if (hint.empty()) hint = spec->name + " takes (" + join(slot_names, ", ") + ").";
    out.push_back(make(Severity::Error, "unknown_slot", {key}, spec->name + " has no slot named '" + key + "'", hint,
                       "TypeError: __init__() got an unexpected keyword argument '" + key + "'"));
  }

  std::vector<std::string> missing;
  for (const auto& slot : spec->slots) {
    const SlotValue* v = find_value(config, slot.name);
    if (v == nullptr) {
      if (!slot.default_value) missing.push_back(slot.name);
      continue;
    }
    check_slot_value(slot, *v, out);
  }
  for (const auto& name : missing) {
    const auto it = std::find(slot_names.begin(), slot_names.end(), name);
    const int position = static_cast<int>(it - slot_names.begin()) + 1;
    out.push_back(make(Severity::Error, "missing_slot", {name}, "slot " + std::to_string(position) + " '" + name + "' is missing",
                       "Give " + name + ": " + spec->slots[static_cast<size_t>(position - 1)].doc + ".",
                       "TypeError: __init__() missing " + std::to_string(missing.size()) + " required positional argument" + (missing.size() > 1 ? "s" : "") + ": '" + name + "'"));
  }

  const SlotValue* dropout = find_value(config, "dropout");
  const SlotValue* heads = find_value(config, "num_heads");
  // dropout (slot 4) and num_heads (slot 5) swapped: an int >= 1 where the probability goes and a
  // probability where the head count goes.
  // The bonus classes have no context_length: MultiHeadAttention's order pasted into them puts
  // context_length in the dropout slot, dropout in num_heads, num_heads in the next slot.
  const bool no_context_slot = std::none_of(spec->slots.begin(), spec->slots.end(), [](const SlotSpec& s) { return s.name == "context_length"; }) &&
                               std::any_of(spec->slots.begin(), spec->slots.end(), [](const SlotSpec& s) { return s.name == "num_heads"; });
  const SlotSpec* after_heads = nullptr;
  for (size_t i = 0; i + 1 < spec->slots.size(); ++i)
    if (spec->slots[i].name == "num_heads") after_heads = &spec->slots[i + 1];
  const SlotValue* next = after_heads ? find_value(config, after_heads->name) : nullptr;
  const bool mha_order = no_context_slot && dropout && heads && next && dropout->is_number() && heads->is_number() && next->is_number() && dropout->number >= 1 &&
                         integral(dropout->number) && heads->number >= 0 && heads->number < 1 && next->number >= 1 && integral(next->number);
  if (mha_order) {
    std::string call = spec->name + "(";
    for (const char* name : {"d_in", "d_out"})
      if (const SlotValue* v = find_value(config, name)) call += v->python() + ", ";
    // The slot after num_heads takes its default back; num_kv_groups has none: a count dividing the heads.
    std::optional<SlotValue> after_value = after_heads->default_value;
    if (!after_value) after_value = SlotValue::integer(static_cast<double>(kv_groups_for(static_cast<int64_t>(next->number))));
    std::vector<Fix> fixes = whole_call_fix(*spec, config, {{"dropout", *heads}, {"num_heads", SlotValue::integer(next->number)}, {after_heads->name, after_value}});
    call = fixes.empty() ? call + heads->python() + ", " + SlotValue::integer(next->number).python() + ")" : fixes[0].call;
    Diagnostic d = make(Severity::Error, "mha_slot_order", {"dropout", "num_heads"},
                        "slot 3 of " + spec->name + " is dropout; " + dropout->python() + ", " + heads->python() + ", " + next->python() +
                            " looks like MultiHeadAttention's order (d_in, d_out, context_length, dropout, num_heads)",
                        spec->name + " has no context_length (its causal mask is built for the tokens given): drop " + dropout->python() + " and write " + call + ".",
                        "ZeroDivisionError: float modulo");
    d.fixes = fixes;
    // The per-slot errors of those three slots are this one mistake: say it once.
    const std::vector<std::string> shifted = {"dropout", "num_heads", after_heads->name};
    out.erase(
        std::remove_if(out.begin(), out.end(), [&](const Diagnostic& e) { return e.slots.size() == 1 && std::find(shifted.begin(), shifted.end(), e.slots[0]) != shifted.end(); }),
        out.end());
    out.push_back(std::move(d));
  } else if (const SlotValue* context = find_value(config, "context_length"); context && dropout && heads &&
                                                                              slot_position(*spec, "num_heads") < slot_position(*spec, "context_length") && heads->is_number() &&
                                                                              context->is_number() && dropout->is_number() && integral(heads->number) && heads->number >= 1 &&
                                                                              context->number >= 0 && context->number < 1 && integral(dropout->number) && dropout->number >= 1) {
    // The bonus order (d_in, d_out, num_heads, context_length, dropout) given MultiHeadAttention's
    // (d_in, d_out, context_length, dropout, num_heads): num_heads gets the context, and so on.
    const std::string n = SlotValue::integer(dropout->number).python(), ctx = SlotValue::integer(heads->number).python(), p = context->python();
    std::string call = spec->name + "(";
    for (const char* name : {"d_in", "d_out"})
      if (const SlotValue* v = find_value(config, name)) call += v->python() + ", ";
    call += n + ", " + ctx + ", " + p + ")";
    Diagnostic d = make(Severity::Error, "mha_slot_order", {"num_heads", "context_length", "dropout"},
                        "slots 3-5 of " + spec->name + " are (num_heads, context_length, dropout); " + heads->python() + ", " + context->python() + ", " + dropout->python() +
                            " looks like MultiHeadAttention's order (context_length, dropout, num_heads)",
                        "Write " + call + ", or use keywords.", "ValueError: dropout probability has to be between 0 and 1, but got " + dropout->python());
    d.fixes = whole_call_fix(*spec, config, {{"num_heads", SlotValue::integer(dropout->number)}, {"context_length", SlotValue::integer(heads->number)}, {"dropout", *context}});
    const std::vector<std::string> shifted = {"dropout", "num_heads", "context_length"};
    out.erase(
        std::remove_if(out.begin(), out.end(), [&](const Diagnostic& e) { return e.slots.size() == 1 && std::find(shifted.begin(), shifted.end(), e.slots[0]) != shifted.end(); }),
        out.end());
    out.push_back(std::move(d));
  } else if (dropout && heads && dropout->is_number() && heads->is_number() && dropout->number >= 1 && integral(dropout->number) && heads->number >= 0 && heads->number < 1) {
    out.push_back(make(Severity::Error, "slots_swapped", {"dropout", "num_heads"}, "dropout = " + dropout->python() + " and num_heads = " + heads->python() + " look swapped",
                       "The order is (d_in, d_out, context_length, dropout, num_heads): write " + heads->python() + " before " + SlotValue::integer(dropout->number).python() +
                           ", or use keywords: dropout=" + heads->python() + ", num_heads=" + SlotValue::integer(dropout->number).python() + ".",
                       "ValueError: dropout probability has to be between 0 and 1, but got " + dropout->python()));
    out.back().fixes = whole_call_fix(*spec, config, {{"dropout", *heads}, {"num_heads", SlotValue::integer(dropout->number)}});
  }

  // Relations between slots are only checked once each slot involved is right on its own; all of them
  // at once (one relation's error does not hide another's: a fix for one would then meet the next).
  const std::vector<Diagnostic> alone = out;
  const SlotValue* d_out_v = find_value(config, "d_out");
  check_heads_divide(*spec, config, alone, out);
  check_kv_groups_divide(*spec, config, alone, out);
  // Classes whose forward only works when x's width is d_out (a view to x's width,
  // nn.MultiheadAttention's embed_dim): PyTorch builds them, then fails on the first forward.
  const SlotValue* d_in_v = find_value(config, "d_in");
  if (!spec->needs_square.empty() && d_in_v && d_out_v && slot_ok(alone, "d_in") && slot_ok(alone, "d_out") && d_in_v->number != d_out_v->number) {
    const std::string d_in = d_in_v->python(), d_out_text = d_out_v->python();
    // With the input's shape known, PyTorch's message with its numbers; else with the axes' names.
    const Shape* x = options.input_shape && options.input_shape->size() == 3 ? &*options.input_shape : nullptr;
    const std::string b = x ? std::to_string((*x)[0]) : "b", t = x ? std::to_string((*x)[1]) : "num_tokens";
    const std::string size = x ? std::to_string((*x)[0] * (*x)[1] * static_cast<int64_t>(d_out_v->number)) : "b * num_tokens * " + d_out_text;
    const std::string error = filled(spec->needs_square, {{"{d_in}", d_in}, {"{d_out}", d_out_text}, {"{b}", b}, {"{num_tokens}", t}, {"{size}", size}});
    Diagnostic d = make(Severity::Error, "d_in_d_out_differ", {"d_in", "d_out"},
                        spec->name + " needs d_in == d_out (got d_in = " + d_in + ", d_out = " + d_out_text + "): its forward works on x's own width",
                        "Set d_out = " + d_in + " (or d_in = " + d_out_text + "); classes such as MHAPyTorchScaledDotProduct or MultiHeadAttention take any d_in.", error);
    // d_out = d_in only when the heads still divide it (else heads_divisibility would follow).
    const bool heads_divide_d_in =
        !(spec->heads == HeadsRule::Fused && heads && slot_ok(alone, "num_heads") && static_cast<int64_t>(d_in_v->number) % static_cast<int64_t>(heads->number) != 0);
    if (heads_divide_d_in) d.fixes.push_back({"d_out", d_in});
    d.fixes.push_back({"d_in", d_out_text});
    out.push_back(std::move(d));
  }
  if (has_error(out)) return out;

  const ModuleConfig c = to_module_config(class_name, config);

  // The wrapper builds one CausalAttention per head (3 or 6 parameter tensors each): millions of tiny
  // heads fit the byte budget yet would flood every parameter table and trace.
  if (spec->per_head_modules && c.num_heads > kMaxWrapperHeads) {
    out.push_back(make(Severity::Error, "too_large", {"num_heads"},
                       "num_heads = " + std::to_string(c.num_heads) + " would build " + with_commas(static_cast<double>(c.num_heads)) +
                           " separate CausalAttention heads; at most " + std::to_string(kMaxWrapperHeads) + " are accepted",
                       "Real models use up to about 128 heads (GPT-2 XL: 25).", ""));
    return out;
  }

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

  if (spec->width == WidthRule::HeadsTimesDOut) {
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
  check_d_out_per_head(*spec, config, c, out);
  if (spec->heads != HeadsRule::Single) {
    for (const auto& p : kGpt2Sizes) {
      if (p.n_embd == c.d_out && p.n_layer == c.num_heads && p.n_layer != p.n_head && spec->width == WidthRule::HeadsTimesDOut) {
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
  if (c.d_in == c.d_out) {
    out.push_back(make(Severity::Info, "square_weights", {"d_in", "d_out"}, "d_in == d_out: the weight matrices are square, so a copy that forgets .T still fits",
                       "Compare outputs after a weight copy; shapes alone will not catch a missing transpose.", ""));
  }
  if (spec->dropout == DropoutRule::Ignored && c.dropout > 0) {
    out.push_back(make(Severity::Warning, "dropout_ignored", {"dropout"},
                       "dropout = " + SlotValue::floating(c.dropout).python() + " is stored but never used: " + spec->name + "'s forward applies no dropout",
                       "FlexAttention has no dropout; set dropout = 0.0, or pick a class that drops attention weights in training.", ""));
    out.back().fixes = {{"dropout", "0.0"}};
  }
  if (spec->mask == MaskRule::InvertedBuffer) {
    out.push_back(make(Severity::Warning, "inverted_mask", {},
                       spec->name + " passes triu(ones, diagonal=1).bool() as attn_mask, where True means \"attend\": each query sees only later tokens, and the last "
                                    "query none, so its row of attention weights is NaN",
                       "The fix: pass the mask inverted (attn_mask=~self.mask[:num_tokens, :num_tokens]) or is_causal=True, as MHAPyTorchScaledDotProduct does.", ""));
  }
  if (c.has_dropout() && c.dropout > 0 && options.training && !*options.training) {
    out.push_back(make(Severity::Warning, "dropout_eval", {"dropout"}, "dropout = " + SlotValue::floating(c.dropout).python() + " has no effect in eval mode: no weight is dropped",
                       "Switch to training mode to see dropout act, or set dropout = 0.0.", ""));
  }

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
