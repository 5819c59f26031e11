#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>
#include <random>

#include "attention_lab/call_parser.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"
#include "fixtures.hpp"

using namespace attention_lab;

namespace {
SlotMap mha(double d_in, double d_out, double ctx, SlotValue dropout, SlotValue heads) {
  return {{"d_in", SlotValue::integer(d_in)}, {"d_out", SlotValue::integer(d_out)}, {"context_length", SlotValue::integer(ctx)}, {"dropout", dropout}, {"num_heads", heads}};
}
const Diagnostic* find(const std::vector<Diagnostic>& ds, const std::string& code) {
  const auto it = std::find_if(ds.begin(), ds.end(), [&](const Diagnostic& d) { return d.code == code; });
  return it == ds.end() ? nullptr : &*it;
}
bool names_slot(const Diagnostic& d, const std::string& slot) { return std::find(d.slots.begin(), d.slots.end(), slot) != d.slots.end(); }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_SUITE("validator") {
  TEST_CASE("a correct GPT-2 small setup has no errors") {
    const auto ds = check_config("MultiHeadAttention", mha(768, 768, 1024, SlotValue::floating(0.0), SlotValue::integer(12)));
    CHECK_FALSE(has_error(ds));
  }

  TEST_CASE("MultiHeadAttention(3, 3, 6, 0.0, 2): d_out not divisible by num_heads, naming both values") {
    const auto ds = check_config("MultiHeadAttention", mha(3, 3, 6, SlotValue::floating(0.0), SlotValue::integer(2)));
    const Diagnostic* d = find(ds, "heads_divisibility");
    REQUIRE(d != nullptr);
    CHECK(d->severity == Severity::Error);
    CHECK(names_slot(*d, "d_out"));
    CHECK(names_slot(*d, "num_heads"));
    CHECK(contains(d->message, "d_out = 3"));
    CHECK(contains(d->message, "num_heads = 2"));
    CHECK(contains(d->message, "3 % 2 = 1"));
    CHECK(contains(d->hint, "1, 3"));  // head counts that divide 3
    CHECK(contains(d->pytorch, "d_out must be divisible by num_heads"));
  }

  // pitfalls.md B1
  TEST_CASE("GPT-2 XL with its layer count (48) as num_heads is refused, naming the layer count and XL's 25 heads") {
    const auto ds = check_config("MultiHeadAttention", mha(1600, 1600, 1024, SlotValue::floating(0.0), SlotValue::integer(48)));
    const Diagnostic* d = find(ds, "heads_divisibility");
    REQUIRE(d != nullptr);
    CHECK(contains(d->message, "1600 % 48 = 16"));
    CHECK(contains(d->hint, "48 is GPT-2 XL's number of layers"));
    CHECK(contains(d->hint, "25 heads"));
    CHECK(contains(d->hint, "40, 50"));
    // Same trap for medium (24 layers, 16 heads) and large (36 layers, 20 heads).
    CHECK(contains(find(check_config("MultiHeadAttention", mha(1024, 1024, 1024, SlotValue::floating(0.0), SlotValue::integer(24))), "heads_divisibility")->hint, "16 heads"));
    CHECK(contains(find(check_config("MultiHeadAttention", mha(1280, 1280, 1024, SlotValue::floating(0.0), SlotValue::integer(36))), "heads_divisibility")->hint, "20 heads"));
  }

  TEST_CASE("MultiHeadAttention(768, 768, 1024, 12, 0.0): dropout and num_heads swapped") {
    const auto ds = check_config("MultiHeadAttention", mha(768, 768, 1024, SlotValue::integer(12), SlotValue::floating(0.0)));
    const Diagnostic* swapped = find(ds, "slots_swapped");
    REQUIRE(swapped != nullptr);
    CHECK(names_slot(*swapped, "dropout"));
    CHECK(names_slot(*swapped, "num_heads"));
    CHECK(contains(swapped->message, "dropout = 12"));
    CHECK(contains(swapped->message, "num_heads = 0.0"));
    const Diagnostic* range = find(ds, "dropout_range");
    REQUIRE(range != nullptr);
    CHECK(contains(range->pytorch, "between 0 and 1, but got 12"));
    const Diagnostic* type = find(ds, "wrong_type");
    REQUIRE(type != nullptr);
    CHECK(names_slot(*type, "num_heads"));
  }

  TEST_CASE("CausalAttention(3, 2, 6, 0.0) on 7 tokens: num_tokens > context_length") {
    CheckOptions opts;
    opts.input_shape = Shape{1, 7, 3};
    const auto ds =
        check_config("CausalAttention",
                     {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}, {"context_length", SlotValue::integer(6)}, {"dropout", SlotValue::floating(0.0)}}, opts);
    const Diagnostic* d = find(ds, "context_too_short");
    REQUIRE(d != nullptr);
    CHECK(names_slot(*d, "context_length"));
    CHECK(contains(d->message, "num_tokens 7 > context_length 6"));
  }

