// Typed construction: a struct per attention class (typed_classes.hpp, written from the recipe list),
// its members the constructor's slots in the Python signature's order, so that the book's call
//   torch.manual_seed(123); mha = MultiHeadAttention(3, 2, 6, 0.0, 2)
// reads in C++ as
//   TorchGenerator generator(123);
//   AttentionModule mha(validated_config(typed::MultiHeadAttention{3, 2, 6, 0.0, 2}), generator);
// A slot's name and type are checked when it compiles (d_inn, a float d_in, an int qkv_bias or a
// missing required slot do not compile); its value goes through the same validation as a SlotMap
// (validated_config, check_config: the same codes, messages and hints), and the module is the same.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/schema.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab::typed {

/// An Int slot's value (d_in, d_out, context_length, num_heads, num_kv_groups): any integer type. A
/// floating-point value or a bool does not compile; a value below 1 is refused by the validator
/// (non_positive), as from a SlotMap.
class Int {
 public:
  /// @param v the size, e.g. 768
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  constexpr Int(T v) : value_(static_cast<double>(v)) {}  // NOLINT(google-explicit-constructor): {3, 2, 6} reads as the Python call
  /// The value as a SlotMap holds it.
  SlotValue slot() const { return SlotValue::integer(value_); }

 private:
  double value_;
};

/// A Float slot's value (dropout): a number; an integer is read as Python reads dropout=0. A bool does
/// not compile; a value outside [0, 1] is refused by the validator (dropout_range).
class Float {
 public:
  /// @param v the probability, e.g. 0.1
  constexpr Float(double v) : value_(v), integer_(false) {}  // NOLINT(google-explicit-constructor)
  /// @param v a whole number (0 or 1), kept as an int as Python keeps dropout=0
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  constexpr Float(T v) : value_(static_cast<double>(v)), integer_(true) {}  // NOLINT(google-explicit-constructor)
  Float(bool) = delete;
  /// The value as a SlotMap holds it.
  SlotValue slot() const { return integer_ ? SlotValue::integer(value_) : SlotValue::floating(value_); }

 private:
  double value_;
  bool integer_;
};

/// A Bool slot's value (qkv_bias, need_weights): true or false only (an int does not compile).
class Bool {
 public:
  /// @param v True or False
  constexpr Bool(bool v) : value_(v) {}  // NOLINT(google-explicit-constructor)
  template <typename T, std::enable_if_t<!std::is_same_v<T, bool>, int> = 0>
  Bool(T) = delete;
  /// The value as a SlotMap holds it.
  SlotValue slot() const { return SlotValue::boolean_value(value_); }

 private:
  bool value_;
};

/// An OptionalInt slot's value (sliding_window_size, latent_dim): an integer, or std::nullopt for
/// Python's None (what None stands for is the slot's NoneRule in the recipe).
class OptionalInt {
 public:
  /// @param v the size, e.g. 4
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  constexpr OptionalInt(T v) : value_(static_cast<double>(v)) {}  // NOLINT(google-explicit-constructor)
  /// None
  constexpr OptionalInt(std::nullopt_t) {}  // NOLINT(google-explicit-constructor)
  /// The value as a SlotMap holds it.
  SlotValue slot() const { return value_ ? SlotValue::integer(*value_) : SlotValue::none(); }

 private:
  std::optional<double> value_;
};

/// A Dtype slot's value (GroupedQueryAttention's dtype): std::nullopt for None, or Dtype::float32()
/// for torch.float32 (every number here is float32).
class Dtype {
 public:
  /// None: PyTorch's default dtype, float32
  constexpr Dtype(std::nullopt_t) {}  // NOLINT(google-explicit-constructor)
  /// torch.float32
  static Dtype float32() { return Dtype("torch.float32"); }
  /// The value as a SlotMap holds it.
  SlotValue slot() const { return expression_ ? SlotValue::expression(expression_) : SlotValue::none(); }

 private:
  explicit constexpr Dtype(const char* expression) : expression_(expression) {}
  const char* expression_ = nullptr;
};

/// A slot with a default in the Python signature: left out (or `{}`), it takes the recipe's default
/// (the validator fills it in, as for a SlotMap without the key); given, it holds a T.
template <typename T>
class Defaulted {
 public:
  /// Left out: the recipe's default.
  constexpr Defaulted() = default;
  /// @param v the value, converted as T converts it (what does not convert to T does not compile)
  template <typename U, std::enable_if_t<std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, Defaulted>, int> = 0>
  constexpr Defaulted(U&& v) : value_(T(std::forward<U>(v))) {}  // NOLINT(google-explicit-constructor)
  /// Whether a value was given.
  bool given() const { return value_.has_value(); }
  /// The value given (call given() first).
  const T& value() const { return *value_; }

 private:
  std::optional<T> value_;
};

/// Adds slot `name` to `slots` (a Defaulted one only when given).
template <typename T>
void put(SlotMap& slots, const char* name, const T& value) {
  slots[name] = value.slot();
}
/// Adds slot `name` to `slots` when given.
template <typename T>
void put(SlotMap& slots, const char* name, const Defaulted<T>& value) {
  if (value.given()) slots[name] = value.value().slot();
}

/// Whether T is one of the typed class structs (has `class_name` and `slots()`).
template <typename T, typename = void>
struct is_typed_config : std::false_type {};
template <typename T>
struct is_typed_config<T, std::void_t<decltype(T::class_name), decltype(std::declval<const T&>().slots())>> : std::true_type {};

}  // namespace attention_lab::typed

namespace attention_lab {

/// check_config of a typed struct: every diagnostic of its slots, never throws.
/// @param config e.g. typed::MultiHeadAttention{3, 2, 6, 0.0, 2}
/// @param options the input shape and mode, when known (as for check_config)
template <typename Typed, std::enable_if_t<typed::is_typed_config<Typed>::value, int> = 0>
std::vector<Diagnostic> check_config(const Typed& config, const CheckOptions& options = {}) {
  return check_config(Typed::class_name, config.slots(), options);
}

/// validated_config of a typed struct: the ModuleConfig an AttentionModule is built from, the same as
/// validated_config(Typed::class_name, config.slots()). Throws AttentionError with the first error's
/// code, slot, message and hint (non_positive, dropout_range, heads_divisibility, too_large, ...).
/// @param config e.g. typed::MultiHeadAttention{3, 2, 6, 0.0, 2}
/// @param options the input shape and mode, when known (as for check_config)
template <typename Typed, std::enable_if_t<typed::is_typed_config<Typed>::value, int> = 0>
ModuleConfig validated_config(const Typed& config, const CheckOptions& options = {}) {
  return validated_config(Typed::class_name, config.slots(), options);
}

}  // namespace attention_lab

#include "attention_lab/typed_classes.hpp"  // IWYU pragma: export
