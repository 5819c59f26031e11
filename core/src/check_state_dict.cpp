// A reader's state dict loaded into the book's class for checkModule: every key and shape checked at
// once, each problem named with the copy rule that fixes it.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "attention_lab/check_module.hpp"
#include "attention_lab/diagnostics.hpp"
#include "attention_lab/text.hpp"
#include "module_impl.hpp"

namespace attention_lab {

namespace {

struct Problem {
  std::string code, key, text, fix;
};

const NamedTensor* find(const std::vector<NamedTensor>& list, const std::string& name) {
  for (const NamedTensor& t : list)
    if (t.name == name) return &t;
  return nullptr;
}

/// A mask buffer: its shape must be the book's (context_length, context_length); values other than
/// the causal mask's are noted (the check's mask catalogue entries say what they do).
void check_mask(const ModuleConfig& c, const NamedTensor& m, std::vector<Problem>& problems, std::vector<std::string>* notes) {
  const int64_t n = c.context_length;
  if (m.tensor.shape != Shape{n, n} || static_cast<int64_t>(m.tensor.data.size()) != n * n) {
    problems.push_back({"mask_buffer", m.name, m.name + " has shape " + shape_string(m.tensor.shape) + "; context_length = " + std::to_string(n) + " gives " + shape_string({n, n}),
                        "Pass the context_length the module was built with in the call."});
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float want = j > i ? 1.0f : 0.0f, got = m.tensor.data[static_cast<size_t>(i * n + j)];
      if (got == want) continue;
      if (notes)
        notes->push_back(m.name + "[" + std::to_string(i) + ", " + std::to_string(j) + "] is " + format_g(got, 6) + ", the book's torch.triu(torch.ones(" + std::to_string(n) +
                         ", " + std::to_string(n) + "), diagonal=1) has " + format_g(want, 1) + ": the check runs the book's mask (the mask causes try the others)");
      return;
    }
}

/// `key` without a per-head module's "heads.<h>." prefix ("" when it has none).
std::string without_head(const std::string& key) {
  if (key.rfind("heads.", 0) != 0) return "";
  size_t i = 6;
  while (i < key.size() && std::isdigit(static_cast<unsigned char>(key[i]))) ++i;
  return i > 6 && i < key.size() && key[i] == '.' ? key.substr(i + 1) : "";
}

/// A key of the other layout of heads: a per-head module's heads.<h>.W_query.weight given to a class
/// that holds every head's rows in one W_query.weight, or that one name given to per-head modules.
Problem other_heads_layout(const std::string& key, const std::vector<std::string>& names) {
  const std::string text = key + " is not a parameter or buffer of this class";
  const std::string fix = " of a module built with this call, or check it with the call of the class that saved it";
  const std::string bare = without_head(key);
  if (!bare.empty() && std::find(names.begin(), names.end(), bare) != names.end())
    return {"unknown_parameter", key, text + " (a per-head module's name, as MultiHeadAttentionWrapper's; this class holds every head's rows in one " + bare + ")",
            "Save the state dict" + fix + "."};
  for (const std::string& n : names)
    if (without_head(n) == key)
      return {"unknown_parameter", key,
              text + " (it keeps each head's under heads.<h>.: " + n + ", ...; one " + key + " for every head is a fused class's, as MultiHeadAttention's)",
              "Save the state dict" + fix + "."};
  return {};
}

/// A given key the class has no parameter for: v1's (d_in, d_out) matrix given to an nn.Linear
/// class, or the reverse, is named with the transpose that converts it.
Problem extra_key(const std::string& key, const std::vector<ParameterSpec>& specs, const std::vector<NamedTensor>& given) {
  std::vector<std::string> names;
  for (const ParameterSpec& s : specs) names.push_back(s.name);
  const std::string text = key + " is not a parameter or buffer of this class";
  if (std::find(names.begin(), names.end(), key + ".weight") != names.end() && find(given, key + ".weight") == nullptr)
    return {"unknown_parameter", key, text + " (SelfAttention_v1's (d_in, d_out) matrix; nn.Linear stores its transpose)",
            "Copy it transposed: state_dict[\"" + key + ".weight\"] = state_dict.pop(\"" + key + "\").T"};
  const std::string bare = key.size() > 7 && key.compare(key.size() - 7, 7, ".weight") == 0 ? key.substr(0, key.size() - 7) : "";
  if (!bare.empty() && std::find(names.begin(), names.end(), bare) != names.end() && find(given, bare) == nullptr)
    return {"unknown_parameter", key, text + " (an nn.Linear weight (d_out, d_in); this class holds the (d_in, d_out) matrix)",
            "Copy it transposed: state_dict[\"" + bare + "\"] = state_dict.pop(\"" + key + "\").T"};
  if (const Problem heads = other_heads_layout(key, names); !heads.code.empty()) return heads;
  const std::string guess = did_you_mean(key, names);
  return {"unknown_parameter", key, text, guess.empty() ? "Leave it out of the state dict, or check the class in the call." : "Did you mean " + guess + "?"};
}

Problem wrong_shape(const ParameterSpec& spec, const Tensor& t) {
  const Shape& want = spec.shape;
  const std::string text = spec.name + " has shape " + shape_string(t.shape) + "; " + spec.name + " of this call has " + shape_string(want);
  if (t.shape.size() == 2 && want.size() == 2 && t.shape[0] == want[1] && t.shape[1] == want[0])
    return {"parameter_shape", spec.name, text + ": transposed", "Copy it transposed: state_dict[\"" + spec.name + "\"] = state_dict[\"" + spec.name + "\"].T"};
  return {"parameter_shape", spec.name, text, "Check the call's sizes (d_in, d_out, num_heads) against the module that saved the state dict."};
}

}  // namespace

std::vector<NamedTensor> check_state_dict(const ModuleConfig& c, const std::vector<NamedTensor>& given, std::vector<std::string>* notes) {
  std::vector<std::string> buffers;
  if (c.recipe().mask_buffer_bytes > 0)
    for (int64_t h = 0; h < module_count(c); ++h) buffers.push_back(head_prefix(c, h) + "mask");
  const std::vector<ParameterSpec> specs = parameter_specs(c);
  std::vector<Problem> problems;
  std::vector<NamedTensor> parameters;
  for (const NamedTensor& t : given) {
    const auto spec = std::find_if(specs.begin(), specs.end(), [&](const ParameterSpec& s) { return s.name == t.name; });
    if (std::find(buffers.begin(), buffers.end(), t.name) != buffers.end())
      check_mask(c, t, problems, notes);
    else if (spec == specs.end())
      problems.push_back(extra_key(t.name, specs, given));
    else if (spec->shape != t.tensor.shape)
      problems.push_back(wrong_shape(*spec, t.tensor));
    else
      parameters.push_back(t);
  }
  for (const ParameterSpec& s : specs)
    if (find(given, s.name) == nullptr) {
      const bool v1 = s.name.size() > 7 && s.name.compare(s.name.size() - 7, 7, ".weight") == 0 && find(given, s.name.substr(0, s.name.size() - 7)) != nullptr;
      const bool v2 = find(given, s.name + ".weight") != nullptr;
      if (!v1 && !v2)  // else named with its copy rule by extra_key
        problems.push_back({"missing_parameter", s.name, s.name + " " + shape_string(s.shape) + " is not in the state dict",
                            "Save the whole module.state_dict() of a module built with the same call."});
    }
  if (problems.empty()) return parameters;
  std::string text = "the state dict does not fit " + c.python_call() + ": ";
  for (size_t i = 0; i < problems.size() && i < 6; ++i) text += (i ? "; " : "") + problems[i].text;
  if (problems.size() > 6) text += "; and " + std::to_string(problems.size() - 6) + " more";
  throw AttentionError(problems[0].code, problems[0].key, text, problems[0].fix);
}

}  // namespace attention_lab
