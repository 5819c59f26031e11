// Rotary position embeddings (RoPE) as a plan flag and one pass after the head split, proven by Llama 2's
// MultiHeadAttention (ch05/07_gpt_to_llama, converting-gpt-to-llama2.ipynb; class id
// MultiHeadAttention@ch05/07_gpt_to_llama): its tables, its cache positions, its refusals, the copy from
// the chapter's MultiHeadAttention and its name beside the chapter's class. The fixtures' cases of it run
// with every other class in modules_test.cpp (init bits, every stage within 1e-6).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attention_lab/call_parser.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"
#include "attention_lab/weight_transfer.hpp"
#include "fixtures.hpp"
#include "refusal.hpp"
#include "tensor_compare.hpp"

using namespace attention_lab;

namespace {
constexpr const char* kLlama = "MultiHeadAttention@ch05/07_gpt_to_llama";

SlotMap llama_slots(int64_t d_in, int64_t d_out, int64_t context_length, int64_t num_heads) {
  return {{"d_in", SlotValue::integer(static_cast<double>(d_in))},
          {"d_out", SlotValue::integer(static_cast<double>(d_out))},
          {"context_length", SlotValue::integer(static_cast<double>(context_length))},
          {"num_heads", SlotValue::integer(static_cast<double>(num_heads))}};
}
const Stage& stage(const std::vector<Stage>& trace, const std::string& id) {
  for (const Stage& s : trace)
    if (s.id == id) return s;
  FAIL("no stage " << id);
  return trace.front();
}
Tensor rows(const Tensor& x, int64_t first, int64_t count) {  // (b, T, d) -> (b, count, d) from row `first`
  const int64_t b = x.shape[0], T = x.shape[1], d = x.shape[2];
  Tensor out({b, count, d});
  for (int64_t i = 0; i < b; ++i) std::copy_n(x.data.data() + (i * T + first) * d, count * d, out.data.data() + i * count * d);
  return out;
}
}  // namespace