  TEST_CASE("input width equal to d_out hints that d_in and d_out are swapped") {
    CheckOptions opts;
    opts.input_shape = Shape{6, 3};
    const auto ds = check_config("SelfAttention_v2", {{"d_in", SlotValue::integer(2)}, {"d_out", SlotValue::integer(3)}}, opts);
    const Diagnostic* d = find(ds, "input_width");
    REQUIRE(d != nullptr);
    CHECK(contains(d->hint, "d_in and d_out look swapped"));
  }

  TEST_CASE("missing, unknown (with did-you-mean) and wrongly typed slots, all at once") {
    const auto ds = check_config("MultiHeadAttention", {{"d_in", SlotValue::floating(768.0)},
                                                        {"d_out", SlotValue::integer(768)},
                                                        {"contxt_length", SlotValue::integer(1024)},
                                                        {"dropout", SlotValue::floating(1.5)},
                                                        {"n_heads", SlotValue::integer(12)}});
    std::vector<std::string> codes;
    for (const auto& d : ds) codes.push_back(d.code);
    CHECK(std::count(codes.begin(), codes.end(), "unknown_slot") == 2);
    CHECK(std::count(codes.begin(), codes.end(), "missing_slot") == 2);  // context_length, num_heads
    CHECK(find(ds, "wrong_type") != nullptr);                            // 768.0 in an int slot
    CHECK(find(ds, "dropout_range") != nullptr);
    bool context_hint = false, heads_hint = false;
    for (const auto& d : ds) {
      if (d.code == "unknown_slot" && names_slot(d, "contxt_length")) context_hint = contains(d.hint, "Did you mean context_length?");
      if (d.code == "unknown_slot" && names_slot(d, "n_heads")) heads_hint = contains(d.hint, "Did you mean num_heads?");
    }
    CHECK(context_hint);
    CHECK(heads_hint);
  }

