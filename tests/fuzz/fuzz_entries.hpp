// The fuzzed entry points, shared by the libFuzzer targets (tests/fuzz/fuzz_*.cpp) and the replay test
// (tests/native/fuzz_regressions_test.cpp), so a regression input replays exactly the fuzzed code.
//
// Bad input is expected: the core answers it with diagnostics or an AttentionError, which `run`
// swallows. Anything else escaping is a bug: a std::exception from the library (std::out_of_range from
// std::stod, std::length_error from a negative size), or InvariantBroken, thrown here when the core
// breaks one of its own promises (parse_call never throws; a clean parse builds a valid module; a
// valid setup's forward runs and tracing does not change its bits; a parsed header's entries lie
// inside the file; ...). ASan and UBSan catch the rest in the fuzz build.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <set>

#include "attention_lab/call_parser.hpp"
#include "attention_lab/checkpoint.hpp"
#include "attention_lab/gpt2.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab::fuzz {

/// The core broke a promise on this input (not an input error).
struct InvariantBroken : std::logic_error {
  using std::logic_error::logic_error;
};

inline void require(bool ok, const std::string& what) {
  if (!ok) throw InvariantBroken(what);
}

/// Runs one entry on one input: AttentionError is the core's answer to bad input; everything else escapes.
template <typename Entry>
void run(Entry&& entry, const uint8_t* data, size_t size) {
  try {
    entry(data, size);
  } catch (const AttentionError&) {}
}

