// What a page needs before and for a run, each in one call: a Setup is computed once per edit
// (diagnostics of the config and of the input, the description, the memory estimate with its budget),
// and a run builds the seeded module and runs its traced forward in one go.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/plan.hpp"
#include "attention_lab/schema.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab {

struct SetupOptions {
  /// The shape of the input the run will get, when known (see CheckOptions::input_shape).
  std::optional<Shape> input_shape;
  /// The mode the module will run in, when known (eval with dropout > 0: dropout_eval).
  std::optional<bool> training;
  /// Whether the run keeps its trace (the estimate counts the traced stages).
  bool trace = true;
  double memory_budget_bytes = kDefaultMemoryBudgetBytes;
};

/// The facts of a configuration a page shows before anything runs (what describe returns).
struct Description {
  ModuleConfig config;  // defaults filled in
  ForwardPlan plan;
  int64_t head_dim = 0;
  int64_t output_width = 0;
  std::string output_width_rule;
  std::string python_call;
  std::vector<ParameterSpec> parameters;  // PyTorch's named_parameters() order
  int64_t parameter_count = 0;
  int64_t key_value_heads = 0;
  double kv_cache_bytes_per_token = 0;      // keys and values of one token, float32 (a latent class: its latent alone, latent_dim x 4)
  double kv_cache_bytes_per_token_mha = 0;  // the same for multi-head attention of the same width
  int64_t latent_dim = 0;                   // the latent keys and values are re-projected from (what its cache stores); 0: none
  int64_t sliding_window_size = 0;          // 0: none
  double mask_bytes = 0;                    // the registered mask buffer, 0 when none
};

/// The memory a module plus a forward on the input needs, the caller's copy of its results included
/// (plan_bytes), and the budget the core checks it against: the one budget (the page reads it here).
struct MemoryEstimate {
  double bytes = 0;
  double budget = kDefaultMemoryBudgetBytes;
};

struct Setup {
  std::string class_name;
  /// The configuration alone (check_config without input or mode): describe's diagnostics.
  std::vector<Diagnostic> config_diagnostics;
  /// The configuration with the input shape and mode of the options (check_config with them): check's.
  std::vector<Diagnostic> diagnostics;
  /// No error among config_diagnostics.
  bool valid = false;
  /// The description; present when valid, or when only the dropout slot is wrong (the sizes are still
  /// known: described with dropout = 0.0, valid stays false).
  std::optional<Description> description;
  /// Present when valid (the module can be built); the module alone without an input shape.
  std::optional<MemoryEstimate> memory;
};

/// Everything a page needs before a run, from one validation of the config and one of the input.
/// Never throws for a bad configuration (its problems are diagnostics).
Setup make_setup(const std::string& class_name, const SlotMap& config, const SetupOptions& options = {});

struct RunOptions {
  /// torch.manual_seed(seed) before the constructor; dropout draws continue from the same generator.
  uint64_t seed = 123;
  bool training = true;
  bool trace = true;
  double memory_budget_bytes = kDefaultMemoryBudgetBytes;
  ThreadPool* pool = nullptr;  // the forward's products (ForwardOptions::pool)
  bool stage_views = false;    // ForwardOptions::stage_views: for a trace kept in memory (read with stage_rows)
};

struct RunResult {
  ModuleConfig config;
  Tensor output;
  std::vector<Stage> trace;          // empty unless RunOptions::trace
  std::vector<Diagnostic> warnings;  // non_finite_stage
};

/// torch.manual_seed(seed); m = ClassName(**config); y = m(x) (m.train(training)), traced: one call.
/// Throws AttentionError: the config's first error (as validated_config), then forward's (check_input).
RunResult run_module(const std::string& class_name, const SlotMap& config, const Tensor& x, const RunOptions& options = {});

}  // namespace attention_lab