  TEST_CASE("sizes must be positive, dropout a probability in [0, 1], qkv_bias a bool") {
    CHECK(find(check_config("SelfAttention_v1", {{"d_in", SlotValue::integer(0)}, {"d_out", SlotValue::integer(2)}}), "non_positive") != nullptr);
    CHECK(find(check_config("SelfAttention_v1", {{"d_in", SlotValue::integer(-3)}, {"d_out", SlotValue::integer(2)}}), "non_positive") != nullptr);
    CHECK(find(check_config("CausalAttention",
                            {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}, {"context_length", SlotValue::integer(6)}, {"dropout", SlotValue::floating(1.5)}}),
               "dropout_range") != nullptr);
    CHECK(find(check_config("CausalAttention",
                            {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}, {"context_length", SlotValue::integer(6)}, {"dropout", SlotValue::floating(1.0)}}),
               "dropout_all") != nullptr);
    CHECK(find(check_config("SelfAttention_v2", {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}, {"qkv_bias", SlotValue::string("yes")}}), "wrong_type") !=
          nullptr);
    CHECK(find(check_config("SelfAttention_v1", {{"d_in", SlotValue::boolean_value(true)}, {"d_out", SlotValue::integer(2)}}), "wrong_type") != nullptr);
  }

  TEST_CASE("unknown class with a did-you-mean, and PyTorch's own MultiheadAttention explained") {
    const auto a = check_config("MultiHeadAttension", {});
    REQUIRE(find(a, "unknown_class") != nullptr);
    CHECK(contains(find(a, "unknown_class")->hint, "Did you mean MultiHeadAttention?"));
    const auto b = check_config("MultiheadAttention", {});
    CHECK(contains(find(b, "unknown_class")->hint, "PyTorch's built-in"));
  }

  TEST_CASE("too large setups are refused before allocating, with the bytes") {
    const auto ds = check_config("MultiHeadAttention", mha(100000, 100000, 1024, SlotValue::floating(0.0), SlotValue::integer(10)));
    const Diagnostic* d = find(ds, "too_large");
    REQUIRE(d != nullptr);
    CHECK(contains(d->message, "160,000,400,000 bytes"));
    CHECK(d->slots == std::vector<std::string>{"d_in", "d_out"});
  }

  TEST_CASE("parameters over the budget name the slots that make them so: latent_dim, the wrapper's d_out and num_heads, not always d_in") {
    const auto slots_of = [](const std::string& cls, const SlotMap& config) {
      const auto ds = check_config(cls, config);  // alive while its diagnostic is read
      const Diagnostic* d = find(ds, "too_large");
      return d == nullptr ? std::vector<std::string>{"(none)"} : d->slots;
    };
    SlotMap mla = {{"d_in", SlotValue::integer(3)},
                   {"d_out", SlotValue::integer(4)},
                   {"dropout", SlotValue::floating(0.0)},
                   {"num_heads", SlotValue::integer(2)},
                   {"latent_dim", SlotValue::integer(1e9)}};
    CHECK(slots_of("MultiHeadLatentAttention", mla) == std::vector<std::string>{"latent_dim"});
    CHECK(contains(find(check_config("MultiHeadLatentAttention", mla), "too_large")->hint, "Use a smaller latent_dim"));
    CHECK(slots_of("MultiHeadAttentionWrapper", mha(3, 1e6, 10, SlotValue::floating(0.0), SlotValue::integer(256))) == std::vector<std::string>{"d_out", "num_heads"});
    CHECK(slots_of("SelfAttention_v1", {{"d_in", SlotValue::integer(1e9)}, {"d_out", SlotValue::integer(2)}}) == std::vector<std::string>{"d_in"});
    CHECK(slots_of("MultiHeadAttention", mha(768, 1e6, 1024, SlotValue::floating(0.0), SlotValue::integer(10))) == std::vector<std::string>{"d_out"});
  }

  // The chapter's lesson where readers miss it: MultiHeadAttention's d_out is the total the heads share.
  TEST_CASE("MultiHeadAttention(768, 64, 1024, 0.0, 12): d_out read as one head's width is taught, with d_out = 768 and the wrapper first") {
    const auto ds = check_config("MultiHeadAttention", mha(768, 64, 1024, SlotValue::floating(0.0), SlotValue::integer(12)));
    const Diagnostic* d = find(ds, "heads_divisibility");
    REQUIRE(d != nullptr);
    CHECK(contains(d->message, "64 % 12 = 4"));
    CHECK(d->hint.rfind("In MultiHeadAttention, d_out is the width the 12 heads share", 0) == 0);
    CHECK(contains(d->hint, "d_out = 12 x 64 = 768"));
    CHECK(contains(d->hint, "MultiHeadAttentionWrapper(768, 64, 1024, 0.0, 12), whose d_out is per head"));
    REQUIRE(d->fixes.size() >= 3);
    CHECK(d->fixes[0].slot == "d_out");
    CHECK(d->fixes[0].value == "768");
    CHECK(d->fixes[1].call == "MultiHeadAttentionWrapper(768, 64, 1024, 0.0, 12)");
    CHECK(d->fixes[2].slot == "num_heads");  // then the head counts that divide 64, as before
    // Both fixes are valid setups, and the wrapper's output is the 768 the reader expected.
    CHECK_FALSE(has_error(check_config("MultiHeadAttention", mha(768, 768, 1024, SlotValue::floating(0.0), SlotValue::integer(12)))));
    const ParsedCall wrapper = parse_call(d->fixes[1].call);
    CHECK_FALSE(has_error(check_config(wrapper.class_name, wrapper.config)));
    CHECK(validated_config(wrapper.class_name, wrapper.config).output_width() == 768);
  }

  TEST_CASE("a GPT-2 width from num_heads x d_out teaches too; a d_out that is not per head keeps the plain hint") {
    // d_in 512, but 12 x 64 = 768 is GPT-2 small's width.
    const auto small_ds = check_config("MultiHeadAttention", mha(512, 64, 256, SlotValue::floating(0.0), SlotValue::integer(12)));
    const Diagnostic* small = find(small_ds, "heads_divisibility");
    REQUIRE(small != nullptr);
    CHECK(contains(small->hint, "d_out = 12 x 64 = 768"));
    CHECK(small->fixes[0].value == "768");
    const auto other_ds = check_config("MultiHeadAttention", mha(768, 100, 1024, SlotValue::floating(0.0), SlotValue::integer(12)));
    const Diagnostic* other = find(other_ds, "heads_divisibility");
    REQUIRE(other != nullptr);  // 12 x 100 = 1200: neither d_in nor a GPT-2 width
    CHECK(other->hint.rfind("Head counts that divide 100", 0) == 0);
    CHECK(other->fixes[0].slot == "num_heads");
    // GroupedQueryAttention has no context_length: d_out = 768 is offered, no wrapper call.
    const ParsedCall gqa = parse_call("GroupedQueryAttention(768, 64, 0.0, 12, 4)");
    const auto gqa_ds = check_config(gqa.class_name, gqa.config);
    const Diagnostic* g = find(gqa_ds, "heads_divisibility");
    REQUIRE(g != nullptr);
    CHECK(g->fixes[0].value == "768");
    CHECK(g->fixes[1].slot == "num_heads");
    CHECK_FALSE(contains(g->hint, "MultiHeadAttentionWrapper"));
  }

  TEST_CASE("MultiHeadAttention(512, 64, 256, 0.0, 8) is valid but its heads are 8 wide: a warning with the same fixes") {
    const auto ds = check_config("MultiHeadAttention", mha(512, 64, 256, SlotValue::floating(0.0), SlotValue::integer(8)));
    CHECK_FALSE(has_error(ds));
    const Diagnostic* d = find(ds, "d_out_per_head");
    REQUIRE(d != nullptr);
    CHECK(d->severity == Severity::Warning);
    CHECK(contains(d->message, "each head is 64 / 8 = 8 wide, and the output is 64 wide, not 512"));
    CHECK(contains(d->hint, "d_out = 8 x 64 = 512"));
    REQUIRE(d->fixes.size() == 2);
    CHECK(d->fixes[0].value == "512");
    CHECK(d->fixes[1].call == "MultiHeadAttentionWrapper(512, 64, 256, 0.0, 8)");
    // Not for GPT-2 small itself, nor for square setups whose product happens to be a GPT-2 width.
    CHECK(find(check_config("MultiHeadAttention", mha(768, 768, 1024, SlotValue::floating(0.0), SlotValue::integer(12))), "d_out_per_head") == nullptr);
    CHECK(find(check_config("MultiHeadAttention", mha(128, 128, 256, SlotValue::floating(0.0), SlotValue::integer(8))), "d_out_per_head") == nullptr);
    CHECK(find(check_config("MultiHeadAttention", mha(3, 2, 6, SlotValue::floating(0.0), SlotValue::integer(2))), "d_out_per_head") == nullptr);
    // The wrapper's d_out is per head: no such warning there.
    CHECK(find(check_config("MultiHeadAttentionWrapper", mha(512, 64, 256, SlotValue::floating(0.0), SlotValue::integer(8))), "d_out_per_head") == nullptr);
  }

  TEST_CASE("warnings explain legal but suspicious setups") {
    const SlotMap wrapper = mha(768, 768, 1024, SlotValue::floating(0.0), SlotValue::integer(12));
    const auto ds = check_config("MultiHeadAttentionWrapper", wrapper);
    CHECK_FALSE(has_error(ds));
    const Diagnostic* d = find(ds, "wrapper_total_width");
    REQUIRE(d != nullptr);
    CHECK(d->severity == Severity::Warning);
    CHECK(contains(d->message, "12 x 768 = 9216"));
    CHECK(contains(d->hint, "d_out = 64"));
    CHECK(find(check_config("MultiHeadAttention", mha(4, 4, 4, SlotValue::floating(0.0), SlotValue::integer(1))), "one_head") != nullptr);
  }

  TEST_CASE("PyTorch's accept/refuse line for the chapter 3 bonus classes: what it refuses is an error carrying PyTorch's own message, what it runs is clean") {
    const auto& doc = fixtures::all();
    REQUIRE(doc.at("refusals").size() == 6);
    for (const auto& r : doc.at("refusals")) {
      const std::string cls = r.at("class");
      const Shape shape = r.at("input_shape").get<Shape>();
      CAPTURE(cls);
      CAPTURE(shape_string(shape));
      CheckOptions o;
      o.input_shape = shape;
      const auto ds = check_config(cls, fixtures::config(r.at("config")), o);
      const auto error = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& d) { return d.severity == Severity::Error; });
      REQUIRE(error != ds.end());
      const bool width = shape.back() != r.at("config").at("d_out").get<int64_t>();
      CHECK(error->code == (width ? "d_in_d_out_differ" : "context_too_short"));
      // PyTorch's own words
      CHECK(error->pytorch == r.at("error").get<std::string>() + ": " + r.at("message").get<std::string>());
      CHECK_FALSE(error->fixes.empty());
    }
    // MHAEinsum(3, 2, ...) (W_* are (d_in, d_out), "bnd,do->bno") and MHAPyTorchFlexAttention past
    // context_length (its block mask is built for num_tokens in each forward) run, as SDPA does.
    std::vector<std::string> accepted;
    for (const auto& a : doc.at("accepts")) accepted.push_back(a.at("class").get<std::string>() + " " + shape_string(a.at("input_shape").get<Shape>()));
    CHECK(accepted == std::vector<std::string>{"MHAEinsum (2, 6, 3)", "MHAPyTorchScaledDotProduct (2, 8, 4)", "MHAPyTorchFlexAttention (2, 8, 4)"});
    for (const auto& a : doc.at("accepts")) {
      CheckOptions o;
      o.input_shape = a.at("input_shape").get<Shape>();
      const auto ds = check_config(a.at("class"), fixtures::config(a.at("config")), o);
      CHECK(std::none_of(ds.begin(), ds.end(), [](const Diagnostic& d) { return d.severity == Severity::Error; }));
      // and the forward runs past context_length like PyTorch's, to the same output shape
      TorchGenerator g(123);
      const AttentionModule m(fixtures::module_config(a), g);
      CHECK(m.forward(Tensor(*o.input_shape)).shape == a.at("output_shape").get<Shape>());
    }
  }

  TEST_CASE("the slot-order trap: MultiHeadAttention's order pasted into MultiHeadAttentionCombinedQKV is one mha_slot_order with the fixes") {
    const SlotMap pasted = {{"d_in", SlotValue::integer(768)},
                            {"d_out", SlotValue::integer(768)},
                            {"num_heads", SlotValue::integer(1024)},
                            {"context_length", SlotValue::floating(0.0)},
                            {"dropout", SlotValue::integer(12)}};
    const auto ds = check_config("MultiHeadAttentionCombinedQKV", pasted);
    REQUIRE(ds.size() == 1);
    CHECK(ds[0].code == "mha_slot_order");
    CHECK(ds[0].slots == std::vector<std::string>{"num_heads", "context_length", "dropout"});
    CHECK(contains(ds[0].hint, "MultiHeadAttentionCombinedQKV(768, 768, 12, 1024, 0.0)"));
    // one fix: the three slots change together (set one alone and the other two stay wrong)
    REQUIRE(ds[0].fixes.size() == 1);
    CHECK(ds[0].fixes[0].call == "MultiHeadAttentionCombinedQKV(768, 768, 12, 1024)");  // dropout = 0.0 is the default
    CHECK_FALSE(has_error(parse_call(ds[0].fixes[0].call).diagnostics));
  }

  TEST_CASE("the recipes' warnings: FlexAttention ignores dropout, the inverted mask is named with its fix") {
    const auto flex = check_config("MHAPyTorchFlexAttention", {{"d_in", SlotValue::integer(4)},
                                                               {"d_out", SlotValue::integer(4)},
                                                               {"num_heads", SlotValue::integer(2)},
                                                               {"context_length", SlotValue::integer(6)},
                                                               {"dropout", SlotValue::floating(0.1)}});
    REQUIRE(find(flex, "dropout_ignored"));
    CHECK(find(flex, "dropout_ignored")->severity == Severity::Warning);
    CHECK(find(flex, "dropout_ignored")->fixes.front().value == "0.0");
    const auto inverted =
        check_config("MHAPyTorchSDPAWithoutFlash",
                     {{"d_in", SlotValue::integer(4)}, {"d_out", SlotValue::integer(4)}, {"num_heads", SlotValue::integer(2)}, {"context_length", SlotValue::integer(6)}});
    REQUIRE(find(inverted, "inverted_mask"));
    CHECK(contains(find(inverted, "inverted_mask")->hint, "is_causal=True"));
  }
}

