// Each slot on its own: the class's name, the slot names, which slots are given, and each value's type and
// range (a size a whole number of at least 1, dropout a probability, qkv_bias True or False).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attention_lab/gpt2_sizes.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"
#include "validator_detail.hpp"

namespace attention_lab::validator_detail {

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

/// An int slot's value (the sizes, num_heads, num_kv_groups, the window and latent widths): a whole
/// number, then one PyTorch can build a tensor of.
void check_int_slot(const SlotSpec& slot, const SlotValue& v, const std::string& shown, std::vector<Diagnostic>& out) {
  const std::string& n = slot.name;
  if (v.kind == SlotValue::Kind::Bool) {
    out.push_back(
        make(Severity::Error, "wrong_type", {n}, n + " must be an int, got " + shown + " (Python reads it as " + (v.boolean ? "1" : "0") + ")", "Type a size such as 768.", ""));
    return;
  }
  if (v.kind == SlotValue::Kind::Int && std::isinf(v.number)) {
    // An int literal too long for a double (hundreds of digits): Python keeps it exact, PyTorch refuses it.
    if (v.number > 0) {
      out.push_back(make(Severity::Error, "too_large", {n}, n + " is an int with more digits than any size can have", "Use a size below 100,000.",
                         "RuntimeError: Overflow when unpacking long"));
    } else {
      out.push_back(
          make(Severity::Error, "non_positive", {n}, n + " must be at least 1, got a huge negative int", n + ": " + slot.doc + ".", "RuntimeError: Overflow when unpacking long"));
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
    out.push_back(make(Severity::Error, "too_large", {n}, n + " = " + shown + " is far beyond any model (GPT-2 XL uses " + std::to_string(std::end(kGpt2Sizes)[-1].n_embd) + ")",
                       "Use a size below 100,000.", ""));
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
}

/// dropout's value: a probability, as nn.Dropout checks it.
void check_dropout_slot(const SlotSpec& slot, const SlotValue& v, const std::string& shown, std::vector<Diagnostic>& out) {
  const std::string& n = slot.name;
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
}

/// A bool slot's value (qkv_bias, need_weights): True or False, with 0 and 1 read as Python does.
void check_bool_slot(const SlotSpec& slot, const SlotValue& v, const std::string& shown, std::vector<Diagnostic>& out) {
  const std::string& n = slot.name;
  if (v.kind == SlotValue::Kind::Bool) return;
  if (v.kind == SlotValue::Kind::Int && (v.number == 0 || v.number == 1)) {
    out.push_back(make(Severity::Warning, "bool_as_int", {n}, n + " = " + shown + " is read as " + (v.number == 1 ? "True" : "False"), "Write True or False.", ""));
    return;
  }
  out.push_back(make(Severity::Error, "wrong_type", {n}, n + " must be True or False, got " + shown, "Python would treat any nonzero number as True; write True or False.", ""));
}

/// One slot's value on its own: a literal of the slot's type, then that type's range.
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
    case SlotType::Int:
      return check_int_slot(slot, v, shown, out);
    case SlotType::Float:
      return check_dropout_slot(slot, v, shown, out);
    case SlotType::Bool:
      return check_bool_slot(slot, v, shown, out);
  }
}

/// The class's slot names in call order.
std::vector<std::string> slot_names_of(const ClassSpec& spec) {
  std::vector<std::string> slot_names;
  for (const auto& s : spec.slots) slot_names.push_back(s.name);
  return slot_names;
}

}  // namespace

namespace {
/// What a class's recipe says to a reader who typed `name`, a lookalike of it; "" when none does.
std::string lookalike_hint(const std::string& name) {
  for (const ClassSpec& s : class_specs())
    for (const auto& [lookalike, hint] : s.lookalikes)
      if (lookalike == name) return hint;
  return "";
}
}  // namespace

Diagnostic unknown_class(const std::string& class_name) {
  std::vector<std::string> names;
  for (const auto& s : class_specs()) names.push_back(s.name);
  std::string hint = "The chapter's classes: " + join(names, ", ") + ".";
  if (const std::string told = lookalike_hint(class_name); !told.empty()) {
    hint = told;
  } else if (const std::string guess = did_you_mean(class_name, names); !guess.empty()) {
    hint = "Did you mean " + guess + "? " + hint;
  }
  if (const std::string odd = first_non_ascii(class_name); !odd.empty())
    hint = "The name contains the non-ASCII character " + odd + ", a lookalike of a Latin letter or digit: retype it. " + hint;
  return make(Severity::Error, "unknown_class", {}, class_name.empty() ? "no class name given" : "there is no class named '" + shortened(class_name) + "'", hint,
              class_name.empty() ? "" : "NameError: name '" + shortened(class_name) + "' is not defined");
}

void check_slot_names(const ClassSpec& spec, const SlotMap& config, std::vector<Diagnostic>& out) {
  const std::vector<std::string> slot_names = slot_names_of(spec);
  for (const auto& [key, value] : config) {
    if (std::find(slot_names.begin(), slot_names.end(), key) != slot_names.end()) continue;
    std::string hint;
    std::string guess = did_you_mean(key, slot_names);
    const std::string alias = alias_for(key);
    if (guess.empty() && !alias.empty() && std::find(slot_names.begin(), slot_names.end(), alias) != slot_names.end()) guess = alias;
    if (!guess.empty()) hint = "Did you mean " + guess + "?";
    if (guess.empty()) {
      for (const auto& other : class_specs()) {
        if (other.name == spec.name) continue;
        for (const auto& s : other.slots) {
          if (s.name == key) {
            hint = spec.name + " has no " + key + " slot; " + other.name + " does. " + spec.name + " takes (" + join(slot_names, ", ") + ").";
            break;
          }
        }
        if (!hint.empty()) break;
      }
    }
    if (hint.empty()) hint = spec.name + " takes (" + join(slot_names, ", ") + ").";
    out.push_back(make(Severity::Error, "unknown_slot", {key}, spec.name + " has no slot named '" + key + "'", hint,
                       "TypeError: __init__() got an unexpected keyword argument '" + key + "'"));
  }
}

void check_slot_values(const ClassSpec& spec, const SlotMap& config, std::vector<Diagnostic>& out) {
  const std::vector<std::string> slot_names = slot_names_of(spec);
  std::vector<std::string> missing;
  for (const auto& slot : spec.slots) {
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
                       "Give " + name + ": " + spec.slots[static_cast<size_t>(position - 1)].doc + ".",
                       "TypeError: __init__() missing " + std::to_string(missing.size()) + " required positional argument" + (missing.size() > 1 ? "s" : "") + ": '" + name + "'"));
  }
}

}  // namespace attention_lab::validator_detail
