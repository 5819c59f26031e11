// The shared bad-input table (tests/fixtures/bad_inputs.json) through the core: every case gives its
// exact error code and slot, and nothing aborts, hangs or throws anything but AttentionError.
// tests/node/bad_input.test.mjs runs the same table through the public JS facade.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "attention_lab/call_parser.hpp"
#include "attention_lab/checkpoint.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"
#include "attention_lab/weight_transfer.hpp"
#include "refusal.hpp"
#include "test_paths.hpp"

using namespace attention_lab;
// ordered_json keeps each header's key order, as JSON.stringify does on the JS side.
using ojson = nlohmann::ordered_json;

namespace {

const ojson& table() {
  static const ojson data = [] {
    std::ifstream in(std::string(attention_lab::test_paths::fixtures) + "/bad_inputs.json");
    return ojson::parse(in);
  }();
  return data;
}

/// A string, or {concat: [string | {repeat, times}]}: the 10 MB inputs are built here, not stored.
std::string text_of(const ojson& rule) {
  if (rule.is_string()) return rule.get<std::string>();
  std::string out;
  for (const auto& part : rule.at("concat")) {
    if (part.is_string()) {
      out += part.get<std::string>();
    } else {
      const std::string unit = part.at("repeat").get<std::string>();
      const auto times = part.at("times").get<size_t>();
      out.reserve(out.size() + unit.size() * times);
      for (size_t i = 0; i < times; ++i) out += unit;
    }
  }
  return out;
}

double special(const std::string& name) {
  const double inf = std::numeric_limits<double>::infinity();
  if (name == "inf") return inf;
  if (name == "-inf") return -inf;
  return std::numeric_limits<double>::quiet_NaN();
}

/// A JSON value as the bindings read a JS value (slot_value_from_js): numbers are ints when whole,
/// strings are Python literal text, arrays and objects are not literals; {$: "nan"} is NaN.
SlotValue slot_value(const ojson& v) {
  if (v.is_object() && v.contains("$")) {
    const double x = special(v.at("$").get<std::string>());
    return std::isfinite(x) && x == std::floor(x) ? SlotValue::integer(x) : SlotValue::floating(x);
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    return std::isfinite(x) && x == std::floor(x) ? SlotValue::integer(x) : SlotValue::floating(x);
  }
  if (v.is_boolean()) return SlotValue::boolean_value(v.get<bool>());
  if (v.is_string()) return parse_literal(v.get<std::string>());
  if (v.is_null()) return SlotValue::none();
  return SlotValue::expression("<object>");
}

SlotMap config_of(const ojson& j) {
  SlotMap m;
  for (const auto& [key, value] : j.items()) m[key] = slot_value(value);
  return m;
}

/// {shape, data} or {shape, fill, length, set}; the data may not fit the shape (on purpose).
Tensor tensor_of(const ojson& j) {
  Tensor t;
  t.shape = j.at("shape").get<Shape>();
  const auto value = [](const ojson& v) { return static_cast<float>(v.is_string() ? special(v.get<std::string>()) : v.get<double>()); };
  if (j.contains("data")) {
    for (const auto& v : j.at("data")) t.data.push_back(value(v));
  } else {
    int64_t n = 0;
    const size_t length = j.contains("length") ? j.at("length").get<size_t>() : (checked_numel(t.shape, n) ? static_cast<size_t>(n) : 0);
    t.data.assign(length, value(j.at("fill")));
  }
  if (j.contains("set"))
    for (const auto& s : j.at("set")) t.data.at(s.at(0).get<size_t>()) = value(s.at(1));
  return t;
}

std::vector<uint8_t> base64(const std::string& text) {
  static const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    const size_t v = digits.find(c);
    if (v == std::string::npos) continue;  // '=' padding
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if ((count += 6) >= 8) {
      count -= 8;
      out.push_back(static_cast<uint8_t>((bits >> count) & 0xFF));
    }
  }
  return out;
}

