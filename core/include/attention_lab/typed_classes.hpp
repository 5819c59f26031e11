// GENERATED from the recipe list (class_specs(), core/src/recipes.cpp) by tools/typed/gen_typed_classes.cpp:
//   cmake --build --preset native && ./build/native/attention_lab_typed_classes core/include/attention_lab/typed_classes.hpp
// Do not edit; the native suite fails when it is not what the recipes write. Include attention_lab/typed.hpp.
// One struct per attention class, in the recipe list's order; its members are the constructor's slots
// in the Python signature's order, so that aggregate initialisation reads as the Python call.
#pragma once

#include "attention_lab/typed.hpp"

namespace attention_lab::typed {

/// SelfAttention_v1(d_in, d_out): section 3.4.1.
/// Self-attention with trainable weight matrices W_query, W_key, W_value of shape (d_in, d_out),
/// used as x \@ W.
struct SelfAttention_v1 {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "SelfAttention_v1";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// width of each query, key, value and output vector
  Int d_out;
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    return m;
  }
};

/// SelfAttention_v2(d_in, d_out, qkv_bias=False): section 3.4.2.
/// Self-attention with nn.Linear projections (weight stored (d_out, d_in), used as x \@ W.T + b).
struct SelfAttention_v2 {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "SelfAttention_v2";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// width of each query, key, value and output vector
  Int d_out;
  /// default False: add a bias to the query, key and value projections (GPT-2 has one)
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=False): section 3.5.3.
/// Self-attention that hides future tokens with a causal mask, plus dropout on the attention
/// weights.
struct CausalAttention {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "CausalAttention";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// width of each query, key, value and output vector
  Int d_out;
  /// most tokens the causal mask buffer covers (context_length x context_length)
  Int context_length;
  /// probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))
  Float dropout;
  /// default False: add a bias to the query, key and value projections (GPT-2 has one)
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MultiHeadAttentionWrapper(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
/// section 3.6.1.
/// num_heads CausalAttention modules run one after another; their outputs are concatenated.
struct MultiHeadAttentionWrapper {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MultiHeadAttentionWrapper";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// width of EACH head's output; the module's output is num_heads x d_out wide
  Int d_out;
  /// most tokens the causal mask buffer covers (context_length x context_length)
  Int context_length;
  /// probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))
  Float dropout;
  /// number of independent CausalAttention heads, concatenated on the last axis
  Int num_heads;
  /// default False: add a bias to the query, key and value projections (GPT-2 has one)
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "num_heads", num_heads);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False): section
/// 3.6.2.
/// Fused multi-head attention: one projection per q/k/v split into heads, merged, then out_proj.
struct MultiHeadAttention {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MultiHeadAttention";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// most tokens the causal mask buffer covers (context_length x context_length)
  Int context_length;
  /// probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))
  Float dropout;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// default False: add a bias to the query, key and value projections (GPT-2 has one)
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "num_heads", num_heads);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MultiHeadAttentionCombinedQKV(d_in, d_out, num_heads, context_length, dropout=0.0,
/// qkv_bias=False): chapter 3 bonus,
/// ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb.
/// Multi-head attention with one packed projection qkv = nn.Linear(d_in, 3 * d_out): its output is
/// viewed as (b, num_tokens, 3, num_heads, head_dim) and split into queries, keys and values; the
/// merge views back to x's width, so d_in must equal d_out.
struct MultiHeadAttentionCombinedQKV {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MultiHeadAttentionCombinedQKV";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// most tokens the module is built for (context_length x context_length)
  Int context_length;
  /// default 0.0: probability of zeroing each attention weight in training (survivors scaled by
  /// 1/(1-p))
  Defaulted<Float> dropout = {};
  /// default False: add a bias to the packed query/key/value projection
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "num_heads", num_heads);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MHAEinsum(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False): chapter 3 bonus,
/// ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb.
/// Multi-head attention written with torch.einsum: W_query, W_key, W_value are (d_in, d_out)
/// parameters used as x \@ W (einsum "bnd,do->bno"); bias_q, bias_k, bias_v with qkv_bias;
/// out_proj.
struct MHAEinsum {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MHAEinsum";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// most tokens the causal mask buffer covers (context_length x context_length)
  Int context_length;
  /// probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))
  Float dropout;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// default False: add a bias to the query, key and value projections (GPT-2 has one)
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "num_heads", num_heads);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MHAPyTorchScaledDotProduct(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False):
/// chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb.
/// The packed projection with PyTorch's scaled_dot_product_attention(is_causal=True): the causal
/// mask is built for the tokens given, so context_length is stored but never read.
struct MHAPyTorchScaledDotProduct {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MHAPyTorchScaledDotProduct";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// most tokens the module is built for (context_length x context_length)
  Int context_length;
  /// default 0.0: probability of zeroing each attention weight in training (survivors scaled by
  /// 1/(1-p))
  Defaulted<Float> dropout = {};
  /// default False: add a bias to the packed query/key/value projection
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "num_heads", num_heads);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MHAPyTorchSDPAWithoutFlash(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False):
/// chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb.
/// scaled_dot_product_attention with an explicit mask: the buffer triu(ones, diagonal=1).bool() is
/// passed as attn_mask, where True means "attend", so the mask is inverted (the book repository's
/// issue #1061): each query sees only later tokens and the last one none (NaN).
struct MHAPyTorchSDPAWithoutFlash {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MHAPyTorchSDPAWithoutFlash";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// most tokens the module is built for (context_length x context_length)
  Int context_length;
  /// default 0.0: probability of zeroing each attention weight in training (survivors scaled by
  /// 1/(1-p))
  Defaulted<Float> dropout = {};
  /// default False: add a bias to the packed query/key/value projection
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "num_heads", num_heads);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MHAPyTorchFlexAttention(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False):
/// chapter 3 bonus, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb.
/// The packed projection with FlexAttention and a causal block mask built for the tokens given in
/// each forward, so context_length is stored but never read; FlexAttention has no dropout, so the
/// dropout slot is never used.
struct MHAPyTorchFlexAttention {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MHAPyTorchFlexAttention";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// most tokens the module is built for (context_length x context_length)
  Int context_length;
  /// default 0.0: probability of zeroing each attention weight in training (survivors scaled by
  /// 1/(1-p))
  Defaulted<Float> dropout = {};
  /// default False: add a bias to the packed query/key/value projection
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "num_heads", num_heads);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MHAPyTorchClass(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False,
/// need_weights=True): chapter 3 bonus,
/// ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb.
/// PyTorch's own nn.MultiheadAttention(embed_dim=d_out, num_heads, dropout, bias=qkv_bias,
/// add_bias_kv=qkv_bias, batch_first=True) with a boolean causal mask, then proj = nn.Linear(d_out,
/// d_out). embed_dim is d_out, so d_in must equal d_out; qkv_bias also adds bias_k/bias_v, one
/// extra key/value token every query sees.
struct MHAPyTorchClass {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MHAPyTorchClass";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// most tokens the module is built for (context_length x context_length)
  Int context_length;
  /// default 0.0: probability of zeroing each attention weight in training (survivors scaled by
  /// 1/(1-p))
  Defaulted<Float> dropout = {};
  /// default False: add a bias to the packed query/key/value projection
  Defaulted<Bool> qkv_bias = {};
  /// default True: return the head-averaged attention weights too (False lets nn.MultiheadAttention
  /// use scaled_dot_product_attention)
  Defaulted<Bool> need_weights = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "num_heads", num_heads);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "qkv_bias", qkv_bias);
    put(m, "need_weights", need_weights);
    return m;
  }
};

