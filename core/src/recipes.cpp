// The one table of attention classes, as recipes (see ClassSpec in schema.hpp). Adding a class is
// adding an entry here; plan_forward, parameter_specs, the validator, the stage table, the estimate
// and the page read it.
#include <string>
#include <tuple>
#include <vector>

#include <cctype>

#include "attention_lab/gpt2_sizes.hpp"
#include "attention_lab/schema.hpp"

namespace attention_lab {

namespace {

// ---- Slots ----------------------------------------------------------------------------------------

SlotSpec d_in_slot() { return {"d_in", 1, SlotType::Int, std::nullopt, "width of each input token embedding (last axis of x)"}; }
SlotSpec d_out_slot(const char* doc) { return {"d_out", 2, SlotType::Int, std::nullopt, doc}; }
SlotSpec context_slot(int position) {
  return {"context_length", position, SlotType::Int, std::nullopt, "most tokens the causal mask buffer covers (context_length x context_length)"};
}
SlotSpec dropout_slot(int position, bool with_default = false) {
  return {"dropout", position, SlotType::Float, with_default ? std::optional<SlotValue>(SlotValue::floating(0.0, "0.0")) : std::nullopt,
          "probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))"};
}
SlotSpec heads_slot(int position, const char* doc) { return {"num_heads", position, SlotType::Int, std::nullopt, doc}; }
SlotSpec bias_slot(int position, const char* doc = "add a bias to the query, key and value projections (GPT-2 has one)") {
  return {"qkv_bias", position, SlotType::Bool, SlotValue::boolean_value(false), doc};
}
constexpr const char* kPerToken = "width of each query, key, value and output vector";
constexpr const char* kTotal = "TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads";
constexpr const char* kShared = "number of heads sharing d_out; d_out must be divisible by it";

/// The bonus classes' slot order (d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False).
std::vector<SlotSpec> packed_slots(bool context) {
  std::vector<SlotSpec> s = {d_in_slot(), d_out_slot(kTotal), heads_slot(3, kShared)};
  if (context) s.push_back({"context_length", 4, SlotType::Int, std::nullopt, "most tokens the module is built for (context_length x context_length)"});
  s.push_back(dropout_slot(context ? 5 : 4, true));
  s.push_back(bias_slot(context ? 6 : 5, "add a bias to the packed query/key/value projection"));
  return s;
}

// ---- Parameters -----------------------------------------------------------------------------------

struct Params {
  std::vector<ParamRecipe> params;
  std::vector<InitStep> init;
};

/// nn.Linear(in, out, bias): weight (out, in) with kaiming_uniform_(a=sqrt 5), then the bias.
void linear(Params& p, const std::string& name, Role role, Dim out, Dim in, Presence bias) {
  p.params.push_back({name + ".weight", role, Layout::OutIn, out, in});
  p.params.push_back({name + ".bias", role, Layout::Vector, out, Dim::One, bias});
  p.init.push_back({name + ".weight", Init::KaimingUniform});
  p.init.push_back({name + ".bias", Init::FanInUniform, name + ".weight"});
}
void linear_qkv(Params& p, Dim out = Dim::DOut) {
  linear(p, "W_query", Role::Query, out, Dim::DIn, Presence::WithQkvBias);
  linear(p, "W_key", Role::Key, out, Dim::DIn, Presence::WithQkvBias);
  linear(p, "W_value", Role::Value, out, Dim::DIn, Presence::WithQkvBias);
}
Params v1_params() {
  Params p;
  for (auto [name, role] : {std::pair{"W_query", Role::Query}, {"W_key", Role::Key}, {"W_value", Role::Value}}) {
    p.params.push_back({name, role, Layout::InOut, Dim::DIn, Dim::DOut});
    p.init.push_back({name, Init::Rand});
  }
  return p;
}
Params linear_params(bool out_proj) {
  Params p;
  linear_qkv(p);
  if (out_proj) linear(p, "out_proj", Role::Out, Dim::DOut, Dim::DOut, Presence::Always);
  return p;
}
Params gqa_params() {
  // Registered (so drawn under torch.manual_seed) in the book's order: key, value, query, out_proj (no bias).
  Params p;
  linear(p, "W_key", Role::Key, Dim::KvWidth, Dim::DIn, Presence::WithQkvBias);
  linear(p, "W_value", Role::Value, Dim::KvWidth, Dim::DIn, Presence::WithQkvBias);
  linear(p, "W_query", Role::Query, Dim::DOut, Dim::DIn, Presence::WithQkvBias);
  p.params.push_back({"out_proj.weight", Role::Out, Layout::OutIn, Dim::DOut, Dim::DOut});
  p.init.push_back({"out_proj.weight", Init::KaimingUniform});
  return p;
}
/// Multi-head latent attention (ch04/05_mla): W_query (d_in -> d_out), W_DKV down to the latent
/// (d_in -> latent_dim), W_UK and W_UV up from it (latent_dim -> d_out), each with a bias when
/// qkv_bias, then out_proj (always with a bias); drawn in that order.
Params latent_params() {
  Params p;
  linear(p, "W_query", Role::Query, Dim::DOut, Dim::DIn, Presence::WithQkvBias);
  linear(p, "W_DKV", Role::LatentDown, Dim::Latent, Dim::DIn, Presence::WithQkvBias);
  linear(p, "W_UK", Role::KeyUp, Dim::DOut, Dim::Latent, Presence::WithQkvBias);
  linear(p, "W_UV", Role::ValueUp, Dim::DOut, Dim::Latent, Presence::WithQkvBias);
  linear(p, "out_proj", Role::Out, Dim::DOut, Dim::DOut, Presence::Always);
  return p;
}
/// Gated attention (ch04/08_deltanet): W_query, then the output gate W_gate (d_in -> d_out), W_key,
/// W_value, each with a bias when qkv_bias, then out_proj (always with a bias); drawn in that order.
Params gated_params() {
  Params p;
  linear(p, "W_query", Role::Query, Dim::DOut, Dim::DIn, Presence::WithQkvBias);
  linear(p, "W_gate", Role::Gate, Dim::DOut, Dim::DIn, Presence::WithQkvBias);
  linear(p, "W_key", Role::Key, Dim::DOut, Dim::DIn, Presence::WithQkvBias);
  linear(p, "W_value", Role::Value, Dim::DOut, Dim::DIn, Presence::WithQkvBias);
  linear(p, "out_proj", Role::Out, Dim::DOut, Dim::DOut, Presence::Always);
  return p;
}
/// qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias), proj = nn.Linear(d_out, d_out).
Params packed_params() {
  Params p;
  linear(p, "qkv", Role::Qkv, Dim::ThreeDOut, Dim::DIn, Presence::WithQkvBias);
  linear(p, "proj", Role::Out, Dim::DOut, Dim::DOut, Presence::Always);
  return p;
}
/// MHAEinsum: W_* = nn.Parameter(torch.randn(d_in, d_out)) used as x @ W, bias_* zeros, out_proj;
/// reset_parameters() then draws kaiming_uniform_ for W_* and uniform_ for bias_* (after out_proj),
/// both bounded by W's fan_in = its size(1) = d_out.
Params einsum_params() {
  Params p;
  const std::pair<const char*, Role> m[] = {{"query", Role::Query}, {"key", Role::Key}, {"value", Role::Value}};
  for (auto [n, role] : m) p.params.push_back({std::string("W_") + n, role, Layout::InOut, Dim::DIn, Dim::DOut});
  for (auto [n, role] : m) p.params.push_back({std::string("bias_") + n[0], role, Layout::Vector, Dim::DOut, Dim::One, Presence::WithQkvBias});
  for (auto [n, role] : m) p.init.push_back({std::string("W_") + n, Init::Randn});
  for (auto [n, role] : m) p.init.push_back({std::string("bias_") + n[0], Init::Zeros});
  linear(p, "out_proj", Role::Out, Dim::DOut, Dim::DOut, Presence::Always);
  for (auto [n, role] : m) p.init.push_back({std::string("W_") + n, Init::KaimingUniform});
  for (auto [n, role] : m) p.init.push_back({std::string("bias_") + n[0], Init::FanInUniform, "W_query"});
  return p;
}
/// How MHAEinsum's forward is written: Q, K, V by einsum, the scores scaled on their own line,
/// masked_fill's result assigned, the heads merged with reshape (n for num_tokens).
SourceSpelling einsum_spelling() {
  SourceSpelling s;
  s.tokens = "n";
  s.queries = "Q";
  s.keys = s.split_keys = "K";
  s.project = "torch.einsum(\"bnd,do->bno\", x, self.{})";
  s.scores = "scores";
  s.head_dim = "self.head_dim";
  s.root = "({} ** 0.5)";
  s.scaled_scores = "torch.einsum(\"bhnd,bhmd->bhnm\", Q, K)";
  s.attend = "torch.einsum(\"bhnm,bhmd->bhnd\", attn_weights, V)";
  s.merge_from = "context_vec";
  s.merge = ".reshape";
  s.masked_fill = "scores = scores.masked_fill(mask.bool(), -torch.inf)";
  return s;
}
/// MHAPyTorchClass: nn.MultiheadAttention(embed_dim=d_out, num_heads, dropout, bias=qkv_bias,
/// add_bias_kv=qkv_bias, batch_first=True), then proj = nn.Linear(d_out, d_out). Its out_proj is
/// built (and drawn) first; _reset_parameters() then draws xavier_uniform_(in_proj_weight), zeroes
/// in_proj_bias and out_proj.bias, and draws xavier_normal_ for bias_k and bias_v.
Params nn_mha_params() {
  Params p;
  const std::string m = "multihead_attn.";
  p.params = {{m + "in_proj_weight", Role::Qkv, Layout::OutIn, Dim::ThreeDOut, Dim::DOut},
              {m + "in_proj_bias", Role::Qkv, Layout::Vector, Dim::ThreeDOut, Dim::One, Presence::WithQkvBias},
              {m + "bias_k", Role::BiasK, Layout::Token, Dim::DOut, Dim::One, Presence::WithQkvBias},
              {m + "bias_v", Role::BiasV, Layout::Token, Dim::DOut, Dim::One, Presence::WithQkvBias},
              {m + "out_proj.weight", Role::Out, Layout::OutIn, Dim::DOut, Dim::DOut},
              {m + "out_proj.bias", Role::Out, Layout::Vector, Dim::DOut, Dim::One, Presence::WithQkvBias}};
  p.init = {{m + "out_proj.weight", Init::KaimingUniform},
            {m + "out_proj.bias", Init::FanInUniform, m + "out_proj.weight"},
            {m + "in_proj_weight", Init::XavierUniform},
            {m + "in_proj_bias", Init::Zeros},
            {m + "out_proj.bias", Init::Zeros},
            {m + "bias_k", Init::XavierNormal},
            {m + "bias_v", Init::XavierNormal}};
  linear(p, "proj", Role::Proj, Dim::DOut, Dim::DOut, Presence::Always);
  return p;
}

/// Llama 2's attention (ch05/07_gpt_to_llama): W_query, W_key, W_value, out_proj, nn.Linear with
/// bias=False each, drawn in that order.
Params no_bias_params() {
  Params p;
  for (auto [name, role, in] :
       {std::tuple{"W_query", Role::Query, Dim::DIn}, {"W_key", Role::Key, Dim::DIn}, {"W_value", Role::Value, Dim::DIn}, {"out_proj", Role::Out, Dim::DOut}}) {
    p.params.push_back({std::string(name) + ".weight", role, Layout::OutIn, Dim::DOut, in});
    p.init.push_back({std::string(name) + ".weight", Init::KaimingUniform});
  }
  return p;
}

ClassSpec with(ClassSpec s, Params p) {
  s.params = std::move(p.params);
  s.init = std::move(p.init);
  return s;
}

// ---- Presets --------------------------------------------------------------------------------------

std::string thousands(long long n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return digits;
}
// W_query, W_key, W_value and out_proj (d x d each) plus out_proj's bias; qkv_bias adds 3 x d.
std::string gpt2_note(long long d, const std::string& size) {
  const std::string book = size == "small" ? "as in the book's exercise" : "as in the book's exercise on GPT-2 small";
  return "qkv_bias=False " + book + " (" + thousands(4 * d * d + d) + " parameters for GPT-2 " + size +
         "); GPT-2 itself has q/k/v biases (qkv_bias=True: " + thousands(4 * d * d + 4 * d) + ")";
}
std::vector<std::pair<std::string, std::string>> mha_slots(const char* d_in, const char* d_out, const char* context, const char* heads) {
  return {{"d_in", d_in}, {"d_out", d_out}, {"context_length", context}, {"dropout", "0.0"}, {"num_heads", heads}, {"qkv_bias", "False"}};
}
/// GPT-2 small's attention in a bonus class's own slot order.
const std::string kSmallWidth = std::to_string(kGpt2Sizes[0].n_embd), kSmallHeads = std::to_string(kGpt2Sizes[0].n_head);
Preset bonus_gpt2(const std::string& key, bool context, int order, const std::string& note) {
  std::vector<std::pair<std::string, std::string>> slots = {{"d_in", kSmallWidth}, {"d_out", kSmallWidth}, {"num_heads", kSmallHeads}};
  if (context) slots.push_back({"context_length", std::to_string(kGpt2Context)});
  slots.push_back({"dropout", "0.0"});
  return {key, slots, "sentence", 2, note, order};
}

constexpr const char* kCh3 = "ch03/01_main-chapter-code";
constexpr const char* kBonus = "ch03/02_bonus_efficient-multihead-attention";

std::vector<ClassSpec> make_recipes() {
  std::vector<ClassSpec> r;
  ClassSpec s;

  s = {};
  s.name = "SelfAttention_v1";
  s.slots = {d_in_slot(), d_out_slot(kPerToken)};
  s.doc = "Self-attention with trainable weight matrices W_query, W_key, W_value of shape (d_in, d_out), used as x @ W.";
  s.book = {"3", kCh3, "ch03.ipynb", "section 3.4.1"};
  s.python_name = "sa_v1";
  s.spelling.project = "x @ self.{}";
  s.batched = false;
  s.copies_with = {"SelfAttention_v2"};
  r.push_back(with(s, v1_params()));

  s = {};
  s.name = "SelfAttention_v2";
  s.slots = {d_in_slot(), d_out_slot(kPerToken), bias_slot(3)};
  s.doc = "Self-attention with nn.Linear projections (weight stored (d_out, d_in), used as x @ W.T + b).";
  s.book = {"3", kCh3, "ch03.ipynb", "section 3.4.2"};
  s.python_name = "sa_v2";
  s.book_seed = 789;
  s.batched = false;
  s.copies_with = {"SelfAttention_v1"};
  r.push_back(with(s, linear_params(false)));

  s = {};
  s.name = "CausalAttention";
  s.slots = {d_in_slot(), d_out_slot(kPerToken), context_slot(3), dropout_slot(4), bias_slot(5)};
  s.doc = "Self-attention that hides future tokens with a causal mask, plus dropout on the attention weights.";
  s.book = {"3", kCh3, "ch03.ipynb", "section 3.5.3"};
  s.python_name = "ca";
  s.spelling.masked_fill = "attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)";
  s.context_error = "RuntimeError: The size of tensor a ({num_tokens}) must match the size of tensor b ({context_length}) at non-singleton dimension 2";
  s.mask = MaskRule::CausalBuffer;
  s.dropout = DropoutRule::Weights;
  s.context_limit = true;
  s.mask_buffer_bytes = 4;
  r.push_back(with(s, linear_params(false)));

  s = {};
  s.name = "MultiHeadAttentionWrapper";
  s.slots = {d_in_slot(),     d_out_slot("width of EACH head's output; the module's output is num_heads x d_out wide"),    context_slot(3),
             dropout_slot(4), heads_slot(5, "number of independent CausalAttention heads, concatenated on the last axis"), bias_slot(6)};
  s.doc = "num_heads CausalAttention modules run one after another; their outputs are concatenated.";
  s.book = {"3", kCh3, "ch03.ipynb", "section 3.6.1"};
  s.python_name = "wrapper";
  s.spelling.masked_fill = "attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)";  // its heads' (CausalAttention's)
  s.context_error = "RuntimeError: The size of tensor a ({num_tokens}) must match the size of tensor b ({context_length}) at non-singleton dimension 2";
  s.per_head_modules = true;
  s.heads = HeadsRule::Modules;
  s.width = WidthRule::HeadsTimesDOut;
  s.mask = MaskRule::CausalBuffer;
  s.dropout = DropoutRule::Weights;
  s.context_limit = true;
  s.mask_buffer_bytes = 4;
  s.converts_to = "MultiHeadAttention";
  s.presets = {{"exercise32", mha_slots("3", "1", "6", "2"), "book", 2, "d_out = 1 per head, so two heads give an output 2 wide", 1}};
  r.push_back(with(s, linear_params(false)));

  s = {};
  s.name = "MultiHeadAttention";
  s.lookalikes = {{"MultiheadAttention",
                   "torch.nn.MultiheadAttention is PyTorch's built-in (embed_dim, num_heads, ...); the book's class is MultiHeadAttention(d_in, d_out, "
                   "context_length, dropout, num_heads)."}};
  s.slots = {d_in_slot(), d_out_slot(kTotal), context_slot(3), dropout_slot(4), heads_slot(5, kShared), bias_slot(6)};
  s.doc = "Fused multi-head attention: one projection per q/k/v split into heads, merged, then out_proj.";
  s.book = {"3", kCh3, "ch03.ipynb", "section 3.6.2"};
  s.python_name = "mha";
  s.heads = HeadsRule::Fused;
  s.mask = MaskRule::CausalBuffer;
  s.dropout = DropoutRule::Weights;
  s.context_limit = true;
  s.mask_buffer_bytes = 4;
  s.converts_to = "MultiHeadAttentionWrapper";
  s.loads_checkpoints = true;
  s.presets = {{"bookToy", mha_slots("3", "2", "6", "2"), "book", 2, "the book's example: two heads of head_dim 1 on the six 3-d tokens, batch 2", 0}};
  for (const Gpt2Size& g : kGpt2Sizes) {  // gpt2Small, gpt2Medium, gpt2Large, gpt2XL
    std::string key = std::string("gpt2") + g.name;
    key[4] = static_cast<char>(std::toupper(static_cast<unsigned char>(key[4])));
    const std::string d = std::to_string(g.n_embd);
    s.presets.push_back({key, mha_slots(d.c_str(), d.c_str(), std::to_string(kGpt2Context).c_str(), std::to_string(g.n_head).c_str()), "sentence", 2, gpt2_note(g.n_embd, g.name),
                         static_cast<int>(s.presets.size()) + 1});
  }
  const ClassSpec mha = with(s, linear_params(true));
  r.push_back(mha);

  // ---- Chapter 3 bonus: the same multi-head attention, written other ways ----------------------
  const auto bonus = [&](const char* name, const char* doc, const char* python_name, bool context) {
    ClassSpec b = {};
    b.name = name;
    b.slots = packed_slots(context);
    b.doc = doc;
    b.book = {"3", kBonus, "mha-implementations.ipynb", ""};
    b.python_name = python_name;
    b.heads = HeadsRule::Fused;
    b.dropout = DropoutRule::Weights;
    b.heads_assert = "AssertionError: d_out is indivisible by num_heads";
    b.qkv_text = "packed";
    b.spelling.batch = "batch_size";
    b.spelling.merge_from = "context_vec";  // context_vec = attn_weights @ values (or PyTorch's call), then merged
    b.copies_from = {{"MultiHeadAttention", "qkv.weight = torch.cat([W_query.weight, W_key.weight, W_value.weight]) (rows stacked, no transpose), proj = out_proj."}};
    return b;
  };

  s = bonus("MultiHeadAttentionCombinedQKV",
            "Multi-head attention with one packed projection qkv = nn.Linear(d_in, 3 * d_out): its output is viewed as (b, num_tokens, 3, num_heads, head_dim) and "
            "split into queries, keys and values; the merge views back to x's width, so d_in must equal d_out.",
            "mha_combined_qkv", true);
  s.mask = MaskRule::CausalBuffer;
  s.mask_buffer_bytes = 4;
  s.context_limit = true;
  s.needs_square = "RuntimeError: shape '[{b}, {num_tokens}, {d_in}]' is invalid for input of size {size}";
  s.context_error = "RuntimeError: The size of tensor a ({context_length}) must match the size of tensor b ({num_tokens}) at non-singleton dimension 3";
  s.spelling.width = "embed_dim";
  s.spelling.masked_fill = "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)";
  s.presets = {bonus_gpt2("combinedQkvSmall", true, 13, "GPT-2 small's attention with one packed qkv projection (768 -> 2,304); note the order: num_heads before context_length")};
  r.push_back(with(s, packed_params()));

  s = {};
  s.name = "MHAEinsum";
  s.slots = {d_in_slot(), d_out_slot(kTotal), context_slot(3), dropout_slot(4), heads_slot(5, kShared), bias_slot(6)};
  s.doc =
      "Multi-head attention written with torch.einsum: W_query, W_key, W_value are (d_in, d_out) parameters used as x @ W (einsum \"bnd,do->bno\"); bias_q, "
      "bias_k, bias_v with qkv_bias; out_proj.";
  s.book = {"3", kBonus, "mha-implementations.ipynb", ""};
  s.python_name = "mha_einsum";
  s.heads = HeadsRule::Fused;
  s.mask = MaskRule::CausalBuffer;
  s.dropout = DropoutRule::Weights;
  s.context_limit = true;
  s.mask_buffer_bytes = 4;
  s.context_error = "RuntimeError: The size of tensor a ({context_length}) must match the size of tensor b ({num_tokens}) at non-singleton dimension 3";
  s.qkv_text = "einsum";
  s.copies_from = {
      {"MultiHeadAttention", "W_query, W_key, W_value = each W_*.weight.T (einsum uses x @ W, nn.Linear x @ W.T); bias_q, bias_k, bias_v = each W_*.bias; out_proj copied."}};
  s.spelling = einsum_spelling();
  s.presets = {{"einsumSmall", mha_slots(kSmallWidth.c_str(), kSmallWidth.c_str(), std::to_string(kGpt2Context).c_str(), kSmallHeads.c_str()), "sentence", 2,
                "GPT-2 small's attention written with torch.einsum: the chapter's slot order", 14}};
  r.push_back(with(s, einsum_params()));

  s = bonus("MHAPyTorchScaledDotProduct",
            "The packed projection with PyTorch's scaled_dot_product_attention(is_causal=True): the causal mask is built for the tokens given, so context_length is "
            "stored but never read.",
            "mha_pytorch_scaled", true);
  s.mask = MaskRule::CausalTokens;
  s.scale_queries = true;
  s.attention_text = "sdpa";
  s.mask_text = "is_causal";  // scaled_dot_product_attention(..., is_causal=True)
  s.spelling.attention_call = "context_vec = nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=None, dropout_p=use_dropout, is_causal=True)";
  s.spelling.mask_argument = ", is_causal=True";
  s.presets = {bonus_gpt2("sdpaSmall", true, 15, "GPT-2 small's attention through scaled_dot_product_attention (FlashAttention on GPUs); context_length is never read")};
  r.push_back(with(s, packed_params()));

  s = bonus("MHAPyTorchSDPAWithoutFlash",
            "scaled_dot_product_attention with an explicit mask: the buffer triu(ones, diagonal=1).bool() is passed as attn_mask, where True means \"attend\", so the "
            "mask is inverted (the book repository's issue #1061): each query sees only later tokens and the last one none (NaN).",
            "mha_pytorch_sdpa_no_flash", true);
  s.mask = MaskRule::InvertedBuffer;
  s.context_error = "RuntimeError: The size of tensor a ({num_tokens}) must match the size of tensor b ({context_length}) at non-singleton dimension 3";
  s.mask_buffer_bytes = 1;
  s.mask_text = "bool_buffer";
  s.context_limit = true;
  s.scale_queries = true;
  s.attention_text = "sdpa";
  s.copies_from = {{"MultiHeadAttention", "the copy is right, but the inverted mask hides every earlier key: the outputs cannot agree (and the last token's row is NaN)."}};
  s.spelling.attention_call = "context_vec = nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=attn_mask, dropout_p=use_dropout, is_causal=False)";
  s.spelling.mask_argument = "attn_mask=attn_mask, ";
  s.presets = {bonus_gpt2("sdpaNoFlashSmall", true, 16, "a reproduced bug: the boolean mask means \"attend\" here, so it is inverted; watch the last row turn NaN")};
  r.push_back(with(s, packed_params()));

  s = bonus("MHAPyTorchFlexAttention",
            "The packed projection with FlexAttention and a causal block mask built for the tokens given in each forward, so context_length is stored but never "
            "read; FlexAttention has no dropout, so the dropout slot is never used.",
            "mha_pytorch_flex", true);
  s.mask = MaskRule::CausalTokens;
  s.dropout = DropoutRule::Ignored;
  s.scale_queries = true;
  s.attention_text = "flex";
  s.mask_text = "flex";
  s.spelling.attention_call = "context_vec = flex_attention(queries, keys, values, block_mask=attn_mask)";
  s.spelling.mask_argument = ", block_mask=attn_mask";
  s.presets = {bonus_gpt2("flexSmall", true, 17, "GPT-2 small's attention through FlexAttention (PyTorch 2.5+, GPUs); dropout is ignored")};
  r.push_back(with(s, packed_params()));

  s = {};
  s.name = "MHAPyTorchClass";
  s.slots = packed_slots(true);
  s.slots.push_back({"need_weights", 7, SlotType::Bool, SlotValue::boolean_value(true),
                     "return the head-averaged attention weights too (False lets nn.MultiheadAttention use scaled_dot_product_attention)"});
  s.doc =
      "PyTorch's own nn.MultiheadAttention(embed_dim=d_out, num_heads, dropout, bias=qkv_bias, add_bias_kv=qkv_bias, batch_first=True) with a boolean causal "
      "mask, then proj = nn.Linear(d_out, d_out). embed_dim is d_out, so d_in must equal d_out; qkv_bias also adds bias_k/bias_v, one extra key/value token "
      "every query sees.";
  s.book = {"3", kBonus, "mha-implementations.ipynb", ""};
  s.python_name = "mha_pytorch_class";
  s.heads = HeadsRule::Fused;
  s.mask = MaskRule::CausalBuffer;
  s.mask_buffer_bytes = 1;
  s.mask_text = "bool_buffer";
  s.context_limit = true;
  s.dropout = DropoutRule::Weights;
  s.scale_queries = true;
  s.needs_square = "AssertionError: was expecting embedding dimension of {d_out}, but got {d_in}";
  s.context_error = "RuntimeError: The shape of the 2D attn_mask is torch.Size([{context_length}, {context_length}]), but should be ({num_tokens}, {num_tokens}).";
  s.heads_assert = "AssertionError: embed_dim must be divisible by num_heads";
  s.qkv_text = "in_proj";
  s.attention_text = "nn_mha";
  s.copies_from = {{"MultiHeadAttention",
                    "in_proj_weight = torch.cat([W_query.weight, W_key.weight, W_value.weight]), the inner out_proj the identity, proj = out_proj; with qkv_bias the "
                    "extra bias_k/bias_v token makes them disagree."}};
  s.spelling.attention_call = "attn_output, _ = self.multihead_attn(x, x, x, attn_mask=attn_mask, need_weights=self.need_weights)";
  s.spelling.mask_argument = "attn_mask=attn_mask, ";
  s.presets = {bonus_gpt2("nnMhaSmall", true, 18, "GPT-2 small's attention through torch.nn.MultiheadAttention (embed_dim = d_out), then the class's own proj")};
  r.push_back(with(s, nn_mha_params()));

  s = bonus("PyTorchMultiHeadAttention",
            "The packed projection with scaled_dot_product_attention(is_causal=True), as packaged in llms_from_scratch (ch03.py); no context_length at all.", "pytorch_mha", false);
  s.book = {"3", "pkg/llms_from_scratch", "ch03.py", ""};
  s.mask = MaskRule::CausalTokens;
  s.scale_queries = true;
  s.attention_text = "sdpa";
  s.mask_text = "is_causal";  // scaled_dot_product_attention(..., is_causal=True)
  s.spelling.attention_call = "context_vec = nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=None, dropout_p=use_dropout, is_causal=True)";
  s.spelling.mask_argument = ", is_causal=True";
  s.presets = {bonus_gpt2("pkgMhaSmall", false, 19, "GPT-2 small's attention as the llms_from_scratch package writes it: (d_in, d_out, num_heads, dropout)")};
  r.push_back(with(s, packed_params()));

  // ---- Chapter 4 bonus ----------------------------------------------------------------------------
  s = {};
  s.name = "GroupedQueryAttention";
  s.slots = {d_in_slot(),
             d_out_slot("TOTAL width of the queries and the output, split into num_heads heads of head_dim = d_out / num_heads"),
             dropout_slot(3),
             heads_slot(4, "number of query heads; d_out must be divisible by it"),
             {"num_kv_groups", 5, SlotType::Int, std::nullopt, "number of key/value heads, each shared by num_heads / num_kv_groups query heads (1: multi-query attention)"},
             {"dtype", 6, SlotType::Dtype, SlotValue::none(), "parameter dtype: None (float32, PyTorch's default)"},
             bias_slot(7, "add a bias to the query, key and value projections")};
  s.doc =
      "Grouped-query attention: num_kv_groups key/value heads, each shared by a group of query heads (repeat_interleave); causal mask for the tokens given; out_proj "
      "without bias.";
  s.book = {"4", "ch04/04_gqa", "gpt_with_kv_gqa.py", ""};
  s.python_name = "gqa";
  s.spelling.split_keys = "keys_new";
  s.spelling.masked_fill = "attn_scores = attn_scores.masked_fill(mask, -torch.inf)";
  s.spelling.causal_rule = "mask = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)";
  s.heads = HeadsRule::Fused;
  s.mask = MaskRule::CausalTokens;
  s.dropout = DropoutRule::Weights;
  s.presets = {{"gqaToy",
                {{"d_in", "3"}, {"d_out", "4"}, {"dropout", "0.0"}, {"num_heads", "4"}, {"num_kv_groups", "2"}},
                "book",
                2,
                "four query heads of head_dim 1 on the six 3-d tokens; two key/value heads, each shared by two query heads",
                6},
               {"gqaSmall",
                {{"d_in", kSmallWidth}, {"d_out", kSmallWidth}, {"dropout", "0.0"}, {"num_heads", kSmallHeads}, {"num_kv_groups", "4"}},
                "sentence",
                2,
                "GPT-2 small's widths with 4 key/value heads, each shared by 3 query heads: a third of the key/value cache of MultiHeadAttention(768, ...)",
                9},
               {"mqaSmall",
                {{"d_in", kSmallWidth}, {"d_out", kSmallWidth}, {"dropout", "0.0"}, {"num_heads", kSmallHeads}, {"num_kv_groups", "1"}},
                "sentence",
                2,
                "multi-query attention: one key/value head shared by all 12 query heads (num_kv_groups = 1)",
                10}};
  r.push_back(with(s, gqa_params()));

  s = {};
  s.name = "MultiHeadLatentAttention";
  s.slots = {d_in_slot(),
             d_out_slot(kTotal),
             dropout_slot(3),
             heads_slot(4, kShared),
             bias_slot(5, "add a bias to W_query, W_DKV, W_UK and W_UV"),
             {"latent_dim", 6, SlotType::OptionalInt, SlotValue::none(),
              "width of the latent c_kv = W_DKV(x) that keys and values are re-projected from (None: max(16, d_out // 8))", NoneRule{"d_out", 8, 16}}};
  s.doc =
      "Multi-head latent attention: x is projected down to a latent c_kv = W_DKV(x) of latent_dim per token (what its KV cache stores), and keys and values are "
      "re-projected from it (W_UK, W_UV); queries, causal mask for the tokens given, out_proj as in MultiHeadAttention; no RoPE.";
  s.book = {"4", "ch04/05_mla", "gpt_with_kv_mla.py", ""};
  s.python_name = "mla";
  s.spelling.scores = "scores";
  s.spelling.weights = "weights";
  s.spelling.context = "context";
  s.spelling.attend = "weights @ values";
  s.spelling.merge_from = "(weights @ values)";
  s.spelling.masked_fill = s.spelling.causal_rule = "scores.masked_fill_(q_pos.unsqueeze(-1) < k_pos.unsqueeze(0), -torch.inf)";
  s.heads = HeadsRule::Fused;
  s.mask = MaskRule::CausalTokens;
  s.dropout = DropoutRule::Weights;
  s.presets = {{"mlaToy",
                {{"d_in", "3"}, {"d_out", "4"}, {"dropout", "0.0"}, {"num_heads", "2"}, {"latent_dim", "2"}},
                "book",
                2,
                "two heads of head_dim 2 on the six 3-d tokens; keys and values re-projected from a latent of 2 per token",
                8},
               {"mlaSmall",
                {{"d_in", kSmallWidth}, {"d_out", kSmallWidth}, {"dropout", "0.0"}, {"num_heads", kSmallHeads}},
                "sentence",
                2,
                "GPT-2 small's widths with the default latent_dim = max(16, 768 // 8) = 96: a KV cache of 96 floats per token, 16x less than MultiHeadAttention(768, ...)",
                12}};
  r.push_back(with(s, latent_params()));

  s = {};
  s.name = "MultiHeadAttentionWithSWA";
  s.slots = {d_in_slot(),
             d_out_slot(kTotal),
             dropout_slot(3),
             heads_slot(4, kShared),
             bias_slot(5, "add a bias to the query, key and value projections"),
             {"sliding_window_size", 6, SlotType::OptionalInt, SlotValue::none(),
              "keys a query sees: itself and the sliding_window_size - 1 before it (None: every earlier key, plain causal)"}};
  s.doc = "The book's MultiHeadAttention with a sliding-window causal mask: key j is hidden from query i when j > i or i - j >= sliding_window_size; no context_length.";
  s.book = {"4", "ch04/06_swa", "gpt_with_kv_swa.py", ""};
  s.python_name = "swa";
  s.spelling.causal_rule = "mask_bool = (diff < 0) | (diff >= W)";
  s.spelling.keys = "self.W_key(x)";  // keys = self.W_key(x).view(...)
  s.heads = HeadsRule::Fused;
  s.mask = MaskRule::CausalTokens;
  s.dropout = DropoutRule::Weights;
  s.presets = {{"swaToy",
                {{"d_in", "3"}, {"d_out", "2"}, {"dropout", "0.0"}, {"num_heads", "2"}, {"sliding_window_size", "3"}},
                "book",
                2,
                "the book's toy sizes with a window of 3: each token sees itself and the two before it",
                7},
               {"swaSmall",
                {{"d_in", kSmallWidth}, {"d_out", kSmallWidth}, {"dropout", "0.0"}, {"num_heads", kSmallHeads}, {"sliding_window_size", "4"}},
                "sentence",
                2,
                "GPT-2 small's widths with a window of 4 keys (models such as Gemma 3 use windows of 1,024 in contexts of 128k)",
                11}};
  r.push_back(with(s, linear_params(true)));

  s = {};
  s.name = "GatedMultiHeadAttention";
  s.slots = {d_in_slot(), d_out_slot(kTotal), context_slot(3), dropout_slot(4), heads_slot(5, kShared), bias_slot(6, "add a bias to W_query, W_gate, W_key and W_value")};
  s.doc =
      "The chapter's MultiHeadAttention with an output gate (Qwen3-Next's gated attention): the merged heads are multiplied by sigmoid(W_gate(x)) before out_proj, "
      "and the causal mask fills torch.finfo(float32).min instead of -inf.";
  s.book = {"4", "ch04/08_deltanet", "README.md", ""};
  s.python_name = "gated_mha";
  s.spelling.context = "context";
  s.spelling.head_dim = "self.head_dim";
  s.spelling.root = "({} ** 0.5)";
  s.spelling.merge = ".reshape";
  s.spelling.masked_fill = "attn_scores.masked_fill_(hidden, torch.finfo(attn_scores.dtype).min)";
  s.heads = HeadsRule::Fused;
  s.mask = MaskRule::CausalBuffer;
  s.mask_fill_min = true;
  s.dropout = DropoutRule::Weights;
  s.context_limit = true;
  s.mask_buffer_bytes = 4;  // registered with persistent=False: held, but not in its state_dict
  s.heads_assert = "AssertionError";
  s.copies_from = {{"MultiHeadAttention",
                    "W_query, W_key, W_value and out_proj copied as they are; W_gate has no counterpart and keeps its own values, so sigmoid(W_gate(x)) "
                    "still scales the context and the outputs cannot agree (the masked scores differ too, torch.finfo(float32).min against -inf, "
                    "with the same weights)."}};
  r.push_back(with(s, gated_params()));
  // ---- Chapter 5 bonus: Llama 2's attention -----------------------------------------------------
  s = {};
  s.name = "MultiHeadAttention@ch05/07_gpt_to_llama";
  s.slots = {d_in_slot(),
             d_out_slot(kTotal),
             {"context_length", 3, SlotType::Int, std::nullopt, "rows of the causal mask buffer and of RoPE's cos and sin tables: the most positions the module can take"},
             heads_slot(4, kShared),
             {"dtype", 5, SlotType::Dtype, SlotValue::none(), "parameter dtype: None (float32, PyTorch's default; the book passes torch.bfloat16 for Llama 2 7B)"}};
  s.doc =
      "Llama 2's multi-head attention: the chapter's MultiHeadAttention with no biases (out_proj too), no dropout, and rotary position embeddings (RoPE, "
      "theta 10,000) applied to queries and keys after the head split, from cos and sin buffers of context_length rows.";
  s.book = {"5", "ch05/07_gpt_to_llama", "converting-gpt-to-llama2.ipynb", ""};
  s.python_name = "mha_llama2";
  s.spelling.keys = "self.W_key(x)";  // keys = self.W_key(x).view(...).transpose(1, 2)
  s.spelling.merge = ".reshape";
  s.heads = HeadsRule::Fused;
  s.mask = MaskRule::CausalBuffer;
  s.mask_buffer_bytes = 4;
  s.context_limit = true;
  s.context_error = "RuntimeError: The size of tensor a ({num_tokens}) must match the size of tensor b ({context_length}) at non-singleton dimension 2";
  s.heads_assert = "AssertionError: d_out must be divisible by n_heads";
  s.rope_theta = 10000.0;
  s.rope_assert = "AssertionError: Embedding dimension must be even";
  s.copies_from = {{"MultiHeadAttention",
                    "W_query, W_key, W_value and out_proj weights copied as they are; the source's biases (out_proj.bias always) have no target here, and RoPE rotates "
                    "queries and keys by position, so only the first token's scores stay the same."}};
  r.push_back(with(s, no_bias_params()));
  return r;
}

}  // namespace

const std::vector<ClassSpec>& class_specs() {
  static const std::vector<ClassSpec> recipes = make_recipes();
  return recipes;
}

}  // namespace attention_lab
