// The rules that read a caller's plain values for every Session call (session_detail.hpp): sizes and
// shapes, seeds, whole-number options, token ids, copy plans, the bytes of a read; and the public
// tensor_from_input and slot_value_of_* of session.hpp.
#include <cmath>

#include "attention_lab/text.hpp"
#include "session_detail.hpp"

namespace attention_lab {

namespace {

/// A size: a whole number in [0, 2**31).
bool is_size(double x) { return x >= 0 && x == std::floor(x) && x < 2147483648.0; }

/// Why `x` is not a size (", below 0", ...), or "" when it is one: each refusal says what it saw.
std::string not_a_size(double x) {
  if (std::isnan(x)) return " is NaN, not a number";
  if (x < 0) return " is " + format_number(x) + ", below 0";
  if (std::isfinite(x) && x != std::floor(x)) return " is " + format_number(x) + ", not a whole number";
  if (!is_size(x)) return " is " + format_number(x) + ", over the largest size here, 2,147,483,647 (2**31 - 1)";
  return "";
}

/// "from 1" or "from 0 to 3".
std::string range_text(double lowest, double highest) { return "from " + format_number(lowest) + (highest < session_detail::kLargestCount ? " to " + format_number(highest) : ""); }

/// Most token ids one call reads (a GPT-2 context is 1,024; the facade passes at most one more).
constexpr size_t kMaxTokenIds = 100000;

const std::string& read_name(const ByteRead& r) { return r.name; }

}  // namespace

namespace session_detail {

Shape shape_from_input(const std::vector<double>& sizes, const std::string& what) {
  if (sizes.size() > kMaxTensorAxes)
    throw AttentionError("tensor_shape", what, what + " has " + std::to_string(sizes.size()) + " axes", "Tensors here have at most " + std::to_string(kMaxTensorAxes) + " axes.");
  // "x.shape[0]", but "shape[0]" and "inputShape[0]" for a shape given alone.
  const bool is_shape = what.size() >= 5 && (what.compare(what.size() - 5, 5, "shape") == 0 || what.compare(what.size() - 5, 5, "Shape") == 0);
  Shape shape;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (const std::string why = not_a_size(sizes[i]); !why.empty())
      throw AttentionError("tensor_shape", what, what + (is_shape ? "[" : ".shape[") + std::to_string(i) + "]" + why, "Sizes are whole numbers from 0 to 2,147,483,647.");
    shape.push_back(static_cast<int64_t>(sizes[i]));
  }
  return shape;
}

uint64_t seed_from(double seed) {
  if (!(seed == std::floor(seed) && seed >= kLowestSeed && seed <= kHighestSeed)) {  // NaN and infinities fail too
    const std::string highest = std::to_string(static_cast<int64_t>(kHighestSeed));
    throw AttentionError("seed", "seed", "the seed must be a whole number from -" + highest + " to " + highest + " (2**53 - 1), got " + format_number(seed),
                         "torch.manual_seed takes an int, e.g. 123.");
  }
  return seed < 0 ? static_cast<uint64_t>(static_cast<int64_t>(seed)) : static_cast<uint64_t>(seed);
}

std::optional<Shape> optional_shape(const std::optional<std::vector<double>>& sizes) {
  if (!sizes) return std::nullopt;
  return shape_from_input(*sizes, "inputShape");
}

int64_t whole_number(double x, const std::string& name, double lowest, double highest, const char* code, const std::string& hint) {
  if (x >= lowest && x <= highest && x == std::floor(x)) return static_cast<int64_t>(x);
  throw AttentionError(code, name, name + " must be a whole number " + range_text(lowest, highest) + ", got " + format_number(x), hint);
}

std::string given_as(const NumberOption& v) { return v.number ? "a number" : v.boolean ? "a boolean" : "a string"; }

std::optional<int64_t> whole_option(const NumberOption& v, const char* key, double lowest, const char* code, int64_t example) {
  if (!v.given) return std::nullopt;
  const std::string hint = "Pass a whole number, for example {" + std::string(key) + ": " + std::to_string(example) + "}.";
  if (!v.number) throw AttentionError(code, key, std::string(key) + " must be a whole number " + range_text(lowest, kLargestCount) + ", got " + given_as(v), hint);
  return whole_number(v.value, key, lowest, kLargestCount, code, hint);
}

std::vector<int64_t> ids_from(const std::vector<double>& ids) {
  if (ids.size() > kMaxTokenIds)
    throw AttentionError("too_large", "tokens", "more than " + with_commas(static_cast<double>(kMaxTokenIds)) + " token ids",
                         "A GPT-2 context holds 1,024 tokens; give at most that many.");
  std::vector<int64_t> out;
  out.reserve(ids.size());
  for (size_t t = 0; t < ids.size(); ++t) {
    const double x = ids[t];
    std::string why;
    if (std::isnan(x))
      why = "NaN, not a number";
    else if (!std::isfinite(x) || std::fabs(x) > 9007199254740992.0)
      why = format_number(x) + ", far outside any vocabulary";
    else if (x != std::floor(x))
      why = format_number(x) + ", not a whole number";
    if (!why.empty()) throw AttentionError("checkpoint_token", "tokens", "token " + std::to_string(t) + " is " + why, "Token ids are whole numbers, e.g. 15496 for \"Hello\".");
    out.push_back(static_cast<int64_t>(x));
  }
  return out;
}

CopyPlan plan_from(const std::vector<PlanEntryInput>& entries) {
  CopyPlan plan;
  for (const auto& e : entries) {
    if (!e.object)
      throw AttentionError("copy_plan", e.name, "the copy plan entry for '" + e.name + "' must be {copy, transpose}", "For example {W_query: {copy: true, transpose: true}}.");
    plan[e.name] = {e.copy, e.transpose};
  }
  return plan;
}

const Buffers& bytes_of(const std::vector<ByteRead>& reads, const Buffers& buffers) { return given(reads, read_name, buffers); }

std::vector<FileRead> file_reads(const SafetensorsHeader& h, const std::vector<ByteRead>& reads) {
  std::vector<FileRead> out;
  for (const auto& r : reads) out.push_back({r.name, static_cast<double>(h.data_start() + r.entry.begin), static_cast<double>(h.data_start() + r.entry.end)});
  return out;
}

}  // namespace session_detail

SlotValue slot_value_of_number(double v) { return std::isfinite(v) && v == std::floor(v) ? SlotValue::integer(v) : SlotValue::floating(v); }

SlotValue slot_value_of_text(const std::string& text) { return parse_literal(text); }

Tensor tensor_from_input(TensorInput t, const std::string& what) {
  Shape shape = session_detail::shape_from_input(t.shape, what);
  int64_t numel = 0;
  const bool fits = checked_numel(shape, numel);  // false when the product overflows 64 bits
  if (!fits || static_cast<double>(numel) != static_cast<double>(t.data.size()))
    throw AttentionError(
        "tensor_size", what,
        what + " has shape " + shape_string(shape) + " (" + std::to_string(static_cast<long long>(numel)) + " values) but data holds " + std::to_string(t.data.size()),
        "Give exactly as many values as the product of the shape, row-major.");
  return Tensor(std::move(shape), std::move(t.data));
}

}  // namespace attention_lab
