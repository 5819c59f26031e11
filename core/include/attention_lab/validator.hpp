// The slot validator: every diagnostic of a configuration at once, never throws.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/schema.hpp"

namespace attention_lab {

/// Bytes a module plus a traced forward may hold at its peak, its JS results included (plan_bytes): the
/// one budget of the core, the facade and the page, which read it from Setup::memory (the WebAssembly
/// heap tops out at 4 GB, and the results' copies live beside it).
constexpr double kDefaultMemoryBudgetBytes = 1.5 * 1024.0 * 1024.0 * 1024.0;

struct CheckOptions {
  /// The shape of the input that will be given to forward, when known: (num_tokens, d_in) for the
  /// SelfAttention classes, (b, num_tokens, d_in) for the others.
  std::optional<Shape> input_shape;
  /// The mode the module will run in, when known: eval mode with dropout > 0 draws a dropout_eval warning.
  std::optional<bool> training;
  /// Bytes a module plus a traced forward may use; larger setups are refused before allocating.
  double memory_budget_bytes = kDefaultMemoryBudgetBytes;
};

/// Checks `config` (slot name -> value) against `class_name`'s constructor. Codes:
/// unknown_class, unknown_slot, missing_slot, wrong_type, not_a_literal, dropout_range,
/// non_positive, heads_divisibility, slots_swapped, too_large, input_rank, input_width,
/// input_empty, context_too_short (errors); layer_count_as_heads, wrapper_total_width, d_out_per_head, one_head,
/// bool_as_int, square_weights, dropout_eval, dropout_all (dropout = 1.0: accepted as PyTorch does) (warnings/info).
std::vector<Diagnostic> check_config(const std::string& class_name, const SlotMap& config, const CheckOptions& options = {});

/// check_config, then the typed config. Throws AttentionError with the first error's code, slot,
/// message and hint when there is an error diagnostic.
ModuleConfig validated_config(const std::string& class_name, const SlotMap& config, const CheckOptions& options = {});

/// Converts without checking (defaults filled in); call check_config first.
ModuleConfig to_module_config(const std::string& class_name, const SlotMap& config);

/// Input-shape checks alone (rank, width, num_tokens vs context_length); appended to `out`.
void check_input_shape(const ModuleConfig& config, const Shape& input_shape, std::vector<Diagnostic>& out);

/// Bytes of float32 that the parameters, and a traced forward on `input_shape` (when given) with the
/// caller's copy of its results, need: plan_bytes of the config's plan.
double estimate_bytes(const ModuleConfig& config, const std::optional<Shape>& input_shape, bool trace = true);

}  // namespace attention_lab
