// A check file read as check_module's arguments: see check_file.hpp.
#include "attention_lab/check_file.hpp"

#include "attention_lab/plan.hpp"
#include "attention_lab/text.hpp"

namespace attention_lab {

namespace {

const char* const kSnippet =
    "torch.save({\"call\": \"MultiHeadAttention(768, 768, 1024, 0.0, 12)\", \"state_dict\": mha.state_dict(), \"x\": batch, \"output\": context_vecs, "
    "\"stages\": {\"attn_scores\": s, \"attn_weights\": w, \"context_vec\": c}}, \"check.pt\") (stages optional)";

[[noreturn]] void missing(const std::string& key, const std::string& what) {
  throw AttentionError("check_file", key, "the check file has no " + what, "Save it with the snippet's " + check_file_snippet_line(key) + " (docs/check-module.md).");
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

double bytes_of(const SafetensorsEntry& e) { return static_cast<double>(e.end - e.begin); }

Tensor tensor_of(const SafetensorsEntry& e, const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const auto it = bytes.find(e.key);
  if (it == bytes.end()) throw AttentionError("checkpoint_truncated", e.key, e.key + " could not be read", "Read every range the check file's plan names.");
  const std::vector<uint8_t>& b = it->second;
  Tensor t;
  t.shape = e.shape;
  if (e.dtype == "BOOL" && e.strides.empty() && b.size() == static_cast<size_t>(numel_of(e.shape))) {
    t.data.reserve(b.size());
    for (uint8_t v : b) t.data.push_back(v != 0 ? 1.0f : 0.0f);
    return t;
  }
  t.data = decode_tensor(e, b.data(), b.size());
  return t;
}

}  // namespace

std::string check_file_snippet_line(const std::string& key) {
  if (key == "call") return "\"call\": \"MultiHeadAttention(768, 768, 1024, 0.0, 12)\" (your module's constructor call with its numbers, a string)";
  if (key == "state_dict") return "\"state_dict\": mha.state_dict()";
  if (key == "x") return "\"x\": batch (the input of the forward)";
  if (key == "output") return "\"output\": context_vecs (what mha(batch) returned)";
  if (key == "seed") return "\"seed\": 123 (an int: the seed given to torch.manual_seed right before mha(batch), in training mode)";
  return "\"stages\": {\"attn_scores\": s, \"attn_weights\": w, \"context_vec\": c} (attn_scores.clone() before the mask, attn_weights after softmax and dropout, context_vec "
         "before out_proj)";
}

std::vector<SafetensorsEntry> CheckFilePlan::reads() const {
  std::vector<SafetensorsEntry> out = state_dict;
  out.push_back(x);
  out.push_back(output);
  out.insert(out.end(), stages.begin(), stages.end());
  return out;
}

CheckFilePlan plan_check_file(const SafetensorsHeader& h) {
  if (!h.torch_save)
    throw AttentionError("check_file", "file",
                         "this is a safetensors file, not a check file: a check file is the dict the check snippet saves with torch.save (call, state_dict, x, output, stages)",
                         std::string("In the notebook, run the snippet: ") + kSnippet);
  CheckFilePlan p;
  const auto call = h.metadata.find("call");
  if (call == h.metadata.end()) {
    if (h.find("call") != nullptr)
      throw AttentionError("check_file", "call", "the check file's \"call\" is a tensor, not the constructor call as a string",
                           "Save it as " + check_file_snippet_line("call") + ".");
    missing("call", "\"call\" (a string of at most 4096 bytes: the constructor call)");
  }
  p.call = call->second;
  const SafetensorsEntry* x = h.find("x");
  const SafetensorsEntry* output = h.find("output");
  if (x == nullptr) missing("x", "tensor \"x\"");
  if (output == nullptr) missing("output", "tensor \"output\"");
  p.x = *x;
  p.output = *output;
  for (const SafetensorsEntry& e : h.entries) {
    if (starts_with(e.key, "state_dict.")) p.state_dict.push_back(e);
    if (starts_with(e.key, "stages.")) p.stages.push_back(e);
  }
  if (p.state_dict.empty()) missing("state_dict", "\"state_dict\" (a dict of tensors)");
  if (const auto seed = h.numbers.find("seed"); seed != h.numbers.end()) {
    p.seed = seed->second;
  } else if (h.metadata.count("seed") != 0 || h.find("seed") != nullptr) {
    throw AttentionError("check_file", "seed", std::string("the check file's \"seed\" is ") + (h.find("seed") != nullptr ? "a tensor" : "a string") + ", not an int",
                         "Save it as " + check_file_snippet_line("seed") + ".");
  }
  return p;
}

void check_file_fits(const CheckFilePlan& plan, const ModuleConfig& config, double budget) {
  // the raw bytes and their float32 copies (at most 2x for F16/BF16 bytes, half for F64), then the check's own peak
  double raw = 0, floats = 0;
  for (const SafetensorsEntry& e : plan.reads()) {
    raw += bytes_of(e);
    floats += 4.0 * static_cast<double>(numel_of(e.shape));
  }
  const double bytes = raw + floats + check_bytes(plan_forward(config), plan.x.shape);
  if (bytes > budget)
    throw AttentionError("too_large", "x",
                         "checking " + config.python_call() + " on x " + shape_string(plan.x.shape) + " from this file needs about " + format_g(bytes / 1048576.0, 6) +
                             " MiB, over the " + format_g(budget / 1048576.0, 6) + " MiB budget",
                         "Save fewer tokens or a smaller batch in the check file.");
}

CheckFileTensors read_check_file(const CheckFilePlan& plan, const std::map<std::string, std::vector<uint8_t>>& bytes) {
  CheckFileTensors t;
  const size_t sd = std::string("state_dict.").size(), st = std::string("stages.").size();
  for (const SafetensorsEntry& e : plan.state_dict) t.state_dict.push_back({e.key.substr(sd), tensor_of(e, bytes)});
  for (const SafetensorsEntry& e : plan.stages) t.stages.push_back({e.key.substr(st), tensor_of(e, bytes)});
  t.x = tensor_of(plan.x, bytes);
  t.output = tensor_of(plan.output, bytes);
  return t;
}

}  // namespace attention_lab
