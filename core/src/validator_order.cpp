// Slots given in another class's order: MultiHeadAttention's (d_in, d_out, context_length, dropout,
// num_heads) pasted into a class with other slots, and dropout and num_heads swapped. Each is one mistake,
// said once with the call put right, instead of an error per shifted slot.
#include <algorithm>
#include <cstdlib>

#include "attention_lab/validator.hpp"
#include "validator_detail.hpp"

namespace attention_lab::validator_detail {

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

/// The 1-based position of a slot, or 0 when the class has none.
int slot_position(const ClassSpec& spec, const std::string& slot) {
  for (const auto& s : spec.slots)
    if (s.name == slot) return s.position;
  return 0;
}

/// The per-slot errors of the slots a shifted order fills: they are that one mistake, said once.
void drop_slot_errors(const std::vector<std::string>& shifted, std::vector<Diagnostic>& out) {
  out.erase(
      std::remove_if(out.begin(), out.end(), [&](const Diagnostic& e) { return e.slots.size() == 1 && std::find(shifted.begin(), shifted.end(), e.slots[0]) != shifted.end(); }),
      out.end());
}

/// The bonus classes have no context_length: MultiHeadAttention's order pasted into them puts
/// context_length in the dropout slot, dropout in num_heads, num_heads in the next slot.
bool check_mha_order_no_context_slot(const ClassSpec& spec, const SlotMap& config, std::vector<Diagnostic>& out) {
  const SlotValue* dropout = find_value(config, "dropout");
  const SlotValue* heads = find_value(config, "num_heads");
  const bool no_context_slot = std::none_of(spec.slots.begin(), spec.slots.end(), [](const SlotSpec& s) { return s.name == "context_length"; }) &&
                               std::any_of(spec.slots.begin(), spec.slots.end(), [](const SlotSpec& s) { return s.name == "num_heads"; });
  const SlotSpec* after_heads = nullptr;
  for (size_t i = 0; i + 1 < spec.slots.size(); ++i)
    if (spec.slots[i].name == "num_heads") after_heads = &spec.slots[i + 1];
  const SlotValue* next = after_heads ? find_value(config, after_heads->name) : nullptr;
  const bool mha_order = no_context_slot && dropout && heads && next && dropout->is_number() && heads->is_number() && next->is_number() && dropout->number >= 1 &&
                         integral(dropout->number) && heads->number >= 0 && heads->number < 1 && next->number >= 1 && integral(next->number);
  if (!mha_order) return false;
  std::string call = spec.name + "(";
  for (const char* name : {"d_in", "d_out"})
    if (const SlotValue* v = find_value(config, name)) call += v->python() + ", ";
  // The slot after num_heads takes its default back; num_kv_groups has none: a count dividing the heads.
  std::optional<SlotValue> after_value = after_heads->default_value;
  if (!after_value) after_value = SlotValue::integer(static_cast<double>(kv_groups_for(static_cast<int64_t>(next->number))));
  std::vector<Fix> fixes = whole_call_fix(spec, config, {{"dropout", *heads}, {"num_heads", SlotValue::integer(next->number)}, {after_heads->name, after_value}});
  call = fixes.empty() ? call + heads->python() + ", " + SlotValue::integer(next->number).python() + ")" : fixes[0].call;
  Diagnostic d = make(Severity::Error, "mha_slot_order", {"dropout", "num_heads"},
                      "slot 3 of " + spec.name + " is dropout; " + dropout->python() + ", " + heads->python() + ", " + next->python() +
                          " looks like MultiHeadAttention's order (d_in, d_out, context_length, dropout, num_heads)",
                      spec.name + " has no context_length (its causal mask is built for the tokens given): drop " + dropout->python() + " and write " + call + ".",
                      "ZeroDivisionError: float modulo");
  d.fixes = fixes;
  drop_slot_errors({"dropout", "num_heads", after_heads->name}, out);
  out.push_back(std::move(d));
  return true;
}

/// The bonus order (d_in, d_out, num_heads, context_length, dropout) given MultiHeadAttention's
/// (d_in, d_out, context_length, dropout, num_heads): num_heads gets the context, and so on.
bool check_mha_order_heads_first(const ClassSpec& spec, const SlotMap& config, std::vector<Diagnostic>& out) {
  const SlotValue* dropout = find_value(config, "dropout");
  const SlotValue* heads = find_value(config, "num_heads");
  const SlotValue* context = find_value(config, "context_length");
  const bool mha_order = context && dropout && heads && slot_position(spec, "num_heads") < slot_position(spec, "context_length") && heads->is_number() && context->is_number() &&
                         dropout->is_number() && integral(heads->number) && heads->number >= 1 && context->number >= 0 && context->number < 1 && integral(dropout->number) &&
                         dropout->number >= 1;
  if (!mha_order) return false;
  const std::string n = SlotValue::integer(dropout->number).python(), ctx = SlotValue::integer(heads->number).python(), p = context->python();
  std::string call = spec.name + "(";
  for (const char* name : {"d_in", "d_out"})
    if (const SlotValue* v = find_value(config, name)) call += v->python() + ", ";
  call += n + ", " + ctx + ", " + p + ")";
  Diagnostic d = make(Severity::Error, "mha_slot_order", {"num_heads", "context_length", "dropout"},
                      "slots 3-5 of " + spec.name + " are (num_heads, context_length, dropout); " + heads->python() + ", " + context->python() + ", " + dropout->python() +
                          " looks like MultiHeadAttention's order (context_length, dropout, num_heads)",
                      "Write " + call + ", or use keywords.", "ValueError: dropout probability has to be between 0 and 1, but got " + dropout->python());
  d.fixes = whole_call_fix(spec, config, {{"num_heads", SlotValue::integer(dropout->number)}, {"context_length", SlotValue::integer(heads->number)}, {"dropout", *context}});
  drop_slot_errors({"dropout", "num_heads", "context_length"}, out);
  out.push_back(std::move(d));
  return true;
}

/// dropout (slot 4) and num_heads (slot 5) swapped: an int >= 1 where the probability goes and a
/// probability where the head count goes.
void check_dropout_heads_swapped(const ClassSpec& spec, const SlotMap& config, std::vector<Diagnostic>& out) {
  const SlotValue* dropout = find_value(config, "dropout");
  const SlotValue* heads = find_value(config, "num_heads");
  if (!(dropout && heads && dropout->is_number() && heads->is_number() && dropout->number >= 1 && integral(dropout->number) && heads->number >= 0 && heads->number < 1)) return;
  out.push_back(make(Severity::Error, "slots_swapped", {"dropout", "num_heads"}, "dropout = " + dropout->python() + " and num_heads = " + heads->python() + " look swapped",
                     "The order is (d_in, d_out, context_length, dropout, num_heads): write " + heads->python() + " before " + SlotValue::integer(dropout->number).python() +
                         ", or use keywords: dropout=" + heads->python() + ", num_heads=" + SlotValue::integer(dropout->number).python() + ".",
                     "ValueError: dropout probability has to be between 0 and 1, but got " + dropout->python()));
  out.back().fixes = whole_call_fix(spec, config, {{"dropout", *heads}, {"num_heads", SlotValue::integer(dropout->number)}});
}

}  // namespace

void check_slot_order(const ClassSpec& spec, const SlotMap& config, std::vector<Diagnostic>& out) {
  if (check_mha_order_no_context_slot(spec, config, out)) return;
  if (check_mha_order_heads_first(spec, config, out)) return;
  check_dropout_heads_swapped(spec, config, out);
}

}  // namespace attention_lab::validator_detail