std::vector<uint8_t> read_fixture(const std::string& name) {
  std::ifstream in(std::string(attention_lab::test_paths::fixtures) + "/checkpoints/" + name, std::ios::binary);
  REQUIRE(in.good());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

/// The file of a checkpoint case: base64, a (cut) fixture, or length field + header + zero data.
std::vector<uint8_t> file_of(const ojson& f) {
  if (f.contains("base64")) return base64(f.at("base64").get<std::string>());
  if (f.contains("fixture")) {
    std::vector<uint8_t> bytes = read_fixture(f.at("fixture").get<std::string>());
    if (f.contains("truncate")) bytes.resize(std::min(bytes.size(), f.at("truncate").get<size_t>()));
    return bytes;
  }
  std::string header;
  if (f.contains("header_json"))
    header = f.at("header_json").dump();  // compact, like JSON.stringify
  else if (f.contains("header_base64")) {
    const auto b = base64(f.at("header_base64").get<std::string>());
    header.assign(b.begin(), b.end());
  } else
    header = text_of(f.at("header"));
  uint64_t length = header.size();
  if (f.contains("length_field")) {
    const ojson& n = f.at("length_field");
    length = n.is_string() ? std::stoull(n.get<std::string>()) : n.get<uint64_t>();
  }
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(length >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + (f.contains("data_bytes") ? f.at("data_bytes").get<size_t>() : 0), 0);
  return bytes;
}

struct Outcome {
  std::string code = "none";  // "none": no error
  std::string slot;
};

std::string expected_code(const ojson& c) { return c.at("code").is_null() ? "none" : c.at("code").get<std::string>(); }

Outcome thrown(const std::function<void()>& body) {
  const Refused r = refused(body);
  return r.code.empty() ? Outcome{} : Outcome{r.code, r.slot};
}

Outcome first_error(const std::vector<Diagnostic>& ds) {
  for (const auto& d : ds)
    if (d.severity == Severity::Error) return {d.code, d.slots.empty() ? "" : d.slots.front()};
  return {};
}

AttentionModule build(const ojson& spec) {
  TorchGenerator g(123);
  return AttentionModule(validated_config(spec.at("className").get<std::string>(), config_of(spec.at("config"))), g);
}

Outcome run_checkpoint(const ojson& c) {
  const std::vector<uint8_t> file = file_of(c.at("file"));
  return thrown([&] {
    // As lab.loadCheckpoint reads a file: the length field, the header, the plan, then only the needed bytes.
    const uint64_t size = file.size();
    const uint64_t n = safetensors_header_length(file.data(), std::min<size_t>(8, file.size()), size);
    const SafetensorsHeader h = parse_safetensors_header(file.data() + 8, static_cast<size_t>(n), size);
    CheckpointOptions o;
    const ojson options = c.value("options", ojson::object());
    if (options.contains("layer")) o.layer = options.at("layer").get<int64_t>();
    if (options.contains("num_heads")) o.num_heads = options.at("num_heads").get<int64_t>();
    if (options.contains("context_length")) o.context_length = options.at("context_length").get<int64_t>();
    if (c.contains("into")) o.into = build(c.at("into")).config();
    const CheckpointPlan plan = plan_gpt2_attention(h, o);
    std::map<std::string, std::vector<uint8_t>> bytes;
    for (const auto& e : plan.needed) {
      const auto begin = file.begin() + static_cast<std::ptrdiff_t>(h.data_start() + e.begin);
      bytes[e.key] = std::vector<uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(e.end - e.begin));
    }
    load_gpt2_attention(plan, bytes);
  });
}

/// Runs every shared case of one kind; `run` gives the outcome of a case.
template <typename Run>
void check_kind(const std::string& kind, Run&& run) {
  int count = 0;
  for (const auto& c : table().at("cases")) {
    if (c.at("kind") != kind || c.value("only", "") == "js") continue;
    ++count;
    const std::string id = c.at("id").get<std::string>();
    INFO("case ", id);
    Outcome got;
    try {
      got = run(c);
    } catch (const AttentionError& e) {
      FAIL_CHECK("setting up the case threw " << e.code() << ": " << std::string(e.what()));
      continue;
    } catch (const std::exception& e) {
      FAIL_CHECK("an exception other than AttentionError escaped: " << std::string(e.what()));
      continue;
    }
    CHECK(got.code == expected_code(c));
    CHECK(got.slot == c.at("slot").get<std::string>());
  }
  CHECK(count > 0);
}

}  // namespace