TEST_SUITE("validator: fixes lead somewhere") {
  /// The errors left after applying `f` to `config` (a whole-call fix is read as the page reads it).
  std::vector<std::string> error_codes(const std::vector<Diagnostic>& ds) {
    std::vector<std::string> codes;
    for (const auto& d : ds)
      if (d.severity == Severity::Error) codes.push_back(d.code);
    return codes;
  }

  /// The errors left after applying `f` to `config` (a whole-call fix is read as the page reads it).
  std::vector<std::string> errors_after(const std::string& class_name, SlotMap config, const Fix& f) {
    if (!f.call.empty()) return error_codes(parse_call(f.call).diagnostics);
    config[f.slot] = parse_literal(f.value);
    return error_codes(check_config(class_name, config));
  }

  TEST_CASE("GroupedQueryAttention(768, 768, 1024, 0.0, 12): one fix, the whole corrected call, which is valid") {
    const ParsedCall c = parse_call("GroupedQueryAttention(768, 768, 1024, 0.0, 12)");
    const Diagnostic* d = find(c.diagnostics, "mha_slot_order");
    REQUIRE(d);
    REQUIRE(d->fixes.size() == 1);
    CHECK(d->fixes[0].slot == "");
    // num_kv_groups gets a count that divides the 12 heads: 4, three query heads per key/value head
    CHECK(d->fixes[0].call == "GroupedQueryAttention(768, 768, 0.0, 12, 4)");
    CHECK(contains(d->hint, "GroupedQueryAttention(768, 768, 0.0, 12, 4)"));
    CHECK_FALSE(has_error(parse_call(d->fixes[0].call).diagnostics));
  }

  TEST_CASE("the other swaps are whole calls too: MultiHeadAttention's dropout/num_heads, the latent class's qkv_bias back to False") {
    const ParsedCall mha_call = parse_call("MultiHeadAttention(768, 768, 1024, 12, 0.1)");
    REQUIRE(find(mha_call.diagnostics, "slots_swapped"));
    REQUIRE(find(mha_call.diagnostics, "slots_swapped")->fixes.size() == 1);
    CHECK(find(mha_call.diagnostics, "slots_swapped")->fixes[0].call == "MultiHeadAttention(768, 768, 1024, 0.1, 12)");
    const ParsedCall mla = parse_call("MultiHeadLatentAttention(768, 768, 1024, 0.0, 12)");
    REQUIRE(find(mla.diagnostics, "mha_slot_order"));
    const std::string fixed = find(mla.diagnostics, "mha_slot_order")->fixes.at(0).call;
    CHECK(fixed == "MultiHeadLatentAttention(768, 768, 0.0, 12)");
    CHECK_FALSE(has_error(parse_call(fixed).diagnostics));
  }

  TEST_CASE("num_heads = 0.0 is not told to write 0 (which fails 'at least 1')") {
    const auto ds = check_config("MultiHeadAttention", mha(768, 768, 1024, SlotValue::floating(0.0), SlotValue::floating(0.0)));
    const Diagnostic* d = find(ds, "wrong_type");
    REQUIRE(d);
    CHECK_FALSE(contains(d->hint, "Write 0 "));
    CHECK(contains(d->hint, "at least 1"));
  }

  TEST_CASE("property: every offered fix gives a valid setup or strictly fewer errors (2,000 random slot fillings, std::mt19937 seeded)") {
    std::mt19937 rng(20261201);
    const auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    const SlotValue pool[] = {SlotValue::integer(0),          SlotValue::integer(1),    SlotValue::integer(2),    SlotValue::integer(3),     SlotValue::integer(4),
                              SlotValue::integer(6),          SlotValue::integer(12),   SlotValue::integer(10),   SlotValue::integer(768),   SlotValue::integer(1024),
                              SlotValue::floating(0.0),       SlotValue::floating(0.1), SlotValue::floating(1.0), SlotValue::floating(12.0), SlotValue::floating(768.0),
                              SlotValue::boolean_value(true), SlotValue::none()};
    const auto& classes = class_specs();
    int checked = 0;
    for (int draw = 0; draw < 2000; ++draw) {
      const ClassSpec& spec = classes[pick(classes.size())];
      SlotMap config;
      for (const auto& slot : spec.slots) {
        if (slot.default_value && pick(3) == 0) continue;
        config[slot.name] = pool[pick(std::size(pool))];
      }
      const auto ds = check_config(spec.name, config);
      const std::vector<std::string> before = error_codes(ds);
      for (const auto& d : ds) {
        if (d.severity != Severity::Error) continue;
        for (const auto& f : d.fixes) {
          ++checked;
          const std::vector<std::string> after = errors_after(spec.name, config, f);
          const auto join = [](const std::vector<std::string>& v) {
            std::string s;
            for (const auto& x : v) s += x + " ";
            return s;
          };
          INFO(
              spec.name, " ", d.code, " fix ", f.slot, "=", f.value, f.call, " from ",
              [&] {
                std::string s;
                for (const auto& [k, v] : config) s += k + "=" + v.python() + " ";
                return s;
              }(),
              " errors before: ", join(before), " after: ", join(after));
          CHECK((after.empty() || after.size() < before.size()));
        }
      }
    }
    CHECK(checked > 500);
  }
}
