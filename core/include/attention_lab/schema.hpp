// The attention classes: the five of the book's chapter 3 and two of its chapter 4 bonus material
// (GroupedQueryAttention, MultiHeadAttentionWithSWA), their constructor slots, and typed configs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention_lab/tensor.hpp"

namespace attention_lab {

enum class ClassKind { SelfAttentionV1, SelfAttentionV2, CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention, GroupedQueryAttention, MultiHeadAttentionWithSWA };

/// Int, Float, Bool; OptionalInt: an int or None (sliding_window_size); Dtype: None or torch.float32
/// (GroupedQueryAttention's dtype: numbers here are float32, PyTorch's default).
enum class SlotType { Int, Float, Bool, OptionalInt, Dtype };

/// A value as typed in a slot (from a parsed call, a form field or a JS object).
struct SlotValue {
  enum class Kind { Int, Float, Bool, None, String, Expression };
  Kind kind = Kind::None;
  double number = 0.0;   // Int and Float
  bool boolean = false;  // Bool
  std::string text;      // as written (String: the string's content; Expression: the source text)

  static SlotValue integer(double v, std::string text = "");
  static SlotValue floating(double v, std::string text = "");
  static SlotValue boolean_value(bool v);
  static SlotValue none();
  static SlotValue string(std::string s);
  static SlotValue expression(std::string source);

  /// How Python would print it: 768, 0.0, 0.5, True, None, 'text'.
  std::string python() const;
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
};

/// Slot values by slot name; keys may include names the class does not have (they are diagnosed).
using SlotMap = std::map<std::string, SlotValue>;

/// One constructor slot: `position` is 1-based, as in the Python signature.
struct SlotSpec {
  std::string name;
  int position;
  SlotType type;
  std::optional<SlotValue> default_value;  // nullopt: required
  std::string doc;
};

/// How a class makes its heads: one head (SelfAttention_v1/v2, CausalAttention), a list of separate
/// modules concatenated (the wrapper), or one projection split into heads (fused MultiHeadAttention).
enum class HeadsKind { Single, Modules, Fused };
const char* heads_kind_name(HeadsKind k);  // "single", "modules", "fused"

/// A ready setup the page offers for a class: slot texts as typed, which tokens, and why it is so.
struct Preset {
  std::string key;                                         // stable id, e.g. "gpt2Small"; the page's strings table names it
  std::vector<std::pair<std::string, std::string>> slots;  // slot name -> text, in call order
  std::string tokens;                                      // "book" (the chapter's six 3-d tokens) or "sentence" (seeded embeddings of d_in)
  int batch = 2;
  std::string note;  // what to know about it (e.g. why qkv_bias is False)
  int order = 0;     // place among every class's presets, as a page lists them (the book's examples first)
};

/// Stages agree when no value differs by more than this (compare, weight copies; PyTorch fixtures).
constexpr double kAgreementTolerance = 1e-6;

struct ClassSpec {
  ClassKind kind;
  std::string name;
  std::vector<SlotSpec> slots;
  std::string doc;
  /// Book section the class comes from.
  std::string source;
  /// The axes of the input forward takes, e.g. {"b", "num_tokens", "d_in"} (row-major).
  std::vector<std::string> input_axes = {};
  HeadsKind heads = HeadsKind::Single;
  std::vector<Preset> presets = {};
  /// The variable the book's listings (and the page's PyTorch code) give a module: "sa_v1", "mha", ...
  std::string python_name = "";
  /// The seed the book calls torch.manual_seed with before building one (exercise 3.1: 789 for v2).
  int64_t book_seed = 123;
  /// How W_query/W_key/W_value are stored: "matrix" (nn.Parameter (d_in, d_out), x @ W) or "linear"
  /// (nn.Linear, weight (d_out, d_in), x @ W.T + b).
  std::string weights = "linear";
  /// Classes copy_weights takes this class's matrices to (exercise 3.1: v1 <-> v2).
  std::vector<std::string> copies_with = {};
  /// The class equivalent_config converts to (wrapper <-> fused MultiHeadAttention), "" when none.
  std::string converts_to = "";
  /// Whether a GPT-2 checkpoint layer loads into this class (plan_gpt2_attention builds one).
  bool loads_checkpoints = false;
};

/// The classes in the book's order: chapter 3's five, then the chapter 4 bonus classes.
const std::vector<ClassSpec>& class_specs();
/// nullptr when no class has that name. Accepts `nn.`/`torch.nn.` prefixes? No: exact names only.
const ClassSpec* find_class(std::string_view name);
const ClassSpec& class_spec(ClassKind kind);
const char* slot_type_name(SlotType t);

/// A validated configuration (see validator.hpp). Fields a class does not have keep their defaults:
/// `context_length` 0 (the bonus classes have none: their mask is built for the tokens given),
/// `dropout` 0.0, `num_heads` 1, `num_kv_groups` 0 (= one key/value head per query head),
/// `sliding_window_size` 0 (None: plain causal).
struct ModuleConfig {
  ClassKind kind = ClassKind::SelfAttentionV1;
  int64_t d_in = 0;
  int64_t d_out = 0;
  int64_t context_length = 0;
  double dropout = 0.0;
  int64_t num_heads = 1;
  bool qkv_bias = false;
  int64_t num_kv_groups = 0;
  int64_t sliding_window_size = 0;

  const std::string& class_name() const { return class_spec(kind).name; }
  bool batched() const { return kind != ClassKind::SelfAttentionV1 && kind != ClassKind::SelfAttentionV2; }
  bool causal() const { return batched(); }
  bool has_dropout() const { return batched(); }
  /// Whether the class has a context_length slot (a mask buffer built at construction).
  bool has_context_length() const { return batched() && kind != ClassKind::GroupedQueryAttention && kind != ClassKind::MultiHeadAttentionWithSWA; }
  /// One projection per q/k/v split into heads, merged, then out_proj (MHA and the bonus classes).
  bool fused_heads() const { return kind == ClassKind::MultiHeadAttention || kind == ClassKind::GroupedQueryAttention || kind == ClassKind::MultiHeadAttentionWithSWA; }
  /// Key/value heads: num_kv_groups for GroupedQueryAttention, else one per query head.
  int64_t kv_heads() const;
  /// Bytes a KV cache holds per token and layer in float32: keys and values, kv_heads() x head_dim each.
  double kv_cache_bytes_per_token() const { return 2.0 * static_cast<double>(kv_heads()) * static_cast<double>(head_dim()) * 4.0; }
  /// d_k of the 1/sqrt(d_k) scaling: d_out, or d_out / num_heads for the fused classes.
  int64_t head_dim() const;
  /// Last axis of the output: num_heads * d_out for the wrapper, else d_out.
  int64_t output_width() const;
  /// The sentence that derives the width, e.g. "num_heads x d_out = 2 x 1 = 2".
  std::string output_width_rule() const;
  /// The slots of this class with their values (Python call order).
  SlotMap slots() const;
  /// `MultiHeadAttention(768, 768, 1024, 0.0, 12)`: positional form, trailing defaults omitted.
  std::string python_call() const;
};

}  // namespace attention_lab
