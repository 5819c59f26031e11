#include "attention_lab/schema.hpp"
#include "attention_lab/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace attention_lab {

SlotValue SlotValue::integer(double v, std::string text) { return {Kind::Int, v, false, std::move(text)}; }
SlotValue SlotValue::floating(double v, std::string text) { return {Kind::Float, v, false, std::move(text)}; }
SlotValue SlotValue::boolean_value(bool v) { return {Kind::Bool, 0.0, v, v ? "True" : "False"}; }
SlotValue SlotValue::none() { return {Kind::None, 0.0, false, "None"}; }
SlotValue SlotValue::string(std::string s) { return {Kind::String, 0.0, false, std::move(s)}; }
SlotValue SlotValue::expression(std::string source) { return {Kind::Expression, 0.0, false, std::move(source)}; }

namespace {
std::string format_number(double v, bool as_float) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (!as_float && std::fabs(v) < 1e15 && v == std::floor(v)) {
    return std::to_string(static_cast<long long>(v));
  }
  // Python's repr of a float: shortest text that round-trips; %.17g is long, so try widths.
  for (int precision = 1; precision <= 17; ++precision) {
    std::string s = format_g(v, precision);
    // strtod, not std::stod: stod throws out_of_range on subnormals such as 1e-320.
    if (std::strtod(s.c_str(), nullptr) == v) {
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
  }
  return std::to_string(v);
}
}  // namespace

std::string SlotValue::python() const {
  switch (kind) {
    case Kind::Int:
      return format_number(number, false);
    case Kind::Float:
      return format_number(number, true);
    case Kind::Bool:
      return boolean ? "True" : "False";
    case Kind::None:
      return "None";
    case Kind::String:
      return "'" + text + "'";
    case Kind::Expression:
      return text;
  }
  return "";
}

const char* slot_type_name(SlotType t) {
  switch (t) {
    case SlotType::Int:
      return "int";
    case SlotType::Float:
      return "float";
    case SlotType::Bool:
      return "bool";
    case SlotType::OptionalInt:
      return "int | None";
    case SlotType::Dtype:
      return "torch.dtype | None";
  }
  return "";
}

const char* heads_rule_name(HeadsRule k) {
  switch (k) {
    case HeadsRule::Single:
      return "single";
    case HeadsRule::Modules:
      return "modules";
    case HeadsRule::Fused:
      return "fused";
  }
  return "";
}

const char* mask_rule_name(MaskRule m) {
  switch (m) {
    case MaskRule::None:
      return "none";
    case MaskRule::CausalBuffer:
      return "causal_buffer";
    case MaskRule::CausalTokens:
      return "causal_tokens";
    case MaskRule::InvertedBuffer:
      return "inverted_buffer";
  }
  return "";
}

const char* dropout_rule_name(DropoutRule d) {
  switch (d) {
    case DropoutRule::None:
      return "none";
    case DropoutRule::Weights:
      return "weights";
    case DropoutRule::Ignored:
      return "ignored";
  }
  return "";
}

std::vector<std::string> ClassSpec::input_axes() const { return batched ? std::vector<std::string>{"b", "num_tokens", "d_in"} : std::vector<std::string>{"num_tokens", "d_in"}; }

bool ClassSpec::queries_in_out() const {
  for (const auto& p : params)
    if (p.role == Role::Query || p.role == Role::Qkv) return p.layout == Layout::InOut;
  return false;
}

bool ClassSpec::latent() const {
  for (const auto& p : params)
    if (p.role == Role::LatentDown) return true;
  return false;
}

bool ClassSpec::has_slot(std::string_view slot) const {
  for (const auto& s : slots)
    if (s.name == slot) return true;
  return false;
}

std::string ClassSpec::source() const {
  if (!book.section.empty()) return book.section;
  return "chapter " + book.chapter + " bonus, " + book.folder + (book.file.empty() ? "" : "/" + book.file);
}

const ClassSpec* find_class(std::string_view name) {
  for (const auto& spec : class_specs())
    if (spec.name == name) return &spec;
  return nullptr;
}

const ClassSpec& checkpoint_class() {
  for (const auto& spec : class_specs())
    if (spec.loads_checkpoints) return spec;
  return class_specs().front();
}

ModuleConfig ModuleConfig::of(std::string_view class_name) {
  const ClassSpec* spec = find_class(class_name);
  if (spec == nullptr) throw AttentionError("unknown_class", "", "there is no class named '" + std::string(class_name) + "'", "");
  ModuleConfig c;
  c.spec = spec;
  return c;
}

int64_t ModuleConfig::size(Dim d) const {
  switch (d) {
    case Dim::One:
      return 1;
    case Dim::DIn:
      return d_in;
    case Dim::DOut:
      return d_out;
    case Dim::KvWidth:
      return kv_heads() * head_dim();
    case Dim::ThreeDOut:
      return 3 * d_out;
    case Dim::Latent:
      return latent_width();
  }
  return 0;
}