/// PyTorchMultiHeadAttention(d_in, d_out, num_heads, dropout=0.0, qkv_bias=False): chapter 3 bonus,
/// pkg/llms_from_scratch/ch03.py.
/// The packed projection with scaled_dot_product_attention(is_causal=True), as packaged in
/// llms_from_scratch (ch03.py); no context_length at all.
struct PyTorchMultiHeadAttention {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "PyTorchMultiHeadAttention";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// default 0.0: probability of zeroing each attention weight in training (survivors scaled by
  /// 1/(1-p))
  Defaulted<Float> dropout = {};
  /// default False: add a bias to the packed query/key/value projection
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "num_heads", num_heads);
    put(m, "dropout", dropout);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// GroupedQueryAttention(d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None,
/// qkv_bias=False): chapter 4 bonus, ch04/04_gqa/gpt_with_kv_gqa.py.
/// Grouped-query attention: num_kv_groups key/value heads, each shared by a group of query heads
/// (repeat_interleave); causal mask for the tokens given; out_proj without bias.
struct GroupedQueryAttention {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "GroupedQueryAttention";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL width of the queries and the output, split into num_heads heads of head_dim = d_out /
  /// num_heads
  Int d_out;
  /// probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))
  Float dropout;
  /// number of query heads; d_out must be divisible by it
  Int num_heads;
  /// number of key/value heads, each shared by num_heads / num_kv_groups query heads (1:
  /// multi-query attention)
  Int num_kv_groups;
  /// default None: parameter dtype: None (float32, PyTorch's default)
  Defaulted<Dtype> dtype = {};
  /// default False: add a bias to the query, key and value projections
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "dropout", dropout);
    put(m, "num_heads", num_heads);
    put(m, "num_kv_groups", num_kv_groups);
    put(m, "dtype", dtype);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MultiHeadLatentAttention(d_in, d_out, dropout, num_heads, qkv_bias=False, latent_dim=None):