/// Reads the fuzz bytes front to back; past the end every read is 0.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t bytes_le(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(byte()) << (8 * i);
    return v;
  }
  double raw_double() {
    const uint64_t bits = bytes_le(8);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  float raw_float() {
    const uint32_t bits = static_cast<uint32_t>(bytes_le(4));
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  std::string text(size_t n) {
    std::string s;
    for (size_t i = 0; i < n && pos_ < size_; ++i) s += static_cast<char>(byte());
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

inline bool same_config(const ModuleConfig& a, const ModuleConfig& b) {
  return a.spec == b.spec && a.d_in == b.d_in && a.d_out == b.d_out && a.context_length == b.context_length && a.dropout == b.dropout && a.num_heads == b.num_heads &&
         a.qkv_bias == b.qkv_bias;
}

/// Forward on `x` with and without the trace: the same bits, the right shape, or an AttentionError
/// whose code is in `allowed` (empty: none allowed).
inline void forward_both_ways(const AttentionModule& m, const Tensor& x, bool training, uint64_t seed, const std::vector<std::string>& allowed) {
  TorchGenerator g1(seed), g2(seed);
  std::vector<Stage> trace;
  Tensor plain, traced;
  try {
    plain = m.forward(x, ForwardOptions{training, &g1, nullptr});
  } catch (const AttentionError& e) {
    bool ok = false;
    for (const auto& code : allowed) ok = ok || e.code() == code;
    require(ok, "forward threw " + e.code() + " on " + shape_string(x.shape) + " for " + m.config().python_call() + ": " + e.what());
    return;
  }
  traced = m.forward(x, ForwardOptions{training, &g2, &trace});
  const ModuleConfig& c = m.config();
  const Shape want = c.batched() ? Shape{x.shape[0], x.shape[1], c.output_width()} : Shape{x.shape[0], c.output_width()};
  require(plain.shape == want, "output shape " + shape_string(plain.shape) + " for " + c.python_call());
  require(plain.data.size() == traced.data.size() && std::memcmp(plain.data.data(), traced.data.data(), plain.data.size() * sizeof(float)) == 0,
          "tracing changed the output of " + c.python_call());
  require(g1.state() == g2.state(), "tracing changed the dropout draws");
  require(!trace.empty() && trace.back().id == "output", "the trace does not end with the output");
}

// ---- fuzz_call_parser: the bytes as a pasted call ----

inline void call_parser(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ParsedCall call = parse_call(text);
    for (const auto& d : call.diagnostics) require(!d.code.empty() && !d.message.empty(), "a diagnostic without code or message");
    parse_literal(text);
    if (has_error(call.diagnostics)) return;
    // A clean parse names a class, builds a valid config, and its Python call reads back the same.
    require(find_class(call.class_name) != nullptr, "no error but no class: " + call.class_name);
    const ModuleConfig c = validated_config(call.class_name, call.config);
    const ParsedCall again = parse_call(c.python_call());
    require(!has_error(again.diagnostics), "python_call() does not parse back: " + c.python_call());
    require(same_config(to_module_config(again.class_name, again.config), c), "python_call() reads back differently: " + c.python_call());
  } catch (const AttentionError& e) {
    throw InvariantBroken(std::string("parse_call or a clean parse threw AttentionError ") + e.code() + ": " + e.what());
  }
}

// ---- fuzz_validator: the bytes as a class, slot values of every kind, options, then a tiny forward ----
//
// Layout (every read past the end is 0):
//   class byte (% 8: the five classes, then "", "MultiheadAttention", "SelfAttention_v3");
//   for each of d_in, d_out, context_length, dropout, num_heads, qkv_bias, n_heads, bias: a kind byte
//   (% 10: 0 absent, 1 int8, 2 int32, 3 int from raw double bits, 4 float from raw double bits,
//   5 float byte/256, 6 bool, 7 None, 8 string (length byte % 8, bytes), 9 Python literal text via
//   parse_literal (length byte % 16, bytes)) and its bytes;
//   options byte: bit 0 an input shape of rank (bits 2-4) % 5, each size an int8 (bit 5: an int64);
//   bit 1 a small budget (uint32 bytes);
//   forward byte: bit 0 training, bit 2 raw float input values (else seeded), bits 3-5 num_tokens - 1,
//   bit 6 batch of 2; then a uint32 seed, then raw float values.

inline SlotValue fuzz_slot_value(Reader& r, uint8_t kind) {
  switch (kind % 10) {
    case 1:
      return SlotValue::integer(static_cast<int8_t>(r.byte()));
    case 2:
      return SlotValue::integer(static_cast<int32_t>(r.bytes_le(4)));
    case 3:
      return SlotValue::integer(r.raw_double());
    case 4:
      return SlotValue::floating(r.raw_double());
    case 5:
      return SlotValue::floating(r.byte() / 256.0);
    case 6:
      return SlotValue::boolean_value(r.byte() & 1);
    case 7:
      return SlotValue::none();
    case 8:
      return SlotValue::string(r.text(r.byte() % 8));
    default:
      return parse_literal(r.text(r.byte() % 16));
  }
}

inline void validator(const uint8_t* data, size_t size) {
  Reader r(data, size);
  static const char* classes[] = {"SelfAttention_v1",   "SelfAttention_v2", "CausalAttention",       "MultiHeadAttentionWrapper", "MultiHeadAttention", "",
                                  "MultiheadAttention", "SelfAttention_v3", "GroupedQueryAttention", "MultiHeadAttentionWithSWA"};
  const std::string class_name = classes[r.byte() % 10];
  SlotMap config;
  for (const char* name : {"d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias", "n_heads", "bias", "num_kv_groups", "sliding_window_size", "dtype"}) {
    const uint8_t kind = r.byte();
    if (kind % 10 != 0) config[name] = fuzz_slot_value(r, kind);
  }
  CheckOptions options;
  const uint8_t o = r.byte();
  if (o & 1) {
    Shape s;
    for (int i = 0; i < ((o >> 2) & 7) % 5; ++i) s.push_back((o & 32) ? static_cast<int64_t>(r.bytes_le(8)) : static_cast<int8_t>(r.byte()));
    options.input_shape = s;
  }
  if (o & 2) options.memory_budget_bytes = static_cast<double>(r.bytes_le(4));

  std::vector<Diagnostic> diags;
  try {
    diags = check_config(class_name, config, options);
  } catch (const AttentionError& e) {
    throw InvariantBroken(std::string("check_config threw ") + e.code());
  }
  const Diagnostic* first = nullptr;
  for (const auto& d : diags) {
    require(!d.code.empty(), "a diagnostic without a code");
    if (!first && d.severity == Severity::Error) first = &d;
  }
  if (first != nullptr) {
    // validated_config throws exactly the first error.
    try {
      validated_config(class_name, config, options);
    } catch (const AttentionError& e) {
      require(e.code() == first->code, "validated_config threw " + e.code() + ", check_config said " + first->code);
      return;
    }
    throw InvariantBroken("validated_config accepted what check_config refused (" + first->code + ")");
  }
  const ModuleConfig c = validated_config(class_name, config, options);
  require(estimate_bytes(c, options.input_shape) <= options.memory_budget_bytes, "a valid setup over the budget");
  // Everything describe() shows must work on any valid config.
  const int64_t count = parameter_count(c);
  require(count > 0 && c.head_dim() > 0 && c.output_width() > 0, "a valid config with no parameters or width");
  c.output_width_rule();
  c.python_call();

  // A tiny forward when the module is small.
  const uint8_t f = r.byte();
  const uint64_t seed = r.bytes_le(4);
  if (count > 20000 || c.d_in > 64) return;
  TorchGenerator init(seed);
  const AttentionModule m(c, init);
  int64_t tokens = 1 + ((f >> 3) & 7);
  if (c.has_context_length()) tokens = std::min<int64_t>(tokens, c.context_length);  // the bonus classes take any number
  const Shape shape = c.batched() ? Shape{(f & 64) ? 2 : 1, tokens, c.d_in} : Shape{tokens, c.d_in};
  Tensor x = seeded_tokens(numel_of(shape) / c.d_in, c.d_in, seed);
  x.shape = shape;
  std::vector<std::string> allowed;
  if (f & 4) {
    for (float& v : x.data) v = r.raw_float();
    allowed.push_back("non_finite_input");
  }
  if (options.memory_budget_bytes < kDefaultMemoryBudgetBytes) allowed.push_back("too_large");
  forward_both_ways(m, x, f & 1, seed, allowed);
}

// ---- fuzz_checkpoint_header: the bytes as a whole .safetensors file ----

inline void checkpoint_header(const uint8_t* data, size_t size) {
  uint64_t n = 0;
  SafetensorsHeader h;
  try {
    n = safetensors_header_length(data, std::min<size_t>(size, 8), size);
    h = parse_safetensors_header(data + 8, static_cast<size_t>(n), size);
  } catch (const AttentionError&) {
    return;
  }
  require(8 + n <= size, "the header runs past the file");
  for (const auto& e : h.entries) require(e.begin <= e.end && h.data_start() + e.end <= size, "an entry outside the file: " + e.key);
  // An accepted header tiles the data section exactly: no overlap, no hole, nothing after the last tensor.
  uint64_t total = 0;
  for (const auto& e : h.entries) total += e.end - e.begin;
  require(total == size - h.data_start(), "accepted tensors do not cover the data section exactly");
  std::set<std::string> keys;
  for (const auto& e : h.entries) require(keys.insert(e.key).second, "an accepted header with a duplicate key: " + e.key);

  // The block input (ln_1(wte[ids] + wpe[:T])) reads rows by token id: ids in and out of the vocabulary.
  for (const std::vector<int64_t>& ids : {std::vector<int64_t>{0, 1, 0}, std::vector<int64_t>{-1}, std::vector<int64_t>{int64_t{1} << 40}}) {
    try {
      const std::vector<ByteRead> reads = plan_gpt2_block_input(h, ids, 0);
      std::map<std::string, std::vector<uint8_t>> bytes;
      for (const auto& r : reads) {
        require(r.entry.begin <= r.entry.end && h.data_start() + r.entry.end <= size, "a block-input read outside the file: " + r.name);
        bytes[r.name] = std::vector<uint8_t>(data + h.data_start() + r.entry.begin, data + h.data_start() + r.entry.end);
      }
      const Tensor x = gpt2_block_input(h, ids, 0, bytes);
      require(x.shape.size() == 3 && x.shape[1] == static_cast<int64_t>(ids.size()), "block input of shape " + shape_string(x.shape));
    } catch (const AttentionError&) {}
  }

  std::vector<CheckpointOptions> variants(4);
  variants[1].num_heads = 2;
  variants[2].num_heads = 4;
  variants[2].layer = 1;
  variants[2].context_length = 16;
  variants[3].into = ModuleConfig{&checkpoint_class(), 4, 4, 8, 0.0, 2, true};
  for (const auto& options : variants) {
    CheckpointPlan plan;
    try {
      plan = plan_gpt2_attention(h, options);
    } catch (const AttentionError&) {
      continue;
    }
    require(plan.config.d_in > 0 && plan.config.num_heads > 0 && plan.config.d_out % plan.config.num_heads == 0 && plan.config.context_length > 0,
            "a plan with an impossible config");
    std::map<std::string, std::vector<uint8_t>> bytes;
    for (const auto& e : plan.needed) {
      require(h.find(e.key) != nullptr, "the plan needs a key the header lacks: " + e.key);
      bytes[e.key] = std::vector<uint8_t>(data + h.data_start() + e.begin, data + h.data_start() + e.end);
    }
    std::optional<AttentionModule> loaded;
    try {
      loaded.emplace(load_gpt2_attention(plan, bytes));
    } catch (const AttentionError& e) {
      // The plan does not look at dtypes or values; every other problem must have been caught by then.
      require(e.code() == "checkpoint_dtype" || e.code() == "non_finite_parameter", "load_gpt2_attention threw " + e.code() + " on a plan it made: " + e.what());
      continue;
    }
    const AttentionModule& m = *loaded;
    require(same_config(m.config(), plan.config), "the loaded module differs from the plan");
    if (m.config().d_in <= 32) {
      const Tensor x = seeded_tokens(2, m.config().d_in, 1);
      forward_both_ways(m,
                        Tensor({1, std::min<int64_t>(2, m.config().context_length), m.config().d_in},
                               std::vector<float>(x.data.begin(), x.data.begin() + std::min<int64_t>(2, m.config().context_length) * m.config().d_in)),
                        false, 1, {});
    }
  }
}

// ---- fuzz_gpt2_file: the bytes as the structure of a whole GPT-2 file, then a run on it ----
//
// The bytes describe a file (made here, so its header is always well formed) rather than being one:
// the fuzzer explores the layer structure and the values, not JSON syntax (fuzz_checkpoint_header does).
// Layout (every read past the end is 0):
//   d byte (1 + % 12), n_ctx byte (1 + % 12), vocab byte (1 + % 48);
//   heads byte: % 4: 0 none, 1 the option (next byte % 9), 2 __metadata__ n_head as digits (next byte
//   % 13), 3 __metadata__ n_head as text (length byte % 6, bytes);
//   prefix byte: bit 0 "transformer.", bit 1 a second set of blocks under the other prefix (next byte % 3
//   of them), bit 2 drop wte, bit 3 drop wpe, bit 4 drop ln_f.bias;
//   dtype byte: % 5: F32, F16, BF16, F64, each tensor's own (its own byte % 4);
//   blocks byte (% 5), then per block a flags byte: bit 0 skip numbers before it (a gap of next byte % 4),
//   bit 1 drop the keys of the next two bytes' 12-bit mask, bit 2 a wrong shape for key (next byte % 12),
//   bit 3 a mask buffer attn.bias beside it;
//   values byte: % 4: 0 seeded small, 1 seeded times 2^(next byte % 128), 2 raw floats from the bytes
//   that follow the token ids, 3 seeded with one value (next uint32 as a float) at index next byte;
//   tokens byte (count 1 + % 6), each id a byte (% (vocab + 2)).

struct FuzzTensor {
  std::string key, dtype;
  Shape shape;
};

inline std::vector<uint8_t> encode_values(const std::vector<float>& v, const std::string& dtype) {
  std::vector<uint8_t> out;
  for (const float x : v) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if (dtype == "F32") {
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(u >> (8 * i)));
    } else if (dtype == "F64") {
      const double y = x;
      uint64_t w;
      std::memcpy(&w, &y, 8);
      for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(w >> (8 * i)));
    } else if (dtype == "BF16") {
      out.push_back(static_cast<uint8_t>(u >> 16));
      out.push_back(static_cast<uint8_t>(u >> 24));
    } else {  // F16, truncated; out-of-range exponents saturate to inf (as a float16 save does)
      const int32_t e = static_cast<int32_t>((u >> 23) & 0xff) - 112;
      uint16_t h = static_cast<uint16_t>((u >> 16) & 0x8000u);
      if (((u >> 23) & 0xff) == 0xff || e >= 31)
        h |= 0x7c00u | (((u & 0x7fffffu) != 0 && ((u >> 23) & 0xff) == 0xff) ? 0x200u : 0u);
      else if (e > 0)
        h |= static_cast<uint16_t>((static_cast<uint32_t>(e) << 10) | ((u >> 13) & 0x3ffu));
      out.push_back(static_cast<uint8_t>(h & 0xff));
      out.push_back(static_cast<uint8_t>(h >> 8));
    }
  }
  return out;
}