int64_t ModuleConfig::latent_width() const {
  if (!spec->latent()) return 0;
  if (latent_dim > 0) return latent_dim;
  for (const SlotSpec& slot : spec->slots) {
    if (slot.name != "latent_dim" || slot.none_means.slot.empty()) continue;
    const NoneRule& rule = slot.none_means;
    const SlotMap values = slots();
    const auto it = values.find(rule.slot);
    const int64_t of = it == values.end() ? 0 : static_cast<int64_t>(it->second.number);
    return std::max(rule.at_least, rule.divisor > 0 ? of / rule.divisor : of);  // Python's max(at_least, of // divisor) for sizes >= 0
  }
  return 0;
}

double ModuleConfig::kv_cache_bytes_per_token() const {
  if (spec->latent()) return static_cast<double>(latent_width()) * 4.0;
  return 2.0 * static_cast<double>(kv_heads()) * static_cast<double>(head_dim()) * 4.0;
}

double ModuleConfig::kv_cache_bytes_per_token_mha() const { return 2.0 * static_cast<double>(output_width()) * 4.0; }

int64_t ModuleConfig::extra_kv_tokens() const {
  int64_t n = 0;
  for (const auto& p : spec->params)
    if (p.role == Role::BiasK && (p.presence == Presence::Always || qkv_bias)) ++n;
  return n;
}

int64_t ModuleConfig::head_dim() const { return fused_heads() && num_heads > 0 ? d_out / num_heads : d_out; }

int64_t ModuleConfig::kv_heads() const {
  if (spec->has_slot("num_kv_groups")) return num_kv_groups;
  return spec->heads == HeadsRule::Single ? 1 : num_heads;
}

int64_t ModuleConfig::output_width() const { return spec->width == WidthRule::HeadsTimesDOut ? num_heads * d_out : d_out; }

std::string ModuleConfig::output_width_rule() const {
  using std::to_string;
  if (spec->width == WidthRule::HeadsTimesDOut) return "num_heads x d_out = " + to_string(num_heads) + " x " + to_string(d_out) + " = " + to_string(output_width());
  if (spec->heads != HeadsRule::Fused) return "d_out = " + to_string(d_out);
  const int64_t kv = kv_heads();
  if (kv != num_heads)
    return "d_out = " + to_string(d_out) + ", shared by " + to_string(num_heads) + (num_heads == 1 ? " query head" : " query heads") + " of " + to_string(head_dim()) +
           " (keys and values: " + to_string(kv) + (kv == 1 ? " head" : " heads") + " of " + to_string(head_dim()) + ")";
  const std::string latent = spec->latent() ? " (keys and values re-projected from a latent of " + to_string(latent_width()) + ")" : "";
  return "d_out = " + to_string(d_out) + ", shared by " + to_string(num_heads) + (num_heads == 1 ? " head" : " heads") + " of " + to_string(head_dim()) + latent;
}

SlotMap ModuleConfig::slots() const {
  SlotMap m;
  for (const SlotSpec& slot : spec->slots) {
    const std::string& n = slot.name;
    if (n == "d_in")
      m[n] = SlotValue::integer(static_cast<double>(d_in));
    else if (n == "d_out")
      m[n] = SlotValue::integer(static_cast<double>(d_out));
    else if (n == "context_length")
      m[n] = SlotValue::integer(static_cast<double>(context_length));
    else if (n == "dropout")
      m[n] = SlotValue::floating(dropout);
    else if (n == "num_heads")
      m[n] = SlotValue::integer(static_cast<double>(num_heads));
    else if (n == "num_kv_groups")
      m[n] = SlotValue::integer(static_cast<double>(num_kv_groups));
    else if (n == "qkv_bias")
      m[n] = SlotValue::boolean_value(qkv_bias);
    else if (n == "dtype")
      m[n] = SlotValue::none();
    else if (n == "need_weights")
      m[n] = SlotValue::boolean_value(need_weights);
    else if (n == "sliding_window_size")
      m[n] = sliding_window_size > 0 ? SlotValue::integer(static_cast<double>(sliding_window_size)) : SlotValue::none();
    else if (n == "latent_dim")
      m[n] = latent_dim > 0 ? SlotValue::integer(static_cast<double>(latent_dim)) : SlotValue::none();
  }
  return m;
}

std::string ModuleConfig::python_call() const {
  // Required slots positionally; a slot with a default only when it differs, as a keyword.
  const ClassSpec& spec = *this->spec;
  const SlotMap values = slots();
  std::string out = spec.python_class() + "(";
  bool first = true;
  for (const auto& slot : spec.slots) {
    const SlotValue& v = values.at(slot.name);
    if (slot.default_value) {
      if (v.python() != slot.default_value->python())
        out += std::string(first ? "" : ", ") + slot.name + "=" + v.python();
      else
        continue;
    } else {
      out += (first ? "" : ", ") + v.python();
    }
    first = false;
  }
  return out + ")";
}

}  // namespace attention_lab
