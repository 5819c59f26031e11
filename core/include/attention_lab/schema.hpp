// The attention classes as recipes (data): the book's chapter 3 classes, its bonus ways to write
// multi-head attention and its chapter 4 bonus classes (class_specs() lists them); their slots and
// validated configs.
#pragma once

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention_lab/tensor.hpp"

namespace attention_lab {

/// Int, Float, Bool; OptionalInt: an int or None (sliding_window_size, latent_dim); Dtype: None or torch.float32
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

/// What None in an OptionalInt slot stands for: nothing (sliding_window_size=None: no window), or a
/// size the constructor derives from another slot, max(at_least, slot // divisor) (the book's
/// MultiHeadLatentAttention: latent_dim = max(16, d_out // 8)).
struct NoneRule {
  std::string slot;  // "" when None is a value of its own
  int64_t divisor = 1;
  int64_t at_least = 0;
};

/// One constructor slot: `position` is 1-based, as in the Python signature.
struct SlotSpec {
  std::string name;
  int position;
  SlotType type;
  std::optional<SlotValue> default_value;  // nullopt: required
  std::string doc;
  NoneRule none_means = {};
};

/// How a class makes its heads: one head (SelfAttention_v1/v2, CausalAttention), a list of separate
/// modules concatenated (the wrapper), or projections split into heads (MultiHeadAttention and every
/// class built like it). One spelling in every layer: the plan, the recipe and the facade's `heads`.
enum class HeadsRule { Single, Modules, Fused };
const char* heads_rule_name(HeadsRule k);  // "single", "modules", "fused"

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

// ---- The recipe: what a class is, as data -------------------------------------------------------

/// A size a parameter's shape is made of, from the slots.
enum class Dim { One, DIn, DOut, KvWidth /* num_kv_groups x head_dim */, ThreeDOut /* 3 x d_out */, Latent /* latent_dim */ };

/// What a parameter feeds in the forward. `Qkv` is a packed matrix whose rows are the queries', then
/// the keys', then the values' (nn.Linear(d_in, 3 * d_out), nn.MultiheadAttention's in_proj).
/// `LatentDown` projects x to a latent c_kv (nn.Linear(d_in, latent_dim): what a latent KV cache
/// stores), and `KeyUp` / `ValueUp` re-project the latent to the keys and the values
/// (nn.Linear(latent_dim, d_out)) in place of Key / Value from x (multi-head latent attention).
/// `Gate` projects x to an output gate (nn.Linear(d_in, d_out)): the merged heads are multiplied by
/// sigmoid(x @ W.T + b) before the output projection (gated attention).
enum class Role { Query, Key, Value, Qkv, Out, Proj, BiasK, BiasV, LatentDown, KeyUp, ValueUp, Gate };

/// How a parameter is stored: (out, in) used as x @ W.T (nn.Linear), (in, out) used as x @ W
/// (nn.Parameter used with @ or einsum "bnd,do->bno"), a vector (a bias), or one extra key/value
/// token (1, 1, E) appended to the keys or values (nn.MultiheadAttention's add_bias_kv).
enum class Layout { OutIn, InOut, Vector, Token };

/// When a parameter exists.
enum class Presence { Always, WithQkvBias };

/// How construction fills a parameter (torch.nn.init under torch.manual_seed), in draw order:
/// Rand (torch.rand), Randn (torch.randn: draws consumed; a later step overwrites the values),
/// KaimingUniform (kaiming_uniform_(a=sqrt 5): nn.Linear's weight, bound from fan_in), FanInUniform
/// (uniform_(-1/sqrt(fan), 1/sqrt(fan)), fan = fan_in of `fan_of`: nn.Linear's bias),
/// XavierUniform, XavierNormal (fans from the shape as torch's _calculate_fan_in_and_fan_out),
/// Zeros (no draws).
enum class Init { Rand, Randn, KaimingUniform, FanInUniform, XavierUniform, XavierNormal, Zeros };

struct ParamRecipe {
  std::string name;  // PyTorch's name; the wrapper's per-head names get "heads.{h}." in front
  Role role;
  Layout layout;
  Dim rows;  // shape (rows, cols) for OutIn/InOut, (rows) for Vector, (1, 1, rows) for Token
  Dim cols = Dim::One;
  Presence presence = Presence::Always;
};
struct InitStep {
  std::string param;
  Init init;
  std::string fan_of = "";  // FanInUniform: the weight whose fan_in gives the bound
};

/// The attention mask: none; the book's causal buffer triu(ones(context_length, context_length), 1)
/// cut to the tokens; causal built for the tokens given (with sliding_window_size when the class has
/// it); the buffer passed where PyTorch reads True as "attend" (a reproduced bug: each query sees only
/// later keys, and the last query none: NaN).
enum class MaskRule { None, CausalBuffer, CausalTokens, InvertedBuffer };
/// Dropout on the attention weights: none, nn.Dropout / the dropout_p of PyTorch's attention
/// functions, or a dropout slot the forward never uses (FlexAttention has no dropout).
enum class DropoutRule { None, Weights, Ignored };
const char* mask_rule_name(MaskRule m);        // "none", "causal_buffer", "causal_tokens", "inverted_buffer"
const char* dropout_rule_name(DropoutRule d);  // "none", "weights", "ignored"
/// The output's last axis: d_out, or num_heads x d_out (the wrapper).
enum class WidthRule { DOut, HeadsTimesDOut };

/// Where a class lives in the book's repository.
struct BookHome {
  std::string chapter;  // "3", "4"
  std::string folder;   // "ch03/01_main-chapter-code", "ch03/02_bonus_efficient-multihead-attention"
  std::string file;     // "ch03.ipynb", "mha-implementations.ipynb"
  std::string section;  // "section 3.6.2"; "" for the chapter's bonus material
};

/// A copy partner: modules of class `from` copy into this class with copy_weights (no plan: the
/// book's map, role by role).
struct CopyPartner {
  std::string from;
  std::string note;  // why the two agree or not after the copy, in one sentence
};

/// How the book's source of a class writes the steps the check's catalogue names: the variables and
/// lines its readers have, from which each cause's line and fix are written (check_lines.cpp). The
/// defaults are chapter 3's MultiHeadAttention; a recipe sets what its class writes otherwise.
struct SourceSpelling {
  std::string batch = "b", tokens = "num_tokens";  // forward's b and num_tokens
  std::string queries = "queries", keys = "keys";  // the queries' variable; what the keys' head split views ("self.W_key(x)")
  std::string split_keys = "keys";                 // what the keys' head split is assigned to
  std::string project = "self.{}(x)";              // a projection of x, {} its parameter ("x @ self.{}")
  std::string scores = "attn_scores", weights = "attn_weights", context = "context_vec";
  std::string width = "self.d_out";                                                  // the merged width, as forward names it
  std::string head_dim = "keys.shape[-1]", root = "{}**0.5";                         // the scale: root with {} the head_dim
  std::string scaled_scores = "";                                                    // the scores' expression the scale divides on its own line; "": inside the softmax
  std::string attend = "attn_weights @ values";                                      // the weights times the values
  std::string merge_from = "(attn_weights @ values)", merge = ".contiguous().view";  // the merge: what is transposed, how it is viewed
  std::string masked_fill = "attn_scores.masked_fill_(mask_bool, -torch.inf)";       // the masking line
  std::string causal_rule = "";                                                      // a mask built from positions: the line with its `<`; "": the triu buffer
  std::string attention_call = "", mask_argument = "";                               // PyTorch's attention call, and its mask argument as written in it
};

/// One attention class, all of it as data: slots, parameters and their initialisation, how the
/// forward makes heads and masks, the output width, buffers, its book home and its copy partners.
/// plan_forward, parameter_specs, the validator's structural rules, the stage table, the estimate
/// and every fact the page shows read this; nothing else switches on a class.
struct ClassSpec {
  std::string name;
  std::vector<SlotSpec> slots;
  std::string doc;
  BookHome book;
  /// The variable the book's listings (and the page's PyTorch code) give a module: "sa_v1", "mha", ...
  std::string python_name;
  /// The seed the book calls torch.manual_seed with before building one (exercise 3.1: 789 for v2).
  int64_t book_seed = 123;
  std::vector<ParamRecipe> params;  // registration order (= named_parameters() order)
  std::vector<InitStep> init;       // draw order
  bool per_head_modules = false;    // params repeat per head under "heads.{h}." (nn.ModuleList of heads)
  HeadsRule heads = HeadsRule::Single;
  MaskRule mask = MaskRule::None;
  DropoutRule dropout = DropoutRule::None;
  WidthRule width = WidthRule::DOut;
  /// The input has a batch axis (b, num_tokens, d_in); else (num_tokens, d_in).
  bool batched = true;
  /// The forward reads context_length, so num_tokens > context_length fails in PyTorch.
  bool context_limit = false;
  /// Bytes per element of the registered mask buffer (4: float triu, 1: .bool()); 0: no buffer.
  int mask_buffer_bytes = 0;
  /// PyTorch refuses d_in != d_out (a view to x's width, nn.MultiheadAttention's
  /// embed_dim): the error it raises; empty when any d_in works.
  std::string needs_square;
  /// The error PyTorch raises for num_tokens > context_length (context_limit), with {num_tokens} and
  /// {context_length} to fill in.
  std::string context_error = "RuntimeError: The size of tensor a ({num_tokens}) must match the size of tensor b ({context_length}) at non-singleton dimension 3";
  /// The assertion PyTorch raises when d_out % num_heads != 0 (fused heads).
  std::string heads_assert = "AssertionError: d_out must be divisible by num_heads";
  /// 1/sqrt(head_dim) applied to the queries before q @ k^T (nn.MultiheadAttention and PyTorch's
  /// scaled_dot_product_attention math) instead of to the scores (the book's classes).
  bool scale_queries = false;
  /// Masked scores are filled with torch.finfo(float32).min, not -inf: the weights are still exactly
  /// 0 (exp underflows) unless a row is all masked, which then gets equal weights instead of NaN.
  bool mask_fill_min = false;
  /// Stage-text variant names this class uses (e.g. "packed" for its q/k/v, "sdpa" for its weights).
  std::string qkv_text = "";
  std::string attention_text = "";
  /// The mask stage's text variant when the class builds its mask its own way ("is_causal",
  /// "bool_buffer", "flex"); "" for the book's float buffer, a window or the tokens given.
  std::string mask_text = "";
  /// Names readers type for this class that are another one, each with what to say instead of "did
  /// you mean" (torch.nn.MultiheadAttention for MultiHeadAttention).
  std::vector<std::pair<std::string, std::string>> lookalikes = {};
  std::vector<Preset> presets = {};
  /// Classes copy_weights takes this class's matrices to (exercise 3.1: v1 <-> v2).
  std::vector<std::string> copies_with = {};
  /// The class equivalent_config converts to (wrapper <-> fused MultiHeadAttention), "" when none.
  std::string converts_to = "";
  /// Classes whose modules copy into this one with the book's map (copy_into).
  std::vector<CopyPartner> copies_from = {};
  /// Whether a GPT-2 checkpoint layer loads into this class (plan_gpt2_attention builds one).
  bool loads_checkpoints = false;
  /// Rotary position embeddings on queries and keys after the head split (rotate-half, the book's
  /// precompute_rope_params/compute_rope): the base theta of the inverse frequencies; 0 for none.
  double rope_theta = 0.0;
  /// The assertion PyTorch raises for an odd head_dim (RoPE rotates halves), when rope_theta > 0.
  std::string rope_assert = "";
  /// How the book's source of the class writes its forward (the check's causes quote it).
  SourceSpelling spelling = {};
  /// The axes of the input forward takes, e.g. {"b", "num_tokens", "d_in"} (row-major).
  std::vector<std::string> input_axes() const;
  bool has_slot(std::string_view slot) const;
  /// Whether the query weights are stored (in, out) and used as x @ W (SelfAttention_v1, MHAEinsum),
  /// not nn.Linear's (out, in) used as x @ W.T: the facade's `weights` fact, the plan's
  /// matmul_projection and the copies' transposes all read this.
  bool queries_in_out() const;
  /// Whether keys and values are re-projected from a latent (a LatentDown parameter): the latent is
  /// what a KV cache of this class stores per token.
  bool latent() const;
  /// What masked scores are set to: torch.finfo(float32).min (mask_fill_min), else -inf. The plan's
  /// mask_fill and the facade's maskFill fact read this.
  float mask_fill() const { return mask_fill_min ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity(); }
  /// The registered mask buffer's dtype: "float32" (triu(ones)), "bool" (.bool()), "" without one.
  const char* mask_buffer_dtype() const { return mask_buffer_bytes == 4 ? "float32" : mask_buffer_bytes == 1 ? "bool" : ""; }
  /// The first parameter of `role` stored in `layout` (whatever its presence), or null when the class has none.
  const ParamRecipe* param(Role role, Layout layout) const {
    for (const ParamRecipe& p : params)
      if (p.role == role && p.layout == layout) return &p;
    return nullptr;
  }
  /// The scores, the mask, the scale and the softmax happen inside PyTorch's attention call
  /// (attention_text names it: scaled_dot_product_attention, FlexAttention, nn.MultiheadAttention).
  bool attention_in_torch() const { return !attention_text.empty(); }
  /// The class's Python name: its id up to an '@' ("Name@chNN/folder" -> "Name"). Classes that share a Python name are told apart by their book folder in
  /// their id; a bare name is the class listed first (the chapter's).
  std::string python_class() const { return name.substr(0, name.find('@')); }
  /// Book section or folder in one phrase: "section 3.6.2", "chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention".
  std::string source() const;
};

/// The classes in the book's order: chapter 3's main classes, its bonus ways to write multi-head attention,
/// then the chapter 4 bonus classes. The one recipe table (recipes.cpp).
const std::vector<ClassSpec>& class_specs();
/// nullptr when no class has that name (exact names only).
const ClassSpec* find_class(std::string_view name);
/// The class whose recipe says it loads GPT-2 checkpoint layers (MultiHeadAttention).
const ClassSpec& checkpoint_class();
const char* slot_type_name(SlotType t);

/// A validated configuration (see validator.hpp). Fields a class does not have keep their defaults:
/// `context_length` 0 (the bonus classes have none: their mask is built for the tokens given),
/// `dropout` 0.0, `num_heads` 1, `num_kv_groups` 0 (= one key/value head per query head),
/// `sliding_window_size` 0 (None: plain causal), `latent_dim` 0 (None: the slot's NoneRule),
/// `need_weights` true.
struct ModuleConfig {
  const ClassSpec* spec = &class_specs().front();
  int64_t d_in = 0;
  int64_t d_out = 0;
  int64_t context_length = 0;
  double dropout = 0.0;
  int64_t num_heads = 1;
  bool qkv_bias = false;
  int64_t num_kv_groups = 0;
  int64_t sliding_window_size = 0;
  int64_t latent_dim = 0;  // as given; 0: None (latent_width() applies the slot's NoneRule)
  bool need_weights = true;

