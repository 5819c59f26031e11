// The validator's shared pieces, for its source files only (not part of the public headers).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/schema.hpp"

namespace attention_lab::validator_detail {

Diagnostic make(Severity severity, std::string code, std::vector<std::string> slots, std::string message, std::string hint, std::string pytorch = "");

std::string join(const std::vector<std::string>& items, const std::string& sep);

/// True when `v` is a finite whole number.
bool integral(double v);

const SlotValue* find_value(const SlotMap& config, const std::string& name);

/// True when no error among `diags` names `slot`.
bool slot_ok(const std::vector<Diagnostic>& diags, const std::string& slot);

/// Values typed into the wrong slots, put right: the whole call with `moved` in place of the given
/// values, as a Fix (a slot fixed alone would leave the others wrong), or none when a required slot is
/// missing from the call or holds no value, or the moved slots would still be wrong. A slot in `moved`
/// set to nullopt takes its default back.
std::vector<Fix> whole_call_fix(const ClassSpec& spec, const SlotMap& config, const std::vector<std::pair<std::string, std::optional<SlotValue>>>& moved);

/// unknown_class: no class of the book is named `class_name` (with the likely one, when there is one).
Diagnostic unknown_class(const std::string& class_name);

/// Each slot on its own (validator_slots.cpp): unknown_slot for keys the class has no slot for;
/// then each given value's type and range, and missing_slot for each required slot not given. Appends to `out`.
void check_slot_names(const ClassSpec& spec, const SlotMap& config, std::vector<Diagnostic>& out);
void check_slot_values(const ClassSpec& spec, const SlotMap& config, std::vector<Diagnostic>& out);

/// Slots given in another class's order (validator_order.cpp): mha_slot_order, or slots_swapped for
/// dropout and num_heads; the shifted slots' own errors give way to it. Appends to `out`.
void check_slot_order(const ClassSpec& spec, const SlotMap& config, std::vector<Diagnostic>& out);

/// The fused classes' head rules, once d_out, num_heads and num_kv_groups are each right on their own
/// (`alone`: the diagnostics so far): heads_divisibility (d_out % num_heads) and
/// kv_groups_divisibility (GroupedQueryAttention's num_heads % num_kv_groups). Appends to `out`.
void check_heads_divide(const ClassSpec& spec, const SlotMap& config, const std::vector<Diagnostic>& alone, std::vector<Diagnostic>& out);
void check_kv_groups_divide(const ClassSpec& spec, const SlotMap& config, const std::vector<Diagnostic>& alone, std::vector<Diagnostic>& out);
/// rope_head_dim: a class with RoPE (rope_theta > 0) whose head_dim = d_out / num_heads is odd, once the
/// heads divide d_out (RoPE rotates the two halves of each head). Appends to `out`.
void check_rope_head_dim(const ClassSpec& spec, const SlotMap& config, const std::vector<Diagnostic>& alone, std::vector<Diagnostic>& out);

/// The warning d_out_per_head for a valid fused setup whose d_out reads as one head's width
/// (MultiHeadAttention(512, 64, 256, 0.0, 8): heads 8 wide, output 64). Appends to `out`.
void check_d_out_per_head(const ClassSpec& spec, const SlotMap& config, const ModuleConfig& c, std::vector<Diagnostic>& out);

}  // namespace attention_lab::validator_detail
