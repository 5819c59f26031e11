#include "attention_lab/setup.hpp"

#include <algorithm>

#include "attention_lab/torch_generator.hpp"

namespace attention_lab {

namespace {

Description describe_config(const ModuleConfig& c) {
  Description d;
  d.config = c;
  d.plan = plan_forward(c);
  d.head_dim = c.head_dim();
  d.output_width = c.output_width();
  d.output_width_rule = c.output_width_rule();
  d.python_call = c.python_call();
  d.parameters = parameter_specs(c);
  d.parameter_count = parameter_count(c);
  d.key_value_heads = c.kv_heads();
  d.kv_cache_bytes_per_token = c.kv_cache_bytes_per_token();
  d.kv_cache_bytes_per_token_mha = c.kv_cache_bytes_per_token_mha();
  d.sliding_window_size = c.sliding_window_size;
  d.latent_dim = c.latent_width();
  d.mask_bytes = c.mask_buffer_bytes();
  return d;
}

bool only_dropout_errors(const std::vector<Diagnostic>& ds) {
  return std::all_of(ds.begin(), ds.end(), [](const Diagnostic& d) { return d.severity != Severity::Error || (d.slots.size() == 1 && d.slots[0] == "dropout"); });
}

}  // namespace

Setup make_setup(const std::string& class_name, const SlotMap& config, const SetupOptions& options) {
  Setup s;
  s.class_name = class_name;
  CheckOptions plain;
  plain.memory_budget_bytes = options.memory_budget_bytes;
  s.config_diagnostics = check_config(class_name, config, plain);
  s.valid = !has_error(s.config_diagnostics);
  if (options.input_shape || options.training) {
    CheckOptions with_input = plain;
    with_input.input_shape = options.input_shape;
    with_input.training = options.training;
    s.diagnostics = check_config(class_name, config, with_input);
  } else {
    s.diagnostics = s.config_diagnostics;
  }
  if (s.valid) {
    s.description = describe_config(to_module_config(class_name, config));
    s.memory = MemoryEstimate{plan_bytes(s.description->plan, options.input_shape, options.trace), options.memory_budget_bytes};
  } else if (only_dropout_errors(s.config_diagnostics)) {
    // The sizes are still known when only the dropout slot is wrong: describe them with dropout 0.
    SlotMap sized = config;
    sized["dropout"] = SlotValue::floating(0.0);
    if (!has_error(check_config(class_name, sized, plain))) s.description = describe_config(to_module_config(class_name, sized));
  }
  return s;
}

RunResult run_module(const std::string& class_name, const SlotMap& config, const Tensor& x, const RunOptions& options) {
  CheckOptions check;
  check.memory_budget_bytes = options.memory_budget_bytes;
  RunResult r;
  r.config = validated_config(class_name, config, check);
  TorchGenerator generator(options.seed);
  const AttentionModule module(r.config, generator);
  ForwardOptions fwd;
  fwd.training = options.training;
  fwd.generator = &generator;  // only dropout in training draws from it (as in PyTorch)
  fwd.trace = options.trace ? &r.trace : nullptr;
  fwd.memory_budget_bytes = options.memory_budget_bytes;
  fwd.warnings = &r.warnings;
  fwd.pool = options.pool;
  fwd.stage_views = options.stage_views;
  r.output = module.forward(x, fwd);
  return r;
}

}  // namespace attention_lab
