// The fused classes' head rules: d_out shared equally by the heads, the query heads shared equally by
// GroupedQueryAttention's key/value groups, and d_out read as one head's width (the chapter's lesson:
// in MultiHeadAttention d_out is the total the heads share; in MultiHeadAttentionWrapper it is per head).
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "attention_lab/gpt2_sizes.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"
#include "validator_detail.hpp"

namespace attention_lab::validator_detail {

namespace {

/// Head counts that divide d_out, closest to `wanted` first (at most four, listed in increasing order);
/// only multiples of `multiple_of` (GroupedQueryAttention: num_heads must divide into num_kv_groups).
std::vector<int64_t> valid_head_counts(int64_t d_out, int64_t wanted, int64_t multiple_of = 1) {
  std::vector<int64_t> divisors;
  for (int64_t h = 1; h * h <= d_out; ++h) {
    if (d_out % h == 0) {
      if (h % multiple_of == 0) divisors.push_back(h);
      if (h != d_out / h && (d_out / h) % multiple_of == 0) divisors.push_back(d_out / h);
    }
  }
  std::sort(divisors.begin(), divisors.end(), [wanted](int64_t a, int64_t b) {
    const int64_t da = std::llabs(a - wanted), db = std::llabs(b - wanted);
    return da != db ? da < db : a < b;
  });
  if (divisors.size() > 4) divisors.resize(4);
  std::sort(divisors.begin(), divisors.end());
  return divisors;
}

std::string list_numbers(const std::vector<int64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out;
}

/// num_heads x d_out when d_out reads as one head's width: that product is d_in, or it is a GPT-2
/// width (kGpt2Sizes) while d_in and d_out differ; else 0. One head has no per-head width.
int64_t per_head_total(const SlotMap& config, int64_t d_out, int64_t num_heads) {
  if (num_heads < 2 || d_out < 1 || d_out > std::numeric_limits<int64_t>::max() / num_heads) return 0;
  const int64_t total = d_out * num_heads;
  const SlotValue* d_in = find_value(config, "d_in");
  const bool d_in_known = d_in && d_in->is_number();
  if (d_in_known && d_in->number == static_cast<double>(total)) return total;
  if (gpt2_size_of_width(total) && !(d_in_known && d_in->number == static_cast<double>(d_out))) return total;
  return 0;
}

/// The class whose d_out is one head's width: its parameters repeat per head module (the recipe's
/// per_head_modules; MultiHeadAttentionWrapper), or null.
const ClassSpec* per_head_class() {
  for (const ClassSpec& s : class_specs())
    if (s.per_head_modules) return &s;
  return nullptr;
}

/// The two ways to heads `d_out` wide: d_out = total (d_in too when the class needs d_in == d_out),
/// then the per-head class (MultiHeadAttentionWrapper) with the same slots, whose d_out is per head (when the class has them).
std::vector<Fix> per_head_fixes(const ClassSpec& spec, const SlotMap& config, int64_t total) {
  std::vector<Fix> fixes;
  const SlotValue width = SlotValue::integer(static_cast<double>(total));
  if (spec.needs_square.empty())
    fixes.push_back({"d_out", std::to_string(total)});
  else
    fixes = whole_call_fix(spec, config, {{"d_in", width}, {"d_out", width}});
  if (const ClassSpec* wrapper = per_head_class(); wrapper && &spec != wrapper) {
    SlotMap same;
    for (const auto& slot : wrapper->slots) {
      if (!spec.has_slot(slot.name)) return fixes;  // GroupedQueryAttention has no context_length
      if (const SlotValue* v = find_value(config, slot.name)) same[slot.name] = *v;
    }
    for (const Fix& f : whole_call_fix(*wrapper, same, {})) fixes.push_back(f);
  }
  return fixes;
}

/// The lesson, for a hint: what d_out is in this class and how to get heads `d_out` wide.
std::string per_head_lesson(const ClassSpec& spec, const std::vector<Fix>& fixes, int64_t d_out, int64_t num_heads, int64_t total) {
  const std::string n = std::to_string(num_heads), w = std::to_string(d_out);
  std::string text = "In " + spec.name + ", d_out is the width the " + n + " heads share (head_dim = d_out / num_heads), not one head's width. For heads " + w +
                     " wide, write d_out = " + n + " x " + w + " = " + std::to_string(total);
  for (const Fix& f : fixes)
    if (const ClassSpec* wrapper = per_head_class(); wrapper && f.call.rfind(wrapper->name + "(", 0) == 0) text += ", or " + f.call + ", whose d_out is per head";
  return text + ".";
}

}  // namespace

void check_heads_divide(const ClassSpec& spec, const SlotMap& config, const std::vector<Diagnostic>& alone, std::vector<Diagnostic>& out) {
  const SlotValue* d_out_v = find_value(config, "d_out");
  const SlotValue* heads = find_value(config, "num_heads");
  if (spec.heads != HeadsRule::Fused || !d_out_v || !heads || !slot_ok(alone, "d_out") || !slot_ok(alone, "num_heads")) return;
  const int64_t d_out = static_cast<int64_t>(d_out_v->number), num_heads = static_cast<int64_t>(heads->number);
  if (d_out % num_heads == 0) return;
  // GroupedQueryAttention's num_kv_groups, when right on its own: a head count offered must be a multiple of it.
  const SlotValue* groups_v = find_value(config, "num_kv_groups");
  const int64_t groups = spec.has_slot("num_kv_groups") && groups_v && slot_ok(alone, "num_kv_groups") ? static_cast<int64_t>(groups_v->number) : 1;
  // With RoPE a head's width must be even too (rope_head_dim): offer only head counts and widths that give one.
  const bool rope = spec.rope_theta > 0.0;
  const int64_t step = rope ? 2 * num_heads : num_heads;
  const int64_t rem = d_out % step;
  std::vector<int64_t> counts = valid_head_counts(d_out, num_heads, groups);
  if (rope) counts.erase(std::remove_if(counts.begin(), counts.end(), [d_out](int64_t h) { return (d_out / h) % 2 != 0; }), counts.end());
  std::string hint = "Head counts that divide " + std::to_string(d_out) + (groups > 1 ? " (multiples of num_kv_groups = " + std::to_string(groups) + ")" : "") + " near " +
                     std::to_string(num_heads) + ": " + list_numbers(counts) + ".";
  const int64_t lower_d = d_out - rem, upper_d = d_out - rem + step;
  hint += " Or keep " + std::to_string(num_heads) + " heads with d_out = " + (lower_d > 0 ? std::to_string(lower_d) + " or " : "") + std::to_string(upper_d) + ".";
  for (const auto& p : kGpt2Sizes) {
    if (p.n_embd == d_out && p.n_layer == num_heads) {
      const std::string name = std::string("GPT-2 ") + p.name;
      hint = std::to_string(num_heads) + " is " + name + "'s number of layers (n_layer), not its head count: " + name + " has " + std::to_string(p.n_head) +
             " heads of head_dim 64 (" + std::to_string(p.n_head) + " x 64 = " + std::to_string(p.n_embd) + "). " + hint;
    }
  }
  Diagnostic d = make(Severity::Error, "heads_divisibility", {"d_out", "num_heads"},
                      "d_out = " + std::to_string(d_out) + " is not divisible by num_heads = " + std::to_string(num_heads) + " (" + std::to_string(d_out) + " % " +
                          std::to_string(num_heads) + " = " + std::to_string(rem) + "), so the heads cannot share d_out equally",
                      hint, spec.heads_assert);
  // d_out typed as one head's width: the lesson and its two fixes come first, before other head counts.
  if (const int64_t total = per_head_total(config, d_out, num_heads); total > 0 && !(rope && d_out % 2 != 0)) {
    d.fixes = per_head_fixes(spec, config, total);
    d.hint = per_head_lesson(spec, d.fixes, d_out, num_heads, total) + " " + d.hint;
  }
  for (int64_t h : counts) d.fixes.push_back({"num_heads", std::to_string(h)});
  for (int64_t width : lower_d > 0 ? std::vector<int64_t>{lower_d, upper_d} : std::vector<int64_t>{upper_d}) {
    // A class that needs d_in == d_out changes both, or a new d_out would meet that error next.
    if (spec.needs_square.empty()) {
      d.fixes.push_back({"d_out", std::to_string(width)});
    } else {
      const SlotValue w = SlotValue::integer(static_cast<double>(width));
      for (const Fix& f : whole_call_fix(spec, config, {{"d_in", w}, {"d_out", w}})) d.fixes.push_back(f);
    }
  }
  out.push_back(std::move(d));
}

void check_kv_groups_divide(const ClassSpec& spec, const SlotMap& config, const std::vector<Diagnostic>& alone, std::vector<Diagnostic>& out) {
  const SlotValue* heads = find_value(config, "num_heads");
  const SlotValue* groups_v = find_value(config, "num_kv_groups");
  if (!spec.has_slot("num_kv_groups") || !heads || !groups_v || !slot_ok(alone, "num_heads") || !slot_ok(alone, "num_kv_groups")) return;
  const int64_t h = static_cast<int64_t>(heads->number), g = static_cast<int64_t>(groups_v->number);
  if (h % g == 0) return;
  std::vector<int64_t> near = valid_head_counts(h, g);  // divisors of num_heads nearest g
  Diagnostic d = make(Severity::Error, "kv_groups_divisibility", {"num_heads", "num_kv_groups"},
                      "num_heads = " + std::to_string(h) + " is not divisible by num_kv_groups = " + std::to_string(g) + " (" + std::to_string(h) + " % " + std::to_string(g) +
                          " = " + std::to_string(h % g) + "), so the query heads cannot share the key/value heads equally",
                      "Key/value group counts that divide " + std::to_string(h) + " near " + std::to_string(g) + ": " + list_numbers(near) + " (1 is multi-query attention; " +
                          std::to_string(h) + " is plain multi-head attention).",
                      "AssertionError: num_heads must be divisible by num_kv_groups");
  for (int64_t k : near) d.fixes.push_back({"num_kv_groups", std::to_string(k)});
  out.push_back(std::move(d));
}

void check_d_out_per_head(const ClassSpec& spec, const SlotMap& config, const ModuleConfig& c, std::vector<Diagnostic>& out) {
  if (spec.heads != HeadsRule::Fused) return;
  const int64_t total = per_head_total(config, c.d_out, c.num_heads);
  if (total == 0) return;
  const std::string n = std::to_string(c.num_heads), w = std::to_string(c.d_out);
  Diagnostic d = make(Severity::Warning, "d_out_per_head", {"d_out", "num_heads"},
                      "d_out = " + w + " looks like one head's width, but " + spec.name + "'s " + n + " heads share it: each head is " + w + " / " + n + " = " +
                          std::to_string(c.d_out / c.num_heads) + " wide, and the output is " + w + " wide, not " + std::to_string(total),
                      "");
  d.fixes = per_head_fixes(spec, config, total);
  d.hint = per_head_lesson(spec, d.fixes, c.d_out, c.num_heads, total);
  out.push_back(std::move(d));
}

void check_rope_head_dim(const ClassSpec& spec, const SlotMap& config, const std::vector<Diagnostic>& alone, std::vector<Diagnostic>& out) {
  const SlotValue* d_out_v = find_value(config, "d_out");
  const SlotValue* heads = find_value(config, "num_heads");
  if (!(spec.rope_theta > 0.0) || !d_out_v || !heads || !slot_ok(alone, "d_out") || !slot_ok(alone, "num_heads")) return;
  const int64_t d_out = static_cast<int64_t>(d_out_v->number), num_heads = static_cast<int64_t>(heads->number);
  if (d_out % num_heads != 0 || (d_out / num_heads) % 2 == 0) return;  // heads_divisibility says the first
  const int64_t head_dim = d_out / num_heads;
  // Fixes that keep the other slot: half the heads (when that is whole), or a d_out one head_dim wider per head.
  Diagnostic d = make(Severity::Error, "rope_head_dim", {"d_out", "num_heads"},
                      "head_dim = d_out / num_heads = " + std::to_string(d_out) + " / " + std::to_string(num_heads) + " = " + std::to_string(head_dim) +
                          " is odd: RoPE rotates each head's first half against its second, so head_dim must be even",
                      "Give each head an even width: d_out = " + std::to_string(d_out + num_heads) + " (head_dim " + std::to_string(head_dim + 1) + ")" +
                          (num_heads % 2 == 0 ? ", or num_heads = " + std::to_string(num_heads / 2) + " (head_dim " + std::to_string(2 * head_dim) + ")" : "") + ".",
                      spec.rope_assert);
  if (num_heads % 2 == 0) d.fixes.push_back({"num_heads", std::to_string(num_heads / 2)});
  d.fixes.push_back({"d_out", std::to_string(d_out + num_heads)});
  out.push_back(std::move(d));
}

}  // namespace attention_lab::validator_detail
