#include "attention_lab/schema.hpp"
#include "attention_lab/text.hpp"

#include <cmath>
#include <cstdlib>

namespace attention_lab {

SlotValue SlotValue::integer(double v, std::string text) { return {Kind::Int, v, false, std::move(text)}; }
SlotValue SlotValue::floating(double v, std::string text) { return {Kind::Float, v, false, std::move(text)}; }
SlotValue SlotValue::boolean_value(bool v) { return {Kind::Bool, 0.0, v, v ? "True" : "False"}; }
SlotValue SlotValue::none() { return {Kind::None, 0.0, false, "None"}; }
SlotValue SlotValue::string(std::string s) { return {Kind::String, 0.0, false, std::move(s)}; }
SlotValue SlotValue::expression(std::string source) { return {Kind::Expression, 0.0, false, std::move(source)}; }

namespace {
std::string format_number(double v, bool as_float) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (!as_float && std::fabs(v) < 1e15 && v == std::floor(v)) {
    return std::to_string(static_cast<long long>(v));
  }
  // Python's repr of a float: shortest text that round-trips; %.17g is long, so try widths.
  for (int precision = 1; precision <= 17; ++precision) {
    std::string s = format_g(v, precision);
    // strtod, not std::stod: stod throws out_of_range on subnormals such as 1e-320.
    if (std::strtod(s.c_str(), nullptr) == v) {
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
  }
  return std::to_string(v);
}
}  // namespace

std::string SlotValue::python() const {
  switch (kind) {
    case Kind::Int:
      return format_number(number, false);
    case Kind::Float:
      return format_number(number, true);
    case Kind::Bool:
      return boolean ? "True" : "False";
    case Kind::None:
      return "None";
    case Kind::String:
      return "'" + text + "'";
    case Kind::Expression:
      return text;
  }
  return "";
}

const char* slot_type_name(SlotType t) {
  switch (t) {
    case SlotType::Int:
      return "int";
    case SlotType::Float:
      return "float";
    case SlotType::Bool:
      return "bool";
    case SlotType::OptionalInt:
      return "int | None";
    case SlotType::Dtype:
      return "torch.dtype | None";
  }
  return "";
}

namespace {
SlotSpec d_in_slot() { return {"d_in", 1, SlotType::Int, std::nullopt, "width of each input token embedding (last axis of x)"}; }
SlotSpec d_out_slot(const char* doc) { return {"d_out", 2, SlotType::Int, std::nullopt, doc}; }
SlotSpec context_slot() { return {"context_length", 3, SlotType::Int, std::nullopt, "most tokens the causal mask buffer covers (context_length x context_length)"}; }
SlotSpec dropout_slot() { return {"dropout", 4, SlotType::Float, std::nullopt, "probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))"}; }
SlotSpec heads_slot(const char* doc) { return {"num_heads", 5, SlotType::Int, std::nullopt, doc}; }
SlotSpec bias_slot(int position) {
  return {"qkv_bias", position, SlotType::Bool, SlotValue::boolean_value(false), "add a bias to the query, key and value projections (GPT-2 has one)"};
}

std::vector<ClassSpec> make_specs() {
  return {
      {ClassKind::SelfAttentionV1,
       "SelfAttention_v1",
       {d_in_slot(), d_out_slot("width of each query, key, value and output vector")},
       "Self-attention with trainable weight matrices W_query, W_key, W_value of shape (d_in, d_out), used as x @ W.",
       "section 3.4.1"},
      {ClassKind::SelfAttentionV2,
       "SelfAttention_v2",
       {d_in_slot(), d_out_slot("width of each query, key, value and output vector"), bias_slot(3)},
       "Self-attention with nn.Linear projections (weight stored (d_out, d_in), used as x @ W.T + b).",
       "section 3.4.2"},
      {ClassKind::CausalAttention,
       "CausalAttention",
       {d_in_slot(), d_out_slot("width of each query, key, value and output vector"), context_slot(), dropout_slot(), bias_slot(5)},
       "Self-attention that hides future tokens with a causal mask, plus dropout on the attention weights.",
       "section 3.5.3"},
      {ClassKind::MultiHeadAttentionWrapper,
       "MultiHeadAttentionWrapper",
       {d_in_slot(), d_out_slot("width of EACH head's output; the module's output is num_heads x d_out wide"), context_slot(), dropout_slot(),
        heads_slot("number of independent CausalAttention heads, concatenated on the last axis"), bias_slot(6)},
       "num_heads CausalAttention modules run one after another; their outputs are concatenated.",
       "section 3.6.1"},
      {ClassKind::MultiHeadAttention,
       "MultiHeadAttention",
       {d_in_slot(), d_out_slot("TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads"), context_slot(), dropout_slot(),
        heads_slot("number of heads sharing d_out; d_out must be divisible by it"), bias_slot(6)},
       "Fused multi-head attention: one projection per q/k/v split into heads, merged, then out_proj.",
       "section 3.6.2"},
      {ClassKind::GroupedQueryAttention,
       "GroupedQueryAttention",
       {d_in_slot(),
        d_out_slot("TOTAL width of the queries and the output, split into num_heads heads of head_dim = d_out / num_heads"),
        {"dropout", 3, SlotType::Float, std::nullopt, "probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))"},
        {"num_heads", 4, SlotType::Int, std::nullopt, "number of query heads; d_out must be divisible by it"},
        {"num_kv_groups", 5, SlotType::Int, std::nullopt, "number of key/value heads, each shared by num_heads / num_kv_groups query heads (1: multi-query attention)"},
        {"dtype", 6, SlotType::Dtype, SlotValue::none(), "parameter dtype: None (float32, PyTorch's default)"},
        {"qkv_bias", 7, SlotType::Bool, SlotValue::boolean_value(false), "add a bias to the query, key and value projections"}},
       "Grouped-query attention: num_kv_groups key/value heads, each shared by a group of query heads (repeat_interleave); causal mask for the tokens given; out_proj without "
       "bias.",
       "chapter 4 bonus, ch04/04_gqa"},
      {ClassKind::MultiHeadAttentionWithSWA,
       "MultiHeadAttentionWithSWA",
       {d_in_slot(),
        d_out_slot("TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads"),
        {"dropout", 3, SlotType::Float, std::nullopt, "probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))"},
        {"num_heads", 4, SlotType::Int, std::nullopt, "number of heads sharing d_out; d_out must be divisible by it"},
        {"qkv_bias", 5, SlotType::Bool, SlotValue::boolean_value(false), "add a bias to the query, key and value projections"},
        {"sliding_window_size", 6, SlotType::OptionalInt, SlotValue::none(),
         "keys a query sees: itself and the sliding_window_size - 1 before it (None: every earlier key, plain causal)"}},
       "The book's MultiHeadAttention with a sliding-window causal mask: key j is hidden from query i when j > i or i - j >= sliding_window_size; no context_length.",
       "chapter 4 bonus, ch04/06_swa"},
  };
}
}  // namespace

/// The facts make_specs leaves out: input axes, how heads are made, presets.
static std::vector<ClassSpec> with_facts(std::vector<ClassSpec> specs) {
  const auto slots = [](const char* d_in, const char* d_out, const char* context, const char* heads) {
    return std::vector<std::pair<std::string, std::string>>{{"d_in", d_in},     {"d_out", d_out},     {"context_length", context},
                                                            {"dropout", "0.0"}, {"num_heads", heads}, {"qkv_bias", "False"}};
  };
  // W_query, W_key, W_value and out_proj (d x d each) plus out_proj's bias; qkv_bias adds 3 x d.
  const auto thousands = [](long long n) {
    std::string digits = std::to_string(n);
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
    return digits;
  };
  const auto gpt2_note = [&](long long d, const char* size) {
    const std::string book = std::string(size) == "small" ? "as in the book's exercise" : "as in the book's exercise on GPT-2 small";
    return "qkv_bias=False " + book + " (" + thousands(4 * d * d + d) + " parameters for GPT-2 " + size +
           "); GPT-2 itself has q/k/v biases (qkv_bias=True: " + thousands(4 * d * d + 4 * d) + ")";
  };
  for (ClassSpec& s : specs) {
    const bool batched = s.kind != ClassKind::SelfAttentionV1 && s.kind != ClassKind::SelfAttentionV2;
    s.input_axes = batched ? std::vector<std::string>{"b", "num_tokens", "d_in"} : std::vector<std::string>{"num_tokens", "d_in"};
    ModuleConfig probe;
    probe.kind = s.kind;
    s.heads = probe.fused_heads() ? HeadsKind::Fused : s.kind == ClassKind::MultiHeadAttentionWrapper ? HeadsKind::Modules : HeadsKind::Single;
    if (s.kind == ClassKind::MultiHeadAttention) {
      s.presets = {{"bookToy", slots("3", "2", "6", "2"), "book", 2, "the book's example: two heads of head_dim 1 on the six 3-d tokens, batch 2", 0},
                   {"gpt2Small", slots("768", "768", "1024", "12"), "sentence", 2, gpt2_note(768, "small"), 2},
                   {"gpt2Medium", slots("1024", "1024", "1024", "16"), "sentence", 2, gpt2_note(1024, "medium"), 3},
                   {"gpt2Large", slots("1280", "1280", "1024", "20"), "sentence", 2, gpt2_note(1280, "large"), 4},
                   {"gpt2XL", slots("1600", "1600", "1024", "25"), "sentence", 2, gpt2_note(1600, "XL"), 5}};
    }
    if (s.kind == ClassKind::MultiHeadAttentionWrapper)
      s.presets = {{"exercise32", slots("3", "1", "6", "2"), "book", 2, "exercise 3.2: d_out = 1 per head, so two heads give an output 2 wide", 1}};
    switch (s.kind) {
      case ClassKind::SelfAttentionV1:
        s.python_name = "sa_v1";
        s.weights = "matrix";
        s.copies_with = {"SelfAttention_v2"};
        break;
      case ClassKind::SelfAttentionV2:
        s.python_name = "sa_v2";
        s.book_seed = 789;
        s.copies_with = {"SelfAttention_v1"};
        break;
      case ClassKind::CausalAttention:
        s.python_name = "ca";
        break;
      case ClassKind::MultiHeadAttentionWrapper:
        s.python_name = "wrapper";
        s.converts_to = "MultiHeadAttention";
        break;
      case ClassKind::MultiHeadAttention:
        s.python_name = "mha";
        s.converts_to = "MultiHeadAttentionWrapper";
        s.loads_checkpoints = true;
        break;
      case ClassKind::GroupedQueryAttention:
        s.python_name = "gqa";
        s.presets = {{"gqaToy",
                      {{"d_in", "3"}, {"d_out", "4"}, {"dropout", "0.0"}, {"num_heads", "4"}, {"num_kv_groups", "2"}},
                      "book",
                      2,
                      "four query heads of head_dim 1 on the six 3-d tokens; two key/value heads, each shared by two query heads",
                      6},
                     {"gqaSmall",
                      {{"d_in", "768"}, {"d_out", "768"}, {"dropout", "0.0"}, {"num_heads", "12"}, {"num_kv_groups", "4"}},
                      "sentence",
                      2,
                      "GPT-2 small's widths with 4 key/value heads, each shared by 3 query heads: a third of the key/value cache of MultiHeadAttention(768, ...)",
                      8},
                     {"mqaSmall",
                      {{"d_in", "768"}, {"d_out", "768"}, {"dropout", "0.0"}, {"num_heads", "12"}, {"num_kv_groups", "1"}},
                      "sentence",
                      2,
                      "multi-query attention: one key/value head shared by all 12 query heads (num_kv_groups = 1)",
                      9}};
        break;
      case ClassKind::MultiHeadAttentionWithSWA:
        s.python_name = "swa";
        s.presets = {{"swaToy",
                      {{"d_in", "3"}, {"d_out", "2"}, {"dropout", "0.0"}, {"num_heads", "2"}, {"sliding_window_size", "3"}},
                      "book",
                      2,
                      "the book's toy sizes with a window of 3: each token sees itself and the two before it",
                      7},
                     {"swaSmall",
                      {{"d_in", "768"}, {"d_out", "768"}, {"dropout", "0.0"}, {"num_heads", "12"}, {"sliding_window_size", "4"}},
                      "sentence",
                      2,
                      "GPT-2 small's widths with a window of 4 keys (models such as Gemma 3 use windows of 1,024 in contexts of 128k)",
                      10}};
        break;
    }
  }
  return specs;
}

const char* heads_kind_name(HeadsKind k) {
  switch (k) {
    case HeadsKind::Single:
      return "single";
    case HeadsKind::Modules:
      return "modules";
    case HeadsKind::Fused:
      return "fused";
  }
  return "";
}

const std::vector<ClassSpec>& class_specs() {
  static const std::vector<ClassSpec> specs = with_facts(make_specs());
  return specs;
}

const ClassSpec* find_class(std::string_view name) {
  for (const auto& spec : class_specs())
    if (spec.name == name) return &spec;
  return nullptr;
}

const ClassSpec& class_spec(ClassKind kind) {
  for (const auto& spec : class_specs())
    if (spec.kind == kind) return spec;
  return class_specs().front();
}

int64_t ModuleConfig::head_dim() const { return fused_heads() && num_heads > 0 ? d_out / num_heads : d_out; }

int64_t ModuleConfig::kv_heads() const {
  if (kind == ClassKind::GroupedQueryAttention) return num_kv_groups;
  return kind == ClassKind::MultiHeadAttentionWrapper || fused_heads() ? num_heads : 1;
}

int64_t ModuleConfig::output_width() const { return kind == ClassKind::MultiHeadAttentionWrapper ? num_heads * d_out : d_out; }

std::string ModuleConfig::output_width_rule() const {
  using std::to_string;
  switch (kind) {
    case ClassKind::MultiHeadAttentionWrapper:
      return "num_heads x d_out = " + to_string(num_heads) + " x " + to_string(d_out) + " = " + to_string(output_width());
    case ClassKind::MultiHeadAttention:
    case ClassKind::MultiHeadAttentionWithSWA:
      return "d_out = " + to_string(d_out) + ", shared by " + to_string(num_heads) + (num_heads == 1 ? " head" : " heads") + " of " + to_string(head_dim());
    case ClassKind::GroupedQueryAttention:
      return "d_out = " + to_string(d_out) + ", shared by " + to_string(num_heads) + (num_heads == 1 ? " query head" : " query heads") + " of " + to_string(head_dim()) +
             " (keys and values: " + to_string(num_kv_groups) + (num_kv_groups == 1 ? " head" : " heads") + " of " + to_string(head_dim()) + ")";
    default:
      return "d_out = " + to_string(d_out);
  }
}

SlotMap ModuleConfig::slots() const {
  SlotMap m;
  for (const SlotSpec& slot : class_spec(kind).slots) {
    const std::string& n = slot.name;
    if (n == "d_in")
      m[n] = SlotValue::integer(static_cast<double>(d_in));
    else if (n == "d_out")
      m[n] = SlotValue::integer(static_cast<double>(d_out));
    else if (n == "context_length")
      m[n] = SlotValue::integer(static_cast<double>(context_length));
    else if (n == "dropout")
      m[n] = SlotValue::floating(dropout);
    else if (n == "num_heads")
      m[n] = SlotValue::integer(static_cast<double>(num_heads));
    else if (n == "num_kv_groups")
      m[n] = SlotValue::integer(static_cast<double>(num_kv_groups));
    else if (n == "qkv_bias")
      m[n] = SlotValue::boolean_value(qkv_bias);
    else if (n == "dtype")
      m[n] = SlotValue::none();
    else if (n == "sliding_window_size")
      m[n] = sliding_window_size > 0 ? SlotValue::integer(static_cast<double>(sliding_window_size)) : SlotValue::none();
  }
  return m;
}

std::string ModuleConfig::python_call() const {
  // Required slots positionally; a slot with a default only when it differs, as a keyword.
  const ClassSpec& spec = class_spec(kind);
  const SlotMap values = slots();
  std::string out = spec.name + "(";
  bool first = true;
  for (const auto& slot : spec.slots) {
    const SlotValue& v = values.at(slot.name);
    if (slot.default_value) {
      if (v.python() != slot.default_value->python())
        out += std::string(first ? "" : ", ") + slot.name + "=" + v.python();
      else
        continue;
    } else {
      out += (first ? "" : ", ") + v.python();
    }
    first = false;
  }
  return out + ")";
}

}  // namespace attention_lab
