// Row-major float32 tensors and the library's one error type.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace attention_lab {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for the empty shape). Throws AttentionError "tensor_shape" for a
/// negative size and "too_large" when the product does not fit in 64 bits.
int64_t numel_of(const Shape& shape);
/// numel_of without throwing: false for a negative size or a product past int64.
bool checked_numel(const Shape& shape, int64_t& n);

/// "(2, 6, 3)": the shape as PyTorch prints a torch.Size, without the word.
std::string shape_string(const Shape& shape);

/// A dense row-major float32 tensor: `data.size() == numel_of(shape)`.
struct Tensor {
  Shape shape;
  std::vector<float> data;

  Tensor() = default;
  /// Zeros of the given shape.
  explicit Tensor(Shape s);
  /// Throws AttentionError("tensor_size") when data does not fit the shape.
  Tensor(Shape s, std::vector<float> values);

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  /// Size of axis `axis`; negative counts from the end (as in PyTorch).
  int64_t size(int axis) const;
  int rank() const { return static_cast<int>(shape.size()); }
  /// The value at `index`, one entry per axis (as x[0, 5, 1] in PyTorch; negative counts from the
  /// end). Throws AttentionError "tensor_axis" (slot "index") for an index with another rank than the
  /// tensor's or out of an axis' range.
  float at(const Shape& index) const;
};

/// A tensor of `shape` holding a copy of the numel_of(shape) floats at `values`, read row-major (the
/// last axis varies fastest): e.g. a (b, num_tokens, d_in) input from a caller's buffer. Throws
/// AttentionError "tensor_shape" for a negative size, "tensor_size" when `values` is null and the shape
/// is not empty.
Tensor tensor_from(const float* values, Shape shape);

/// The tensor as PyTorch prints it (`print(t)`), in fixed point with `decimals` digits after the
/// point: "tensor([[0.3190, 0.4858],\n        [0.2943, 0.3897]])", columns right-aligned to the widest
/// value, a blank line between the blocks of a rank-3 tensor. (PyTorch switches to scientific notation
/// when the values span more than 1000x; this never does.)
std::string tensor_string(const Tensor& t, int decimals = 4);

/// What a reader sees of a whole tensor at a glance: min, max and mean of its finite values (NaN when
/// there are none), how many are -inf (masked scores) and how many are exactly 0 (masked weights).
struct TensorSummary {
  double min = 0.0, max = 0.0, mean = 0.0;
  int64_t neg_inf = 0, zeros = 0, count = 0;
};
TensorSummary summarize(const Tensor& t);
/// The summary of each slice over the last two axes (one per (b, head) of a (b, H, T, T) stage; one in
/// all for a rank-2 tensor), and in `whole` the summary of the tensor, in the same single pass.
std::vector<TensorSummary> summarize_slices(const Tensor& t, TensorSummary& whole);

/// Where the first NaN or infinity of `values` (n floats, row-major in `shape`) is, as "[1, 2]" and
/// its value ("nan", "inf", "-inf"); "" when every value is finite.
std::string first_non_finite(const float* values, size_t n, const Shape& shape);

/// A tensor with its PyTorch name (`W_query.weight`, `heads.0.W_key.bias`, ...).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// The most axes a tensor crossing the library boundary may have (the trace's have at most 4).
inline constexpr unsigned kMaxTensorAxes = 8;

/// Runtime misuse of the library (a bad tensor, an unknown parameter name, a config with errors).
/// `code` is stable and machine-readable; `slot` names the constructor slot or argument involved
/// ("" when none); `hint` says how to fix it.
class AttentionError : public std::runtime_error {
 public:
  AttentionError(std::string code, std::string slot, const std::string& message, std::string hint)
      : std::runtime_error(message), code_(std::move(code)), slot_(std::move(slot)), hint_(std::move(hint)) {}
  const std::string& code() const { return code_; }
  const std::string& slot() const { return slot_; }
  const std::string& hint() const { return hint_; }

 private:
  std::string code_;
  std::string slot_;
  std::string hint_;
};

}  // namespace attention_lab
