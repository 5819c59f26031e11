#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <tuple>

#include "attention_lab/checkpoint.hpp"
#include "attention_lab/gpt2.hpp"
#include "attention_lab/validator.hpp"
#include "fixtures.hpp"
#include "refusal.hpp"
#include "tensor_compare.hpp"
#include "test_paths.hpp"

using namespace attention_lab;

namespace {

std::vector<uint8_t> read_file(const std::string& name) {
  std::ifstream in(std::string(attention_lab::test_paths::fixtures) + "/checkpoints/" + name, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

const nlohmann::json& expected() {
  static const nlohmann::json data = [] {
    std::ifstream in(std::string(attention_lab::test_paths::fixtures) + "/checkpoints/expected.json");
    return nlohmann::json::parse(in);
  }();
  return data;
}

SafetensorsHeader header_of(const std::vector<uint8_t>& file) {
  const uint64_t n = safetensors_header_length(file.data(), file.size(), file.size());
  return parse_safetensors_header(file.data() + 8, static_cast<size_t>(n), file.size());
}

/// Reads only the byte ranges the plan needs, as the page does with File.slice.
AttentionModule load(const std::vector<uint8_t>& file, const CheckpointPlan& plan, const SafetensorsHeader& h) {
  std::map<std::string, std::vector<uint8_t>> bytes;
  for (const auto& e : plan.needed) {
    const auto begin = file.begin() + static_cast<std::ptrdiff_t>(h.data_start() + e.begin);
    bytes[e.key] = std::vector<uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(e.end - e.begin));
  }
  return load_gpt2_attention(plan, bytes);
}

/// A header alone for tensors (key, dtype, shape) laid back to back, and the size the whole file would
/// have: plan_gpt2_attention reads only the header, so a 0.8 GB file need not exist.
SafetensorsHeader sparse_header(const std::vector<std::tuple<std::string, std::string, Shape>>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [key, dtype, shape] : tensors) {
    uint64_t bytes = dtype == "BF16" || dtype == "F16" ? 2 : 4;
    for (int64_t d : shape) bytes *= static_cast<uint64_t>(d);
    header[key] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  return parse_safetensors_header(reinterpret_cast<const uint8_t*>(text.data()), text.size(), 8 + text.size() + offset);
}

}  // namespace

TEST_SUITE("checkpoint") {
  TEST_CASE("the header is parsed from its bytes: every key, shape and offset is read") {
    for (const auto& [name, info] : expected().at("files").items()) {
      CAPTURE(name);
      const auto file = read_file(name);
      REQUIRE(file.size() == info.at("size").get<size_t>());
      const SafetensorsHeader h = header_of(file);
      CHECK(h.header_length == info.at("header_length").get<uint64_t>());
      std::vector<std::string> keys;
      for (const auto& e : h.entries) keys.push_back(e.key);
      std::sort(keys.begin(), keys.end());
      CHECK(keys == info.at("keys").get<std::vector<std::string>>());
    }
  }

  TEST_CASE("a header with a million keys parses into every entry, in key order, and find answers each key") {
    // The browser suite's file: __metadata__, layer 0 of width 4, then x0 .. x999999 (one F32 each), back to back.
    constexpr int64_t kExtra = 1'000'000;
    const std::vector<std::pair<std::string, Shape>> layer0 = {{"h.0.attn.c_attn.bias", {12}}, {"h.0.attn.c_attn.weight", {4, 12}},
                                                               {"h.0.attn.c_proj.bias", {4}},  {"h.0.attn.c_proj.weight", {4, 4}},
                                                               {"h.0.ln_1.bias", {4}},         {"h.0.ln_1.weight", {4}},
                                                               {"wpe.weight", {32, 4}},        {"wte.weight", {16, 4}}};
    std::string text = "{\"__metadata__\":{\"format\":\"pt\"}";
    uint64_t offset = 0;
    const auto add = [&](const std::string& key, const Shape& shape) {
      uint64_t bytes = 4;
      std::string dims;
      for (int64_t d : shape) {
        bytes *= static_cast<uint64_t>(d);
        dims += (dims.empty() ? "" : ",") + std::to_string(d);
      }
      text += ",\"" + key + "\":{\"dtype\":\"F32\",\"shape\":[" + dims + "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
      offset += bytes;
    };
    for (const auto& [key, shape] : layer0) add(key, shape);
    const uint64_t first_extra = offset;
    for (int64_t i = 0; i < kExtra; ++i) add("x" + std::to_string(i), {1});
    text += "}";
    text.append((8 - text.size() % 8) % 8, ' ');
    REQUIRE(text.size() > 60'000'000);
    const SafetensorsHeader h = parse_safetensors_header(reinterpret_cast<const uint8_t*>(text.data()), text.size(), 8 + text.size() + offset);
    CHECK(h.entries.size() == static_cast<size_t>(kExtra) + layer0.size());
    CHECK(h.metadata == std::map<std::string, std::string>{{"format", "pt"}});
    // Key order (byte order), as a JSON object reader walks them: x10 before x2, whatever the header's order.
    CHECK(std::adjacent_find(h.entries.begin(), h.entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return !(a.key < b.key); }) == h.entries.end());
    CHECK(h.entries.front().key == "h.0.attn.c_attn.bias");
    CHECK(h.entries.back().key == "x999999");
    for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{9}, int64_t{10}, int64_t{123456}, int64_t{500000}, kExtra - 1}) {
      CAPTURE(i);
      const SafetensorsEntry* e = h.find("x" + std::to_string(i));
      REQUIRE(e != nullptr);
      CHECK(e->key == "x" + std::to_string(i));
      CHECK(e->dtype == "F32");
      CHECK(e->shape == Shape{1});
      CHECK(e->begin == first_extra + 4 * static_cast<uint64_t>(i));
      CHECK(e->end == e->begin + 4);
    }
    const SafetensorsEntry* w = h.find("h.0.attn.c_attn.weight");
    REQUIRE(w != nullptr);
    CHECK(w->shape == Shape{4, 12});
    CHECK(w->begin == 48);
    CHECK(w->end == 48 + 4 * 48);
    for (const char* absent : {"x1000000", "x", "x-1", "", "__metadata__", "h.0", "zz"}) CHECK(h.find(absent) == nullptr);
    // Loading layer 0 from it: the report lists the first kCheckpointIgnoredListed ignored keys and
    // counts them all (ln_1's two, wpe, wte and the million), and names the highest layer.
    CheckpointOptions options;
    options.num_heads = 2;
    const CheckpointPlan plan = plan_gpt2_attention(h, options);
    CHECK(plan.report.used.size() == 4);
    CHECK(plan.report.ignored_count == kExtra + 4);
    REQUIRE(plan.report.ignored.size() == static_cast<size_t>(kCheckpointIgnoredListed));
    CHECK(plan.report.ignored.front().key == "h.0.ln_1.bias");
    CHECK(plan.report.ignored.front().reason == "not part of attention (layer norm or MLP)");
    // The four attention keys sort first, then ln_1 (2), wpe, wte, x0, x1, x10, x100, ...: the listed keys are the next 200 entries.
    for (size_t i = 0; i < plan.report.ignored.size(); ++i) CHECK(plan.report.ignored[i].key == h.entries[4 + i].key);
    CHECK(plan.report.max_layer == 0);
  }

  TEST_CASE("a header that breaks several rules is refused for the first a reader meets, as the format's strict reading has it") {
    const auto code_and_message = [](const std::string& text, uint64_t data = 4) {
      const Refused r = refused([&] { parse_safetensors_header(reinterpret_cast<const uint8_t*>(text.data()), text.size(), 8 + text.size() + data); });
      return r.code.empty() ? std::string("none") : r.code + ": " + r.message;
    };
    const std::string a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
    // A repeated key before a syntax error is refused as a repeat; after it, the syntax error is.
    CHECK(code_and_message("{" + a + "," + a + ",\"b\":[}").rfind("checkpoint_duplicate_key: the header lists 'a' twice;", 0) == 0);
    CHECK(code_and_message("{" + a + ",\"b\":[}," + a + "}").rfind("checkpoint_bad_header", 0) == 0);
    // Keys repeated twice: the first key that repeats an earlier one is named.
    CHECK(code_and_message(R"({"k":1,"j":2,"j":3,"k":4})").find("lists 'j' twice") != std::string::npos);
    // A repeat at the top level read before one inside an entry is the one named, and the other way round.
    CHECK(code_and_message("{" + a + R"(,"a":{"dtype":"F32","dtype":"F32"}})").find("lists 'a' twice; ") != std::string::npos);
    CHECK(code_and_message(R"({"a":{"dtype":"F32","dtype":"F32"},"a":1})").find("lists 'dtype' twice inside one entry") != std::string::npos);
    // A repeat anywhere comes before any entry's problem; among entries, the first in key order is named.
    CHECK(code_and_message(R"({"b":{"dtype":"X"},"a":1,"b":2})").rfind("checkpoint_duplicate_key", 0) == 0);
    CHECK(
        code_and_message(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"X","shape":[1],"data_offsets":[0,4]}})").find("entry 'a' has unknown dtype 'X'") !=
        std::string::npos);
    CHECK(code_and_message(R"({"b":{"dtype":"F32"},"__metadata__":{"z":"1","y":2,"x":[]}})").find("__metadata__ maps 'x' to array") != std::string::npos);
    CHECK(code_and_message(R"({"A":{"dtype":"F32"},"__metadata__":1})").find("entry 'A' lacks dtype") != std::string::npos);
    // Entries that each pass are then laid out: an overlap names both keys.
    CHECK(code_and_message("{\"b\":" + a.substr(4) + "," + a + "}").find("'b' overlaps 'a'") != std::string::npos);
  }

  // pitfalls.md B20
  TEST_CASE("GPT-2 layers load into MultiHeadAttention and match PyTorch (c_attn split on its last axis, each part transposed)") {
    for (const auto& c : expected().at("cases")) {
      const std::string file_name = c.at("file");
      CAPTURE(file_name);
      CAPTURE(c.at("layer").get<int>());
      const auto file = read_file(file_name);
      const SafetensorsHeader h = header_of(file);
      CheckpointOptions opts;
      opts.layer = c.at("layer").get<int64_t>();
      opts.num_heads = c.at("num_heads").get<int64_t>();
      const CheckpointPlan plan = plan_gpt2_attention(h, opts);
      CHECK(plan.config.d_out == c.at("d").get<int64_t>());
      CHECK(plan.config.context_length == c.at("context_length").get<int64_t>());
      CHECK(plan.config.qkv_bias);
      CHECK(plan.prefix == c.at("prefix").get<std::string>());
      const AttentionModule m = load(file, plan, h);
      const auto& params = c.at("parameters");
      REQUIRE(m.parameters().size() == params.size());
      for (size_t i = 0; i < params.size(); ++i) {
        const Tensor t = fixtures::tensor(params[i]);
        CHECK(m.parameters()[i].name == params[i].at("name").get<std::string>());
        CHECK(std::memcmp(m.parameters()[i].tensor.data.data(), t.data.data(), t.data.size() * 4) == 0);
      }
      ForwardOptions eval;
      eval.training = false;
      const Tensor out = m.forward(fixtures::tensor(c.at("input")), eval);
      CHECK(max_abs_diff(out, fixtures::tensor(c.at("output"))) <= 1e-6);
      // Splitting heads before q/k/v is not what the loader does: that output differs.
      CHECK(max_abs_diff(out, fixtures::tensor(c.at("wrong_split_output"))) > 1e-3);
    }
  }

  // pitfalls.md B23
  TEST_CASE("the mask buffers attn.bias and attn.masked_bias are ignored with a reason, c_attn.bias is used") {
    const auto file = read_file("gpt2_d4_h2.safetensors");
    const SafetensorsHeader h = header_of(file);
    CheckpointOptions opts;
    opts.num_heads = 2;
    const CheckpointPlan plan = plan_gpt2_attention(h, opts);
    const auto& used = plan.report.used;
    CHECK(std::find(used.begin(), used.end(), "h.0.attn.c_attn.bias") != used.end());
    CHECK(std::find(used.begin(), used.end(), "h.0.attn.bias") == used.end());
    bool mask_ignored = false, masked_bias_ignored = false;
    for (const auto& i : plan.report.ignored) {
      if (i.key == "h.0.attn.bias") mask_ignored = i.reason.find("causal mask buffer") != std::string::npos && i.reason.find("not the q/k/v bias") != std::string::npos;
      if (i.key == "h.0.attn.masked_bias") masked_bias_ignored = true;
    }
    CHECK(mask_ignored);
    CHECK(masked_bias_ignored);
    CHECK(plan.report.transposed == std::vector<std::string>{"h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight"});
    CHECK(plan.report.sources.at("context_length").find("wpe.weight rows (8)") != std::string::npos);
    CHECK(plan.report.sources.at("num_heads").find("option") != std::string::npos);
  }

  // pitfalls.md B24
  TEST_CASE("loading into a module with qkv_bias=False is a clear error naming the bias key") {
    const auto file = read_file("gpt2_d8_h4_prefix.safetensors");
    CheckpointOptions opts;
    opts.layer = 1;
    opts.into = validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(8)},
                                                        {"d_out", SlotValue::integer(8)},
                                                        {"context_length", SlotValue::integer(16)},
                                                        {"dropout", SlotValue::floating(0.0)},
                                                        {"num_heads", SlotValue::integer(4)}});
    const Refused no_bias = refused([&] { plan_gpt2_attention(header_of(file), opts); });
    CHECK(no_bias.code == "checkpoint_config_mismatch");
    CHECK(no_bias.slot == "qkv_bias");
    CHECK(no_bias.message.find("transformer.h.1.attn.c_attn.bias") != std::string::npos);
    CHECK(no_bias.hint.find("qkv_bias=True") != std::string::npos);
    opts.into->qkv_bias = true;
    CHECK(plan_gpt2_attention(header_of(file), opts).config.num_heads == 4);
    opts.into->d_in = opts.into->d_out = 12;
    CHECK(refused([&] { plan_gpt2_attention(header_of(file), opts); }).code == "checkpoint_config_mismatch");
  }

  TEST_CASE("settings the file lacks: num_heads and context_length") {
    const auto d4 = read_file("gpt2_d4_h2.safetensors");
    CHECK(refused([&] { plan_gpt2_attention(header_of(d4), {}); }).code == "checkpoint_num_heads");  // width 4 is no GPT-2 preset
    CheckpointOptions three;
    three.num_heads = 3;
    CHECK(refused([&] { plan_gpt2_attention(header_of(d4), three); }).code == "checkpoint_num_heads");
    const auto nowpe = read_file("gpt2_d8_nowpe_nomask.safetensors");
    CheckpointOptions heads;
    heads.num_heads = 4;
    CHECK(refused([&] { plan_gpt2_attention(header_of(nowpe), heads); }).code == "checkpoint_context_length");
    heads.context_length = 32;
    const CheckpointPlan plan = plan_gpt2_attention(header_of(nowpe), heads);
    CHECK(plan.config.context_length == 32);
    CHECK(plan.report.sources.at("context_length").find("option") != std::string::npos);
    CheckpointOptions layer9;
    layer9.num_heads = 2;
    layer9.layer = 9;
    CHECK(refused([&] { plan_gpt2_attention(header_of(d4), layer9); }).code == "checkpoint_layer");
  }

  TEST_CASE("a checkpoint without c_attn.bias builds qkv_bias=False and lists the key as missing") {
    const auto file = read_file("gpt2_d8_nobias.safetensors");
    CheckpointOptions opts;
    opts.num_heads = 4;
    const CheckpointPlan plan = plan_gpt2_attention(header_of(file), opts);
    CHECK_FALSE(plan.config.qkv_bias);
    CHECK(plan.report.missing == std::vector<std::string>{"h.0.attn.c_attn.bias"});
    const AttentionModule m = load(file, plan, header_of(file));
    CHECK(m.parameters().size() == 5);
  }

  TEST_CASE("truncated, lying and non-JSON files are clear errors, never a crash") {
    const auto truncated = read_file("truncated.safetensors");
    CHECK(refused([&] { header_of(truncated); }).code == "checkpoint_truncated");
    const auto lying = read_file("lying_offsets.safetensors");
    CHECK(refused([&] { header_of(lying); }).code == "checkpoint_bad_offsets");
    const auto bad = read_file("bad_header.safetensors");
    CHECK(refused([&] { header_of(bad); }).code == "checkpoint_bad_header");
    const auto not_json = read_file("not_json.safetensors");
    CHECK(refused([&] { header_of(not_json); }).code == "checkpoint_bad_header");
    const uint8_t four[4] = {1, 0, 0, 0};
    CHECK(refused([&] { safetensors_header_length(four, 4, 4); }).code == "checkpoint_truncated");
    // The bytes given for a tensor must be exactly its size.
    const auto good = read_file("gpt2_d4_h2.safetensors");
    CheckpointOptions opts;
    opts.num_heads = 2;
    const CheckpointPlan plan = plan_gpt2_attention(header_of(good), opts);
    std::map<std::string, std::vector<uint8_t>> short_bytes;
    for (const auto& e : plan.needed) short_bytes[e.key] = std::vector<uint8_t>(static_cast<size_t>(e.end - e.begin) - 4);
    CHECK(refused([&] { load_gpt2_attention(plan, short_bytes); }).code == "checkpoint_truncated");
  }

  TEST_CASE("the bad-file table: every file the format refuses is refused with its code, naming the key or byte position") {
    const auto& table = expected().at("bad_files");
    REQUIRE(table.size() >= 12);
    for (const auto& [name, row] : table.items()) {
      CAPTURE(name);
      const auto file = read_file(name);
      REQUIRE(!file.empty());
      const Refused r = refused([&] { header_of(file); });
      CHECK(r.code == row.at("code").get<std::string>());
      for (const auto& m : row.at("mentions")) {
        CAPTURE(r.message);
        CHECK(r.message.find(m.get<std::string>()) != std::string::npos);
      }
    }
  }

  TEST_CASE("a key given twice is refused even though a JSON reader would keep the last entry (all-zero q/k/v)") {
    const auto file = read_file("duplicate_key.safetensors");
    // What a lax reader does: the last entry wins, over zeros.
    const uint64_t n = safetensors_header_length(file.data(), file.size(), file.size());
    const auto lax = nlohmann::json::parse(file.begin() + 8, file.begin() + 8 + static_cast<std::ptrdiff_t>(n));
    const auto offsets = lax.at("h.0.attn.c_attn.weight").at("data_offsets");
    const uint64_t begin = 8 + n + offsets[0].get<uint64_t>(), end = 8 + n + offsets[1].get<uint64_t>();
    CHECK(std::all_of(file.begin() + static_cast<std::ptrdiff_t>(begin), file.begin() + static_cast<std::ptrdiff_t>(end), [](uint8_t b) { return b == 0; }));
    CHECK(refused([&] { header_of(file); }).code == "checkpoint_duplicate_key");
  }

  TEST_CASE("padding with tab, CR and LF is what the format's reference loader takes: that file loads exactly as its space-padded twin") {
    const auto padded = read_file("whitespace_padded.safetensors");
    const auto plain = read_file("gpt2_d4_h2.safetensors");
    CheckpointOptions opts;
    opts.num_heads = 2;
    const SafetensorsHeader hp = header_of(padded), hs = header_of(plain);
    const AttentionModule a = load(padded, plan_gpt2_attention(hp, opts), hp);
    const AttentionModule b = load(plain, plan_gpt2_attention(hs, opts), hs);
    for (const auto& p : b.parameters()) CHECK(a.parameter(p.name)->data == p.tensor.data);
    // a NUL where the tab is, and the same file is refused
    auto nul = padded;
    const auto tab = std::find(nul.begin() + 8, nul.end(), '\t');
    REQUIRE(tab != nul.end());
    *tab = 0;
    CHECK(refused([&] { header_of(nul); }).code == "checkpoint_bad_header");
  }

  TEST_CASE("loading checks what create checks, before any tensor is read: the memory budget and the derived config") {
    // A sparse 0.8 GB BF16 file of width 10048: create refuses MultiHeadAttention(10048, 10048, ...).
    const int64_t w = 10048;
    const SafetensorsHeader wide = sparse_header({{"h.0.attn.c_attn.weight", "BF16", {w, 3 * w}},
                                                  {"h.0.attn.c_attn.bias", "BF16", {3 * w}},
                                                  {"h.0.attn.c_proj.weight", "BF16", {w, w}},
                                                  {"h.0.attn.c_proj.bias", "BF16", {w}},
                                                  {"wpe.weight", "BF16", {1024, w}}});
    CheckpointOptions opts;
    opts.num_heads = 16;
    CHECK(refused([&] { plan_gpt2_attention(wide, opts); }).code == "too_large");
    ModuleConfig same = ModuleConfig::of("MultiHeadAttention");
    same.d_in = same.d_out = w;
    same.context_length = 1024;
    same.num_heads = 16;
    same.qkv_bias = true;
    CHECK(has_error(check_config("MultiHeadAttention", same.slots())));
    // GPT-2 XL's width loads within the default budget; a budget of 100 MiB refuses it, naming the bytes.
    const int64_t xl = 1600;
    const SafetensorsHeader xl_header = sparse_header({{"h.0.attn.c_attn.weight", "F32", {xl, 3 * xl}},
                                                       {"h.0.attn.c_attn.bias", "F32", {3 * xl}},
                                                       {"h.0.attn.c_proj.weight", "F32", {xl, xl}},
                                                       {"h.0.attn.c_proj.bias", "F32", {xl}},
                                                       {"wpe.weight", "F32", {1024, xl}}});
    CHECK(plan_gpt2_attention(xl_header, {}).config.num_heads == 25);
    CheckpointOptions small;
    small.memory_budget_bytes = 100.0 * 1048576;
    const Refused over_budget = refused([&] { plan_gpt2_attention(xl_header, small); });  // a 100 MiB budget should refuse GPT-2 XL's layer
    CHECK(over_budget.code == "too_large");
    CHECK(over_budget.message.find("MiB") != std::string::npos);
    // wpe.weight of shape [2**40, 0] would give context_length 1099511627776, which create refuses.
    const SafetensorsHeader lying = sparse_header({{"h.0.attn.c_attn.weight", "F32", {4, 12}},
                                                   {"h.0.attn.c_attn.bias", "F32", {12}},
                                                   {"h.0.attn.c_proj.weight", "F32", {4, 4}},
                                                   {"h.0.attn.c_proj.bias", "F32", {4}},
                                                   {"wpe.weight", "F32", {int64_t{1} << 40, 0}}});
    CheckpointOptions two;
    two.num_heads = 2;
    const Refused huge_context = refused([&] { plan_gpt2_attention(lying, two); });  // context_length 2**40 should be refused
    CHECK(huge_context.code == "too_large");
    CHECK(huge_context.slot == "context_length");
    CHECK(huge_context.message.find("wpe.weight rows (1099511627776)") != std::string::npos);
  }

  TEST_CASE("F16 and BF16 weights decode to float32") {
    SafetensorsEntry e{"w", "F16", {3}, 0, 6, {}};
    const uint8_t half[6] = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00};  // 1.0, -2.0, smallest subnormal 2^-24
    const auto v = decode_tensor(e, half, 6);
    CHECK(v[0] == 1.0f);
    CHECK(v[1] == -2.0f);
    CHECK(v[2] == std::ldexp(1.0f, -24));
    SafetensorsEntry b{"w", "BF16", {1}, 0, 2, {}};
    const uint8_t bf[2] = {0x80, 0x3F};  // 1.0
    CHECK(decode_tensor(b, bf, 2)[0] == 1.0f);
    SafetensorsEntry i{"w", "I64", {1}, 0, 8, {}};
    const uint8_t zeros[8] = {};
    CHECK(refused([&] { decode_tensor(i, zeros, 8); }).code == "checkpoint_dtype");
  }
}