inline void gpt2_file(const uint8_t* data, size_t size) {
  Reader r(data, size);
  const int64_t d = 1 + r.byte() % 12, n_ctx = 1 + r.byte() % 12, vocab = 1 + r.byte() % 48;
  std::optional<int64_t> heads_option;
  std::map<std::string, std::string> metadata;
  switch (r.byte() % 4) {
    case 1:
      heads_option = r.byte() % 9;
      break;
    case 2:
      metadata["n_head"] = std::to_string(r.byte() % 13);
      break;
    case 3:
      metadata["n_head"] = r.text(r.byte() % 6);
      break;
    default:
      break;
  }
  const uint8_t prefix_flags = r.byte();
  // bit 32: the book's GPTModel layout (tok_emb, trf_blocks.{i}.att.W_query ..., out_head), under "module." or no prefix
  const bool book = (prefix_flags & 32) != 0;
  const std::string prefix = (prefix_flags & 1) ? (book ? "module." : "transformer.") : "", other = (prefix_flags & 1) ? "" : "transformer.";
  const std::string stem = book ? "trf_blocks." : "h.";
  const uint8_t dtype_mode = r.byte() % 5;
  static const char* kDtypes[] = {"F32", "F16", "BF16", "F64"};
  const auto dtype = [&]() -> std::string { return dtype_mode < 4 ? kDtypes[dtype_mode] : kDtypes[r.byte() % 4]; };
  const std::vector<std::pair<std::string, Shape>> block = {
      {"ln_1.weight", {d}}, {"ln_1.bias", {d}}, {"attn.c_attn.weight", {d, 3 * d}}, {"attn.c_attn.bias", {3 * d}}, {"attn.c_proj.weight", {d, d}},    {"attn.c_proj.bias", {d}},
      {"ln_2.weight", {d}}, {"ln_2.bias", {d}}, {"mlp.c_fc.weight", {d, 4 * d}},    {"mlp.c_fc.bias", {4 * d}},    {"mlp.c_proj.weight", {4 * d, d}}, {"mlp.c_proj.bias", {d}}};
  const std::vector<std::pair<std::string, Shape>> book_block = {
      {"norm1.scale", {d}},      {"norm1.shift", {d}},    {"att.W_query.weight", {d, d}},     {"att.W_key.weight", {d, d}},    {"att.W_value.weight", {d, d}},
      {"att.W_query.bias", {d}}, {"att.W_key.bias", {d}}, {"att.W_value.bias", {d}},          {"att.out_proj.weight", {d, d}}, {"att.out_proj.bias", {d}},
      {"norm2.scale", {d}},      {"norm2.shift", {d}},    {"ff.layers.0.weight", {4 * d, d}}, {"ff.layers.0.bias", {4 * d}},   {"ff.layers.2.weight", {d, 4 * d}},
      {"ff.layers.2.bias", {d}}};
  const auto& keys = book ? book_block : block;
  std::vector<FuzzTensor> tensors;
  if (!(prefix_flags & 4)) tensors.push_back({prefix + (book ? "tok_emb.weight" : "wte.weight"), dtype(), {vocab, d}});
  if (!(prefix_flags & 8)) tensors.push_back({prefix + (book ? "pos_emb.weight" : "wpe.weight"), dtype(), {n_ctx, d}});
  const int blocks = r.byte() % 5;
  int64_t number = 0;
  for (int b = 0; b < blocks; ++b, ++number) {
    const uint8_t flags = r.byte();
    if (flags & 1) number += r.byte() % 4;
    const uint32_t drop = (flags & 2) ? static_cast<uint32_t>(r.bytes_le(2)) & 0xffffu : 0u;
    const int wrong = (flags & 4) ? r.byte() % static_cast<int>(keys.size()) : -1;
    for (size_t k = 0; k < keys.size(); ++k) {
      if (drop & (1u << k)) continue;
      Shape shape = keys[k].second;
      if (static_cast<int>(k) == wrong) shape.back() += 1;
      tensors.push_back({prefix + stem + std::to_string(number) + "." + keys[k].first, dtype(), shape});
    }
    if ((flags & 8) && book) tensors.push_back({prefix + stem + std::to_string(number) + ".att.mask", "F32", {n_ctx, n_ctx + (flags & 16 ? 1 : 0)}});
    if ((flags & 8) && !book) tensors.push_back({prefix + "h." + std::to_string(number) + ".attn.bias", "F32", {1, 1, n_ctx, n_ctx}});
  }
  if ((prefix_flags & 2) && !book)
    for (int b = 0, n = r.byte() % 3; b < n; ++b)
      for (const auto& [key, shape] : block) tensors.push_back({other + "h." + std::to_string(b) + "." + key, "F32", shape});
  tensors.push_back({prefix + (book ? "final_norm.scale" : "ln_f.weight"), dtype(), {d}});
  if (!(prefix_flags & 16)) tensors.push_back({prefix + (book ? "final_norm.shift" : "ln_f.bias"), dtype(), {d}});
  if (book && !(prefix_flags & 64)) tensors.push_back({prefix + "out_head.weight", dtype(), {(prefix_flags & 128) ? 2 : vocab, d}});  // 2: a classifier
  if (book && (prefix_flags & 128)) tensors.push_back({prefix + "out_head.bias", dtype(), {2}});

  const uint8_t values_mode = r.byte() % 4;
  const float scale = values_mode == 1 ? std::ldexp(1.0f, r.byte() % 128) : 1.0f;
  const float one = values_mode == 3 ? r.raw_float() : 0.0f;
  const size_t one_at = values_mode == 3 ? r.byte() : 0;
  std::vector<int64_t> ids(static_cast<size_t>(1 + r.byte() % 6));
  for (int64_t& id : ids) id = static_cast<int64_t>(r.byte() % (vocab + 2));

  // the file: header (keys sorted by nlohmann, offsets in that order), then each tensor's bytes
  nlohmann::json header = nlohmann::json::object();
  std::map<std::string, const FuzzTensor*> sorted;
  for (const auto& t : tensors) sorted[t.key] = &t;
  std::vector<uint8_t> body;
  uint32_t lcg = 12345;
  for (const auto& [key, t] : sorted) {
    std::vector<float> v(static_cast<size_t>(numel_of(t->shape)));
    for (size_t i = 0; i < v.size(); ++i) {
      lcg = lcg * 1103515245u + 12345u;
      const float seeded = (static_cast<float>(lcg >> 8) / 16777216.0f - 0.5f) * 0.2f +
                           ((key.find("ln_") != std::string::npos && key.find(".weight") != std::string::npos) || key.find(".scale") != std::string::npos ? 1.0f : 0.0f);
      v[i] = values_mode == 2 ? r.raw_float() : seeded * scale;
      if (values_mode == 3 && i == one_at % v.size()) v[i] = one;
    }
    const size_t begin = body.size();
    const std::vector<uint8_t> bytes = encode_values(v, t->dtype);
    body.insert(body.end(), bytes.begin(), bytes.end());
    header[key] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {begin, body.size()}}};
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  // bytes that are not UTF-8 (a fuzzed n_head text) become U+FFFD, as a saver writing JSON would have to
  const std::string json = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const SafetensorsHeader h = parse_safetensors_header(reinterpret_cast<const uint8_t*>(json.data()), json.size(), 8 + json.size() + body.size());
  const auto bytes_of = [&](const std::vector<ByteRead>& reads) {
    std::map<std::string, std::vector<uint8_t>> out;
    for (const auto& rd : reads) {
      require(rd.entry.begin <= rd.entry.end && rd.entry.end <= body.size(), "a read outside the file: " + rd.name);
      out[rd.name] = std::vector<uint8_t>(body.begin() + static_cast<std::ptrdiff_t>(rd.entry.begin), body.begin() + static_cast<std::ptrdiff_t>(rd.entry.end));
    }
    return out;
  };

  // layer 0's input: refused, or finite (never NaN handed to the page)
  try {
    const std::vector<ByteRead> reads = plan_gpt2_block_input(h, ids, 0);
    const Tensor x = gpt2_block_input(h, ids, 0, bytes_of(reads));
    require(first_non_finite(x.data.data(), x.data.size(), x.shape).empty(), "a layer-0 input with NaN or infinity");
  } catch (const AttentionError&) {}

  Gpt2Config c;
  try {
    c = gpt2_config(h, heads_option);
  } catch (const AttentionError& e) {
    static const std::set<std::string> kConfig = {"checkpoint_missing_key", "checkpoint_bad_header", "checkpoint_shape",
                                                  "checkpoint_dtype",       "checkpoint_num_heads",  "checkpoint_layer"};
    require(kConfig.count(e.code()) == 1, "gpt2_config threw " + e.code() + ": " + e.what());
    return;
  }
  // An accepted file is the whole model: blocks 0 .. n_layer-1 complete and of the right shapes, nothing
  // past them, no second set of blocks, a head count that divides the width.
  require(c.prefix == prefix, "an accepted model under another prefix than its wte's");
  require(c.n_layer >= 1 && c.n_head >= 1 && c.n_embd % c.n_head == 0, "an accepted config with no blocks or a bad head count");
  for (int64_t L = 0; L < c.n_layer; ++L)
    for (const auto& [key, shape] : keys) {
      if (!c.qkv_bias && key.find("W_") != std::string::npos && key.find(".bias") != std::string::npos) continue;  // the book's qkv_bias=False
      const SafetensorsEntry* e = h.find(c.prefix + stem + std::to_string(L) + "." + key);
      require(e != nullptr && e->shape.size() == shape.size(), "an accepted model lacks block " + std::to_string(L) + "'s " + key);
      require(static_cast<int64_t>(safetensors_dtype_size(e->dtype)) <= c.value_bytes, "value_bytes under a block's dtype");
    }
  for (const auto& e : h.entries) {
    if (!book) require(e.key.rfind(other + "h.", 0) != 0, "an accepted model beside a second set of blocks: " + e.key);
    if (e.key.rfind(c.prefix + stem, 0) == 0) require(std::atoll(e.key.c_str() + c.prefix.size() + stem.size()) < c.n_layer, "a block past n_layer was ignored: " + e.key);
  }
  const double estimate = gpt2_run_bytes(c, static_cast<int64_t>(ids.size()));
  require(std::isfinite(estimate) && estimate > 0, "an estimate that is not a positive number");

  // the run: refused with a code, or logits and probabilities that are all finite
  try {
    Gpt2Run run(h, c, ids);
    while (!run.finished()) {
      const Gpt2Run::Step step = run.step(bytes_of(run.reads()));
      if (!step.block) continue;
      const Tensor& w = step.block->attn_weights;
      require(first_non_finite(w.data.data(), w.data.size(), w.shape).empty(), "attention weights with NaN");
    }
    const std::vector<float>& logits = run.last_logits();
    require(first_non_finite(logits.data(), logits.size(), Shape{c.n_out}).empty(), "a run resolved with non-finite logits");
    double sum = 0;
    for (const auto& [id, p] : run.top_tokens(5)) {
      require(id >= 0 && id < c.n_out && std::isfinite(p) && p >= 0 && p <= 1, "a top token with an impossible id or probability");
      sum += p;
    }
    require(sum <= 1.0 + 1e-9, "top probabilities over 1");
  } catch (const AttentionError& e) {
    static const std::set<std::string> kRun = {"input_empty", "checkpoint_token", "context_too_short", "too_large", "non_finite_parameter", "non_finite_stage"};
    require(kRun.count(e.code()) == 1, "the run threw " + e.code() + ": " + e.what());
  }
}

}  // namespace attention_lab::fuzz

#include "fuzz_torch_save.hpp"  // fuzz_torch_save's entry (torch_save) and the zips it builds
