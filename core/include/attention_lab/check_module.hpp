// Checking a reader's own attention module against the book's: the state dict loaded into the book's
// class (names and shapes checked, each problem named with the copy rule that fixes it), the book's
// forward run on the reader's x, the reader's output and stages compared with it, and the catalogue of
// mistakes readers report, each a variant of the book's forward with one pass altered, tried to see
// which one reproduces the reader's tensors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/plan.hpp"
#include "attention_lab/schema.hpp"
#include "attention_lab/tensor.hpp"

namespace attention_lab {

/// A cause's two lines, as the reader's class writes them (the recipe's SourceSpelling and the plan).
struct CauseLines {
  std::string line;  // the line with the mistake (the PyTorch to question)
  std::string fix;   // the book's line
};

/// One mistake of the catalogue (core/src/check_catalogue.cpp): the book's forward with one pass
/// altered, through the plan (alter_plan: the scale, the mask, the softmax, the head split or merge,
/// out_proj) or through the projection pass's operators (alter_weights: what the pass multiplies by).
struct Mistake {
  const char* id;     // "scale_d_out"
  const char* title;  // the mistake, in the book's words
  /// The line as readers of the class write it and the book's line (check_lines.cpp): the class's own
  /// variables, projections and mask, not chapter 3's.
  CauseLines (*lines)(const ForwardPlan& book);
  const char* source;  // public reports of it (repository#number, ...)
  /// Whether the class has the step (and the variant differs from the book's forward on it).
  bool (*applies)(const ForwardPlan& book);
  /// The pass altered through the plan; null: the plan is the book's.
  void (*alter_plan)(ForwardPlan& plan);
  /// The projection's operators substituted: the state dict the variant multiplies by; null: the reader's.
  void (*alter_weights)(const ForwardPlan& book, std::vector<NamedTensor>& parameters);
  /// Tried only in a check with a seed (the dropout mistakes: their draws are reproduced from it alone).
  bool seeded = false;
};

/// The catalogue, in the order the issue lists it.
const std::vector<Mistake>& mistake_catalogue();

/// A catalogue entry that applies to the class, and whether its variant reproduces the reader's
/// output and every given stage (check_tensors_agree).
struct CheckCause {
  std::string id, title, line, fix, source;
  bool explains = false;
};

/// Where the reader's tensor first leaves the book's, with the values around it side by side: the row
/// of the last axis that holds the first value out of tolerance (row-major order), at most
/// kDifferenceWindow values of it.
struct CheckDifference {
  std::string stage;               // a stage id of check_stage_ids(), or "output"
  std::vector<std::string> axes;   // the tensor's axes, named ("b", "num_heads", "num_tokens", "num_keys", ...)
  Shape shape;                     // the tensor's shape
  Shape index;                     // the first differing value's index, one per axis
  int64_t from = 0;                // the last axis's index of yours[0] and book[0]
  std::vector<float> yours, book;  // the row around it: the reader's values and the book's
};

/// How many values of the differing row CheckDifference shows.
inline constexpr int64_t kDifferenceWindow = 8;

struct CheckReport {
  std::string class_name;                     // the book's class checked against (its id, as lab.classes names it)
  std::string call;                           // its Python call, every slot as PyTorch takes it (ModuleConfig::python_call)
  std::optional<uint64_t> seed;               // the seed the check ran the forwards from (training mode); none: eval mode
  bool agree = false;                         // the reader's output is the book's (check_tensors_agree)
  double max_abs_diff = 0;                    // max |reader - book| over the output where both are finite; infinity where NaN sits elsewhere
  std::optional<std::string> first_stage;     // the first given stage, then "output", whose tensor leaves the book's; none when none does
  std::optional<CheckDifference> difference;  // first_stage's first differing value, yours and the book's side by side
  std::vector<CheckCause> causes;
  std::vector<std::string> notes;  // what the state dict's buffers hold (a mask other than the book's is named here); dropout that may be acting
};

/// The tolerance of a check: |reader - book| <= kCheckTolerance * (1 + |book|) (1e-5 absolute near 0).
inline constexpr double kCheckTolerance = 1e-5;

/// Whether `reader` equals `book` within kCheckTolerance, NaN exactly where the book has NaN (shapes
/// equal; checked by the caller), and the largest difference (see CheckReport::max_abs_diff).
bool check_tensors_agree(const Tensor& reader, const Tensor& book, double* max_abs_diff = nullptr);

/// Whether one reader value equals the book's (the rule of check_tensors_agree, value by value).
bool check_values_agree(float reader, float book);

/// The stages a reader may give, in forward order: attn_scores (before the mask), attn_weights
/// (after softmax and dropout: the trace's attn_weights_dropout where the class has dropout),
/// context_vec (the heads merged, before out_proj).
const std::vector<std::string>& check_stage_ids();

/// The parameters of `state_dict` for the book's class, buffers left out (a mask buffer must have the
/// shape (context_length, context_length); one whose values are not the book's causal mask gets a
/// note). Every problem is named at once: AttentionError missing_parameter, unknown_parameter,
/// parameter_shape or mask_buffer (the first problem's code and key), its hint the copy rule that
/// fixes it (`.T` for a transposed shape, SelfAttention_v1's W_query vs nn.Linear's W_query.weight).
std::vector<NamedTensor> check_state_dict(const ModuleConfig& config, const std::vector<NamedTensor>& state_dict, std::vector<std::string>* notes);

/// Bytes a check of `plan` on x of `x_shape` needs at its peak: the module and one traced forward with
/// its results (plan_bytes), a second module for a variant with altered weights, and two copies of the
/// parameters (the checked state dict's, a variant's).
double check_bytes(const ForwardPlan& plan, const Shape& x_shape);

/// The check. `stages`: any of check_stage_ids(), each of the shape the book's forward gives it.
/// `seed`: the reader called torch.manual_seed(seed) right before the forward, module in training mode:
/// the book's forward and every variant run in training, dropout drawing from a TorchGenerator seeded
/// with it (fresh for each), and the seeded entries (the dropout mistakes) are tried too. None: eval
/// mode; then a class with dropout > 0 whose output disagrees gets a note (dropout may be acting: the
/// module left in training mode) saying how to check with a seed.
/// Throws AttentionError, in this order: forward's checks of x (check_input: its shape, too_large,
/// non_finite_input), too_large (check_bytes over `memory_budget_bytes`, before anything is allocated),
/// check_state_dict's, check_tensor (output or a stage of another shape, or an unknown stage id; names
/// it and the shape expected with its axes).
/// `pool`: the forwards' products run on it (the same bits with any pool, or none).
CheckReport check_module(const ModuleConfig& config, const std::vector<NamedTensor>& state_dict, const Tensor& x, const Tensor& output, const std::vector<NamedTensor>& stages,
                         double memory_budget_bytes = kDefaultMemoryBudgetBytes, ThreadPool* pool = nullptr, std::optional<uint64_t> seed = std::nullopt);

}  // namespace attention_lab