TEST_SUITE("bad inputs (tests/fixtures/bad_inputs.json)") {
  TEST_CASE("the table holds at least 60 bad inputs, each with a kind, an exact code and a slot") {
    int bad = 0;
    for (const auto& c : table().at("cases")) {
      INFO("case ", c.value("id", "?"));
      const std::string kind = c.at("kind").get<std::string>();
      CHECK((kind == "call" || kind == "config" || kind == "forward" || kind == "copy" || kind == "checkpoint"));
      CHECK(c.at("slot").is_string());
      if (!c.at("code").is_null()) ++bad;
    }
    CHECK(bad >= 60);
  }

  TEST_CASE("bad call texts give their exact code and slot (empty, unbalanced, 10 MB, 100,000 '(', lookalikes, 1e9, -0, NaN)") {
    check_kind("call", [](const ojson& c) { return first_error(parse_call(text_of(c.at("text"))).diagnostics); });
  }

  TEST_CASE("bad configs give their exact code and slot, in check_config and validated_config alike") {
    check_kind("config", [](const ojson& c) {
      const std::string cls = c.at("className").get<std::string>();
      const SlotMap config = config_of(c.at("config"));
      CheckOptions options;
      if (c.contains("inputShape")) options.input_shape = c.at("inputShape").get<Shape>();
      const Outcome checked = first_error(check_config(cls, config, options));
      if (!options.input_shape) {
        const Outcome built = thrown([&] { validated_config(cls, config); });
        CHECK(built.code == checked.code);
        CHECK(built.slot == checked.slot);
      }
      return checked;
    });
  }

  TEST_CASE("bad forward inputs give their exact code and slot, before anything is allocated") {
    check_kind("forward", [](const ojson& c) {
      const AttentionModule m = build(c);
      const Tensor x = tensor_of(c.at("input"));
      TorchGenerator g(7);
      ForwardOptions options;
      options.training = c.value("training", false);
      options.generator = &g;
      std::vector<Stage> trace;
      if (c.value("trace", false)) options.trace = &trace;
      return thrown([&] { m.forward(x, options); });
    });
  }

  TEST_CASE("bad weight copies give their exact code and slot, and leave the target as it was") {
    check_kind("copy", [](const ojson& c) {
      const AttentionModule from = build(c.at("from"));
      AttentionModule to = build(c.at("to"));
      const std::vector<NamedTensor> before = to.parameters();
      CopyPlan plan;
      for (const auto& [key, e] : c.at("plan").items()) plan[key] = {e.value("copy", false), e.value("transpose", false)};
      std::optional<Tensor> tokens;
      if (c.contains("tokens")) tokens = tensor_of(c.at("tokens"));
      const Outcome got = thrown([&] { copy_weights(from, to, plan, tokens); });
      for (size_t i = 0; i < before.size(); ++i) CHECK(to.parameters()[i].tensor.data == before[i].tensor.data);
      return got;
    });
  }

  TEST_CASE("bad safetensors files (truncated, lying length field, bad JSON, bad offsets) give their exact code and slot") { check_kind("checkpoint", run_checkpoint); }
}