TEST_SUITE("rope") {
  TEST_CASE("a class id with its book folder is told apart from the chapter's MultiHeadAttention; a bare name keeps meaning the chapter's class") {
    const ClassSpec* llama = find_class(kLlama);
    REQUIRE(llama != nullptr);
    CHECK(find_class("MultiHeadAttention") != llama);
    CHECK(find_class("MultiHeadAttention")->book.folder == "ch03/01_main-chapter-code");
    CHECK(llama->python_class() == "MultiHeadAttention");
    CHECK(llama->book.folder == "ch05/07_gpt_to_llama");
    // the Python call the code panel writes names the Python class
    CHECK(validated_config(kLlama, llama_slots(8, 8, 12, 2)).python_call() == "MultiHeadAttention(8, 8, 12, 2)");
    // a pasted call's bare name is the chapter's class (dropout where this class has num_heads)
    CHECK(parse_call("MultiHeadAttention(8, 8, 12, 0.0, 2)").class_name == "MultiHeadAttention");
    // the call box's form of it: the class id as the callee
    const ParsedCall id_call = parse_call("MultiHeadAttention@ch05/07_gpt_to_llama(8, 8, 12, 2)");
    CHECK(id_call.class_name == kLlama);
    CHECK_FALSE(has_error(id_call.diagnostics));
    CHECK(id_call.config.at("num_heads").number == 2);
    const ParsedCall extra = parse_call("MultiHeadAttention@ch05/07_gpt_to_llama(8, 8, 12, 2, None, 0.0)");
    REQUIRE_FALSE(extra.diagnostics.empty());
    CHECK(extra.diagnostics[0].code == "extra_positional");
    CHECK(extra.diagnostics[0].message.rfind(std::string(kLlama) + " takes 5 slots", 0) == 0);
    // an id with another folder is no class, and the error names it
    const auto ds = parse_call("MultiHeadAttention@ch99/none(8, 8, 12, 2)").diagnostics;
    REQUIRE(ds.size() == 1);
    CHECK(ds[0].code == "unknown_class");
    CHECK(ds[0].message.find("MultiHeadAttention@ch99/none") != std::string::npos);
  }

  TEST_CASE("no biases anywhere, out_proj too: four (d_out, d_in|d_out) weights drawn as nn.Linear's kaiming_uniform_ under torch.manual_seed") {
    const ModuleConfig c = validated_config(kLlama, llama_slots(5, 8, 8, 2));
    std::vector<std::string> names;
    for (const auto& p : parameter_specs(c)) names.push_back(p.name);
    CHECK(names == std::vector<std::string>{"W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight"});
    CHECK(parameter_count(c) == 3 * 8 * 5 + 8 * 8);
    // the fixture's parameters, bit for bit (seed 30)
    const auto& fx = fixtures::named_case("llama_5to8_2heads_hd4_b1_T7");
    TorchGenerator g(30);
    const AttentionModule m(c, g);
    for (const auto& p : fx.at("parameters")) {
      const Tensor want = fixtures::tensor(p);
      const Tensor got = *m.parameter(p.at("name").get<std::string>());
      REQUIRE(got.shape == want.shape);
      CHECK(std::memcmp(got.data.data(), want.data.data(), want.data.size() * sizeof(float)) == 0);
    }
  }

  TEST_CASE("the RoPE tables are torch's float32 precompute_rope_params to within an ulp, and the rotated queries and keys come after the head split") {
    // 32 positions x 8 frequencies (head_dim 16): each table row is the positions' angles, twice along head_dim.
    const auto& fx = fixtures::named_case("llama_16to16_1head_hd16_T32");
    TorchGenerator g(32);
    const AttentionModule m(validated_config(kLlama, fixtures::config(fx.at("config"))), g);
    std::vector<Stage> trace;
    ForwardOptions o;
    o.trace = &trace;
    m.forward(fixtures::tensor(fx.at("input")), o);
    std::vector<std::string> ids;
    for (const Stage& s : trace) ids.push_back(s.id);
    CHECK(ids == std::vector<std::string>{"input", "queries", "keys", "values", "cos", "sin", "queries_rope", "keys_rope", "attn_scores", "mask", "attn_scores_masked",
                                          "attn_weights", "context_vec", "heads_concat", "out_proj", "output"});
    for (const char* table : {"cos", "sin"}) {
      const Stage& s = stage(trace, table);
      CHECK(s.shape() == Shape{32, 16});
      CHECK(s.axes == std::vector<std::string>{"position", "head_dim"});
      CHECK(s.title.find("rows 0 to 31 of the (32, 16) buffer") != std::string::npos);
      for (const auto& want : fx.at("stages"))
        if (want.at("id") == table) CHECK(max_abs_diff(s.tensor, fixtures::tensor(want)) <= 1.2e-7);  // float32 cos/sin: one ulp at most (SLEEF vs correctly rounded)
    }
    // position 0 turns nothing: cos 1, sin 0
    CHECK(stage(trace, "cos").tensor.data[0] == 1.0f);
    CHECK(stage(trace, "sin").tensor.data[5] == 0.0f);
    CHECK(stage(trace, "queries_rope").formula.find("compute_rope(queries, self.cos, self.sin)") != std::string::npos);
  }

  TEST_CASE("an odd head_dim is refused with PyTorch's assertion and fixes; num_tokens past context_length with PyTorch's broadcast error") {
    const auto& refusals = fixtures::all().at("rope_refusals");
    REQUIRE(refusals.size() == 2);
    // Llama's MultiHeadAttention(4, 6, 6, 2): head_dim 3
    CheckOptions o;
    o.input_shape = refusals[0].at("input_shape").get<Shape>();
    auto ds = check_config(kLlama, fixtures::config(refusals[0].at("config")), o);
    REQUIRE(!ds.empty());
    CHECK(ds[0].code == "rope_head_dim");
    CHECK(ds[0].slots == std::vector<std::string>{"d_out", "num_heads"});
    CHECK(ds[0].message.find("head_dim = d_out / num_heads = 6 / 2 = 3 is odd") != std::string::npos);
    CHECK(ds[0].pytorch == refusals[0].at("error").get<std::string>() + ": " + refusals[0].at("message").get<std::string>());
    REQUIRE(ds[0].fixes.size() == 2);
    CHECK(ds[0].fixes[0].slot == "num_heads");
    CHECK(ds[0].fixes[0].value == "1");
    CHECK(ds[0].fixes[1].slot == "d_out");
    CHECK(ds[0].fixes[1].value == "8");
    for (const Fix& f : ds[0].fixes) {
      SlotMap fixed = fixtures::config(refusals[0].at("config"));
      fixed[f.slot] = SlotValue::integer(std::stod(f.value));
      CHECK_FALSE(has_error(check_config(kLlama, fixed)));
    }
    // 8 tokens into context_length 6
    o.input_shape = refusals[1].at("input_shape").get<Shape>();
    ds = check_config(kLlama, fixtures::config(refusals[1].at("config")), o);
    const auto error = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& d) { return d.severity == Severity::Error; });
    REQUIRE(error != ds.end());
    CHECK(error->code == "context_too_short");
    CHECK(error->pytorch == refusals[1].at("error").get<std::string>() + ": " + refusals[1].at("message").get<std::string>());
  }

  TEST_CASE("dtype=None runs in float32; another dtype is refused naming the slot, with the fix") {
    SlotMap s = llama_slots(4, 4, 6, 2);
    s["dtype"] = SlotValue::none();
    CHECK_FALSE(has_error(check_config(kLlama, s)));
    s["dtype"] = SlotValue::expression("torch.bfloat16");
    const auto ds = check_config(kLlama, s);
    REQUIRE(ds.size() == 1);
    CHECK(ds[0].code == "dtype");
    CHECK(ds[0].slots == std::vector<std::string>{"dtype"});
    CHECK(ds[0].message.find("float32") != std::string::npos);
    CHECK(ds[0].hint.find("Leave dtype out (None)") != std::string::npos);
  }

  TEST_CASE("with a KV cache RoPE positions continue from the cache's position: every chunking equals the uncached forward within 1e-6") {
    TorchGenerator g(123);
    const AttentionModule m(validated_config(kLlama, llama_slots(8, 8, 12, 2)), g);
    const Tensor x = seeded_tokens(24, 8, 5);
    const Tensor batch({2, 12, 8}, x.data);
    ForwardOptions eval;
    eval.training = false;
    const Tensor whole = m.forward(batch, eval);
    for (const std::vector<int64_t>& chunks : {std::vector<int64_t>{12}, {5, 1, 1, 1, 1, 1, 1, 1}, {3, 4, 5}}) {
      KvCache cache;
      ForwardOptions o = eval;
      o.cache = &cache;
      int64_t at = 0;
      for (int64_t n : chunks) {
        std::vector<Stage> trace;
        o.trace = at == 5 ? &trace : nullptr;
        CHECK(max_abs_diff(m.forward(rows(batch, at, n), o), rows(whole, at, n)) <= 1e-6);
        if (at == 5) {  // the step's tables are the rows of its positions; the cache holds rotated keys
          CHECK(stage(trace, "cos").title.find("rows 5 to 5 of the (12, 4) buffer") != std::string::npos);
          CHECK(stage(trace, "cache_k").shape() == Shape{2, 2, 6, 4});
        }
        at += n;
      }
      CHECK(cache.position == 12);
    }
    // A window's positions grow past the tables: refused, naming both numbers (the book's tables end there).
    KvCache window;
    window.window = 4;
    ForwardOptions o = eval;
    o.cache = &window;
    for (int64_t t = 0; t < 12; ++t) m.forward(rows(batch, t, 1), o);
    const Refused past_tables = refused([&] { m.forward(rows(batch, 0, 1), o); });  // position 12 is past the RoPE tables
    CHECK(past_tables.code == "cache_full");
    CHECK(past_tables.slot == "context_length");
    CHECK(past_tables.message.find("past the 12 rows of RoPE's cos and sin tables") != std::string::npos);
  }

  TEST_CASE("the chapter's MultiHeadAttention copies its four weights in; its biases have no target and the report says so; RoPE makes the scores differ") {
    const auto& copies = fixtures::all().at("rope_copies");
    REQUIRE(copies.size() == 2);
    for (const auto& c : copies) {
      const bool bias = c.at("qkv_bias");
      CAPTURE(bias);
      TorchGenerator g(123), h(456);
      const AttentionModule mha(validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(4)},
                                                                        {"d_out", SlotValue::integer(4)},
                                                                        {"context_length", SlotValue::integer(6)},
                                                                        {"dropout", SlotValue::floating(0.0)},
                                                                        {"num_heads", SlotValue::integer(2)},
                                                                        {"qkv_bias", SlotValue::boolean_value(bias)}}),
                                g);
      AttentionModule to(validated_config(kLlama, fixtures::config(c.at("target_config"))), h);
      const CopyReport r = copy_weights(mha, to, {});
      const auto& map = c.at("map");
      REQUIRE(r.matrices.size() == map.size());
      for (size_t i = 0; i < map.size(); ++i) {
        CHECK(r.matrices[i].name == map[i].at("target_param").get<std::string>());
        CHECK(r.matrices[i].action == map[i].at("action").get<std::string>());
        CHECK(r.matrices[i].sources == map[i].at("source").get<std::vector<std::string>>());
      }
      CHECK(r.agree == c.at("agree").get<bool>());
      CHECK_FALSE(r.agree);
      std::string unmapped;
      for (const auto& n : c.at("unmapped")) unmapped += (unmapped.empty() ? "" : ", ") + n.get<std::string>();
      CHECK(std::count(r.notes.begin(), r.notes.end(), std::string("No target in ") + kLlama + " (it has no such parameter), so not copied: " + unmapped + ".") == 1);
      CHECK(r.code.find("# no target in mha_llama2, not copied: " + unmapped + "\n") != std::string::npos);
      // without biases q, k and v agree and RoPE turns q and k before the scores, the first to differ; with them the queries differ first
      CHECK(r.notes.front().rfind("W_query, W_key, W_value and out_proj weights copied as they are", 0) == 0);
      CHECK(r.notes.back().rfind(bias ? "The first stage that disagrees: queries (" : "The first stage that disagrees: attn_scores (", 0) == 0);
    }
  }
}
