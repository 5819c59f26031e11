// Session's checkpoint files: a safetensors header parsed once under a handle, the plan of a layer's
// attention and its load into a module, and a layer's input read from the file (block_input).
#include <memory>

#include "attention_lab/check_file.hpp"
#include "attention_lab/gpt2.hpp"
#include "attention_lab/validator.hpp"
#include "session_detail.hpp"

namespace attention_lab {

using namespace session_detail;

// ---- checkpoint files ----

double Session::checkpoint_header_length(const std::vector<uint8_t>& first8, double file_size) const {
  return static_cast<double>(safetensors_header_length(first8.data(), first8.size(), static_cast<uint64_t>(file_size)));
}

OpenedFile Session::checkpoint_open(const std::vector<uint8_t>& header, double file_size) {
  auto parsed = std::make_shared<const SafetensorsHeader>(parse_safetensors_header(header.data(), header.size(), static_cast<uint64_t>(file_size)));
  OpenedFile out{objects_->next++, static_cast<double>(parsed->entries.size()), static_cast<double>(parsed->data_start())};
  objects_->headers[out.handle] = std::move(parsed);
  return out;
}

std::string Session::checkpoint_format(const std::vector<uint8_t>& first, double) const {
  return attention_lab::checkpoint_format(first.data(), first.size()) == CheckpointFormat::Safetensors ? "safetensors" : "torch";
}

std::vector<FileRead> Session::torch_save_reads(const std::map<std::string, std::vector<uint8_t>>& read, double file_size) const {
  std::vector<FileRead> out;
  for (const TorchSaveRead& r : attention_lab::torch_save_reads(read, static_cast<uint64_t>(file_size)))
    out.push_back({r.name, static_cast<double>(r.begin), static_cast<double>(r.end)});
  return out;
}

OpenedFile Session::torch_save_open(const std::map<std::string, std::vector<uint8_t>>& read, double file_size) {
  auto parsed = std::make_shared<const SafetensorsHeader>(open_torch_save(read, static_cast<uint64_t>(file_size)));
  OpenedFile out{objects_->next++, static_cast<double>(parsed->entries.size()), 0.0};
  objects_->headers[out.handle] = std::move(parsed);
  return out;
}

namespace {
CheckpointOptions checkpoint_options(const CheckpointOptionsInput& in) {
  CheckpointOptions o;
  o.layer = whole_option(in.layer, "layer", 0, "checkpoint_layer", 0).value_or(0);
  o.num_heads = whole_option(in.num_heads, "num_heads", 1, "checkpoint_num_heads", 12);
  o.context_length = whole_option(in.context_length, "context_length", 1, "checkpoint_context_length", 1024);
  if (!in.into_class.empty()) o.into = validated_config(in.into_class, in.into_config);
  return o;
}
}  // namespace

CheckpointPlanResult Session::plan_checkpoint(uint32_t file, const CheckpointOptionsInput& options) const {
  const SafetensorsHeader& h = *objects_->header(file);
  const CheckpointPlan plan = plan_gpt2_attention(h, checkpoint_options(options));
  CheckpointPlanResult out;
  for (const auto& e : plan.needed) out.needed.push_back({e.key, static_cast<double>(h.data_start() + e.begin), static_cast<double>(h.data_start() + e.end)});
  out.config = plan.config.slots();
  out.report = plan.report;
  return out;
}

ModuleInfo Session::load_checkpoint(uint32_t file, const CheckpointOptionsInput& options, const std::map<std::string, std::vector<uint8_t>>& buffers, uint32_t into) {
  const SafetensorsHeader& h = *objects_->header(file);
  const CheckpointPlan plan = plan_gpt2_attention(h, checkpoint_options(options));
  AttentionModule loaded = load_gpt2_attention(plan, given(
                                                         plan.needed, [](const SafetensorsEntry& e) -> const std::string& { return e.key; }, buffers));
  ModuleInfo info;
  if (into != 0) {
    AttentionModule& target = objects_->module(into);
    target = std::move(loaded);
    objects_->wrote(into);
    info.config = target.config();
    info.parameter_count = attention_lab::parameter_count(info.config);
  } else {
    info = objects_->keep(std::move(loaded));
  }
  info.report = plan.report;
  return info;
}

std::vector<FileRead> Session::check_file_reads(uint32_t file) const {
  const SafetensorsHeader& h = *objects_->header(file);
  const CheckFilePlan plan = plan_check_file(h);
  if (plan.seed) seed_from(*plan.seed);  // the seed rule, before any tensor is read
  check_file_fits(plan, checked_call(parse_call(plan.call)), kDefaultMemoryBudgetBytes);
  std::vector<FileRead> out;
  for (const SafetensorsEntry& e : plan.reads()) out.push_back({e.key, static_cast<double>(h.data_start() + e.begin), static_cast<double>(h.data_start() + e.end)});
  return out;
}

CheckReport Session::check_file(uint32_t file, const std::map<std::string, std::vector<uint8_t>>& buffers) const {
  const CheckFilePlan plan = plan_check_file(*objects_->header(file));
  const std::optional<uint64_t> seed = plan.seed ? std::optional<uint64_t>(seed_from(*plan.seed)) : std::nullopt;
  const ModuleConfig config = checked_call(parse_call(plan.call));
  check_file_fits(plan, config, kDefaultMemoryBudgetBytes);
  const CheckFileTensors t = read_check_file(plan, buffers);
  return attention_lab::check_module(config, t.state_dict, t.x, t.output, t.stages, kDefaultMemoryBudgetBytes, objects_->pool.get(), seed);
}

std::vector<FileRead> Session::plan_block_input(uint32_t file, const std::vector<double>& ids, const NumberOption& layer) const {
  const SafetensorsHeader& h = *objects_->header(file);
  return file_reads(h, plan_gpt2_block_input(h, ids_from(ids), whole_option(layer, "layer", 0, "checkpoint_layer", 0).value_or(0)));
}

Tensor Session::block_input(uint32_t file, const std::vector<double>& ids, const NumberOption& layer, const std::map<std::string, std::vector<uint8_t>>& buffers) const {
  const SafetensorsHeader& h = *objects_->header(file);
  const std::vector<int64_t> token_ids = ids_from(ids);
  const int64_t L = whole_option(layer, "layer", 0, "checkpoint_layer", 0).value_or(0);
  return gpt2_block_input(h, token_ids, L, bytes_of(plan_gpt2_block_input(h, token_ids, L), buffers));
}

}  // namespace attention_lab