/// chapter 4 bonus, ch04/05_mla/gpt_with_kv_mla.py.
/// Multi-head latent attention: x is projected down to a latent c_kv = W_DKV(x) of latent_dim per
/// token (what its KV cache stores), and keys and values are re-projected from it (W_UK, W_UV);
/// queries, causal mask for the tokens given, out_proj as in MultiHeadAttention; no RoPE.
struct MultiHeadLatentAttention {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MultiHeadLatentAttention";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))
  Float dropout;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// default False: add a bias to W_query, W_DKV, W_UK and W_UV
  Defaulted<Bool> qkv_bias = {};
  /// default None: width of the latent c_kv = W_DKV(x) that keys and values are re-projected from
  /// (None: max(16, d_out // 8))
  Defaulted<OptionalInt> latent_dim = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "dropout", dropout);
    put(m, "num_heads", num_heads);
    put(m, "qkv_bias", qkv_bias);
    put(m, "latent_dim", latent_dim);
    return m;
  }
};

/// MultiHeadAttentionWithSWA(d_in, d_out, dropout, num_heads, qkv_bias=False,
/// sliding_window_size=None): chapter 4 bonus, ch04/06_swa/gpt_with_kv_swa.py.
/// The book's MultiHeadAttention with a sliding-window causal mask: key j is hidden from query i
/// when j > i or i - j >= sliding_window_size; no context_length.
struct MultiHeadAttentionWithSWA {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MultiHeadAttentionWithSWA";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))
  Float dropout;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// default False: add a bias to the query, key and value projections
  Defaulted<Bool> qkv_bias = {};
  /// default None: keys a query sees: itself and the sliding_window_size - 1 before it (None: every
  /// earlier key, plain causal)
  Defaulted<OptionalInt> sliding_window_size = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "dropout", dropout);
    put(m, "num_heads", num_heads);
    put(m, "qkv_bias", qkv_bias);
    put(m, "sliding_window_size", sliding_window_size);
    return m;
  }
};

/// GatedMultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
/// chapter 4 bonus, ch04/08_deltanet/README.md.
/// The chapter's MultiHeadAttention with an output gate (Qwen3-Next's gated attention): the merged
/// heads are multiplied by sigmoid(W_gate(x)) before out_proj, and the causal mask fills
/// torch.finfo(float32).min instead of -inf.
struct GatedMultiHeadAttention {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "GatedMultiHeadAttention";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// most tokens the causal mask buffer covers (context_length x context_length)
  Int context_length;
  /// probability of zeroing each attention weight in training (survivors scaled by 1/(1-p))
  Float dropout;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// default False: add a bias to W_query, W_gate, W_key and W_value
  Defaulted<Bool> qkv_bias = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "context_length", context_length);
    put(m, "dropout", dropout);
    put(m, "num_heads", num_heads);
    put(m, "qkv_bias", qkv_bias);
    return m;
  }
};

/// MultiHeadAttention(d_in, d_out, context_length, num_heads, dtype=None):
/// MultiHeadAttention\@ch05/07_gpt_to_llama, chapter 5 bonus,
/// ch05/07_gpt_to_llama/converting-gpt-to-llama2.ipynb.
/// Llama 2's multi-head attention: the chapter's MultiHeadAttention with no biases (out_proj too),
/// no dropout, and rotary position embeddings (RoPE, theta 10,000) applied to queries and keys
/// after the head split, from cos and sin buffers of context_length rows.
struct MultiHeadAttention_ch05_07_gpt_to_llama {
  /// The class's name in the recipe list (validated_config looks it up).
  static constexpr const char* class_name = "MultiHeadAttention@ch05/07_gpt_to_llama";
  /// width of each input token embedding (last axis of x)
  Int d_in;
  /// TOTAL output width, split into num_heads heads of head_dim = d_out / num_heads
  Int d_out;
  /// rows of the causal mask buffer and of RoPE's cos and sin tables: the most positions the module
  /// can take
  Int context_length;
  /// number of heads sharing d_out; d_out must be divisible by it
  Int num_heads;
  /// default None: parameter dtype: None (float32, PyTorch's default; the book passes
  /// torch.bfloat16 for Llama 2 7B)
  Defaulted<Dtype> dtype = {};
  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.
  SlotMap slots() const {
    SlotMap m;
    put(m, "d_in", d_in);
    put(m, "d_out", d_out);
    put(m, "context_length", context_length);
    put(m, "num_heads", num_heads);
    put(m, "dtype", dtype);
    return m;
  }
};

}  // namespace attention_lab::typed