  /// A config of the named class with every size 0 (throws AttentionError "unknown_class").
  static ModuleConfig of(std::string_view class_name);
  const ClassSpec& recipe() const { return *spec; }
  const std::string& class_name() const { return spec->name; }
  bool batched() const { return spec->batched; }
  bool causal() const { return spec->mask != MaskRule::None; }
  /// Whether dropout acts on the attention weights (a dropout slot the forward ignores does not).
  bool has_dropout() const { return spec->dropout == DropoutRule::Weights; }
  /// Whether num_tokens is limited by context_length.
  bool has_context_length() const { return spec->context_limit; }
  /// Bytes of the registered mask buffer (context_length^2 elements), 0 when the class has none.
  double mask_buffer_bytes() const { return static_cast<double>(context_length) * static_cast<double>(context_length) * spec->mask_buffer_bytes; }
  bool fused_heads() const { return spec->heads == HeadsRule::Fused; }
  /// Key/value heads: num_kv_groups for GroupedQueryAttention, else one per query head.
  int64_t kv_heads() const;
  /// Key/value tokens the class adds to the tokens given (nn.MultiheadAttention's add_bias_kv: 1).
  int64_t extra_kv_tokens() const;
  /// Bytes a KV cache holds per token and layer in float32: keys and values, kv_heads() x head_dim
  /// each, or the latent alone (latent_width() floats) when keys and values are re-projected from it.
  double kv_cache_bytes_per_token() const;
  /// The same for MultiHeadAttention of the same width (output_width() keys and values per token):
  /// what the facts compare a cache against.
  double kv_cache_bytes_per_token_mha() const;
  /// Width of the latent keys and values are re-projected from: latent_dim, or what None stands for
  /// (the slot's NoneRule); 0 for classes without a latent.
  int64_t latent_width() const;
  /// d_k of the 1/sqrt(d_k) scaling: d_out, or d_out / num_heads for the split classes.
  int64_t head_dim() const;
  /// Last axis of the output: num_heads * d_out for the wrapper, else d_out.
  int64_t output_width() const;
  /// The sentence that derives the width, e.g. "num_heads x d_out = 2 x 1 = 2".
  std::string output_width_rule() const;
  /// The size a Dim names for this config.
  int64_t size(Dim d) const;
  /// The slots of this class with their values (Python call order).
  SlotMap slots() const;
  /// `MultiHeadAttention(768, 768, 1024, 0.0, 12)`: positional form, trailing defaults omitted.
  std::string python_call() const;
};

}  // namespace attention_lab