TEST_SUITE("memory budget") {
  TEST_CASE("MultiHeadAttention(100000, 100000, 1024, 0.0, 10) is refused before allocating, naming the bytes it would need") {
    const SlotMap config = {{"d_in", SlotValue::integer(100000)},
                            {"d_out", SlotValue::integer(100000)},
                            {"context_length", SlotValue::integer(1024)},
                            {"dropout", SlotValue::floating(0.0)},
                            {"num_heads", SlotValue::integer(10)}};
    const Refused too_large = refused([&] { validated_config("MultiHeadAttention", config); });
    CHECK(too_large.code == "too_large");
    CHECK(too_large.slot == "d_in");
    // (3 x 100000^2 + 100000^2 + 100000) float32 = 160,000,400,000 bytes
    CHECK(too_large.message.find("160,000,400,000 bytes") != std::string::npos);
  }

  TEST_CASE("a forward whose trace is over the budget is refused before allocating (MHA(768, 768, 100000, 0.0, 12) on 20,000 tokens)") {
    const ModuleConfig c = validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(768)},
                                                                   {"d_out", SlotValue::integer(768)},
                                                                   {"context_length", SlotValue::integer(100000)},
                                                                   {"dropout", SlotValue::floating(0.0)},
                                                                   {"num_heads", SlotValue::integer(12)}});
    CheckOptions with_input;
    with_input.input_shape = Shape{1, 20000, 768};
    const Outcome checked = first_error(check_config("MultiHeadAttention", c.slots(), with_input));
    CHECK(checked.code == "too_large");
    CHECK(checked.slot.empty());  // the input is at fault, not a slot
    // 4 x 12 x 20000^2 float32 (scores, masked, weights, dropped) alone: 76.8 GB
    CHECK(estimate_bytes(c, with_input.input_shape) > 7.68e10);
    const AttentionModule m(c);
    const Tensor x({1, 20000, 768});  // 61 MB
    std::vector<Stage> trace;
    ForwardOptions options;
    options.trace = &trace;
    const Outcome got = thrown([&] { m.forward(x, options); });
    CHECK(got.code == "too_large");
    CHECK(got.slot == "x");
    CHECK(trace.empty());
  }

  TEST_CASE("the budget is an option: a tiny budget refuses even the book's example") {
    TorchGenerator g(123);
    const AttentionModule m(
        validated_config("CausalAttention",
                         {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}, {"context_length", SlotValue::integer(6)}, {"dropout", SlotValue::floating(0.0)}}),
        g);
    Tensor x({1, 6, 3});
    ForwardOptions options;
    options.memory_budget_bytes = 100;
    CHECK(thrown([&] { m.forward(x, options); }).code == "too_large");
    options.memory_budget_bytes = kDefaultMemoryBudgetBytes;
    CHECK(thrown([&] { m.forward(x, options); }).code == "none");
  }
}

TEST_SUITE("bad inputs: what the messages say") {
  TEST_CASE("a lookalike letter or digit is named with its code point in the hint") {
    const ParsedCall cyrillic = parse_call("Caus\xD0\xB0lAttention(3, 2, 6, 0.0)");  // Cyrillic U+0430
    REQUIRE(!cyrillic.diagnostics.empty());
    CHECK(cyrillic.diagnostics.front().code == "unknown_class");
    CHECK(cyrillic.diagnostics.front().hint.find("U+0430") != std::string::npos);
    const ParsedCall arabic = parse_call("SelfAttention_v1(\xD9\xA3, 2)");  // Arabic-Indic digit three, U+0663
    REQUIRE(!arabic.diagnostics.empty());
    CHECK(arabic.diagnostics.front().code == "not_a_literal");
    CHECK(arabic.diagnostics.front().hint.find("U+0663") != std::string::npos);
  }

  TEST_CASE("a 100 kB expression is cut in the message but kept whole in the slot's text") {
    const std::string value = "(" + std::string(90000, '1') + " + 1)";
    const ParsedCall c = parse_call("SelfAttention_v1(" + value + ", 2)");
    REQUIRE(!c.diagnostics.empty());
    CHECK(c.diagnostics.front().code == "not_a_literal");
    CHECK(c.diagnostics.front().message.size() < 200);
    CHECK(c.slots.front().text.size() > 90000);
  }

  TEST_CASE("context_length 10^9 names PyTorch's mask bytes, and a parenthesized literal is that literal") {
    const ParsedCall big = parse_call("CausalAttention(3, 2, 1000000000, 0.0)");
    REQUIRE(!big.diagnostics.empty());
    CHECK(big.diagnostics.front().message.find("4,000,000,000,000,000,000 bytes") != std::string::npos);
    const ParsedCall wrapped = parse_call("CausalAttention((3), -(-2), ((6)), (0.5))");
    CHECK_FALSE(has_error(wrapped.diagnostics));
    CHECK(wrapped.config.at("d_out").number == 2);
    CHECK(wrapped.config.at("dropout").kind == SlotValue::Kind::Float);
  }
}