TEST_SUITE("checkpoint") {
  TEST_CASE("ln_1(wte[ids] + wpe[:T]) of a layer matches PyTorch, reading one wte row per distinct id (the whole model's embedding read)") {
    for (const auto& c : expected().at("block_inputs")) {
      const std::string name = c.at("file");
      CAPTURE(name);
      const auto file = read_file(name);
      const SafetensorsHeader h = header_of(file);
      const auto ids = c.at("token_ids").get<std::vector<int64_t>>();
      const auto reads = plan_gpt2_block_input(h, ids, c.at("layer").get<int64_t>());
      CHECK(reads.size() == std::set<int64_t>(ids.begin(), ids.end()).size() + 3);
      std::map<std::string, std::vector<uint8_t>> bytes;
      for (const auto& r : reads) {
        const auto begin = file.begin() + static_cast<std::ptrdiff_t>(h.data_start() + r.entry.begin);
        bytes[r.name] = std::vector<uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(r.entry.end - r.entry.begin));
      }
      const Tensor x = gpt2_block_input(h, ids, c.at("layer").get<int64_t>(), bytes);
      const Tensor expected_x = fixtures::tensor(c.at("output"));
      CHECK(x.shape == expected_x.shape);
      CHECK(max_abs_diff(x, expected_x) <= 1e-6);
    }
    const auto file = read_file("gpt2_d4_h2.safetensors");
    CHECK(refused([&] { plan_gpt2_block_input(header_of(file), {10}, 0); }).code == "checkpoint_token");                         // vocab 10
    CHECK(refused([&] { plan_gpt2_block_input(header_of(file), std::vector<int64_t>(9, 1), 0); }).code == "context_too_short");  // 8 positions
    CHECK(refused([&] { plan_gpt2_block_input(header_of(read_file("gpt2_d8_nowpe_nomask.safetensors")), {1}, 0); }).code == "checkpoint_missing_key");
  }
}
