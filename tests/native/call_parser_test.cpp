#include <doctest/doctest.h>

#include <algorithm>

#include "attention_lab/call_parser.hpp"

using namespace attention_lab;

namespace {
bool has_code(const ParsedCall& c, const std::string& code) {
  return std::any_of(c.diagnostics.begin(), c.diagnostics.end(), [&](const Diagnostic& d) { return d.code == code; });
}
}  // namespace

TEST_SUITE("call_parser") {
  TEST_CASE("each positional value is named left to right, defaults filled in") {
    const ParsedCall c = parse_call("MultiHeadAttention(768, 768, 1024, 0.0, 12)");
    CHECK(c.class_name == "MultiHeadAttention");
    CHECK_FALSE(has_error(c.diagnostics));
    REQUIRE(c.slots.size() == 6);
    const char* names[] = {"d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"};
    for (int i = 0; i < 6; ++i) {
      CHECK(c.slots[static_cast<size_t>(i)].name == names[i]);
      CHECK(c.slots[static_cast<size_t>(i)].position == i + 1);
    }
    CHECK(c.slots[2].value.number == 1024);
    CHECK(c.slots[3].value.kind == SlotValue::Kind::Float);
    CHECK(c.slots[4].source == "positional");
    CHECK(c.slots[5].source == "default");
    CHECK(c.slots[5].value.boolean == false);
  }

  TEST_CASE("nn. prefix, keywords, True, 0. and .0, trailing comma, comments, newlines, assignment") {
    const ParsedCall c = parse_call("mha = nn.MultiHeadAttention(\n  d_in=768, d_out=768,  # GPT-2 small\n  context_length=1024, dropout=.0, num_heads=12, qkv_bias=True,\n)");
    CHECK(c.class_name == "MultiHeadAttention");
    CHECK_FALSE(has_error(c.diagnostics));
    CHECK(c.config.at("qkv_bias").boolean == true);
    CHECK(c.config.at("dropout").kind == SlotValue::Kind::Float);
    CHECK(c.slots[0].source == "keyword");
    const ParsedCall d = parse_call("torch.nn.CausalAttention(3, 2, 6, 0.)");
    CHECK(d.class_name == "CausalAttention");
    CHECK_FALSE(has_error(d.diagnostics));
  }

  TEST_CASE("argument-binding problems are reported the way Python would") {
    CHECK(has_code(parse_call("SelfAttention_v1(3, 2, 4)"), "extra_positional"));
    CHECK(has_code(parse_call("SelfAttention_v1(3, d_in=2)"), "duplicate_slot"));
    CHECK(has_code(parse_call("SelfAttention_v1(d_in=3, 2)"), "positional_after_keyword"));
    CHECK(has_code(parse_call("MultiHeadAttention(3, 2, 6, 0.0)"), "missing_slot"));
    CHECK(has_code(parse_call("MultiHeadAttention(3, 2, 6, 0.0, n_heads=2)"), "unknown_slot"));
    CHECK(has_code(parse_call("MultiHeadAttention(3, 2, 6, 0.0, 2"), "syntax"));
    CHECK(has_code(parse_call("Attention(3, 2)"), "unknown_class"));
    CHECK(has_code(parse_call(""), "empty"));
    CHECK(has_code(parse_call("SelfAttention_v1(0x1G, 2)"), "not_a_literal"));
    CHECK(has_code(parse_call("SelfAttention_v1(cfg['emb_dim'], 2)"), "not_a_literal"));
    CHECK(has_code(parse_call("SelfAttention_v1(3, 2) extra"), "syntax"));
    CHECK(has_code(parse_call(std::string(200000, '(')), "too_long"));
  }

  TEST_CASE("the parser feeds the validator: the swapped GPT-2 call is caught") {
    const ParsedCall c = parse_call("MultiHeadAttention(768, 768, 1024, 12, 0.0)");
    CHECK(has_code(c, "slots_swapped"));
    CHECK(c.slots[3].name == "dropout");
    CHECK(c.slots[3].value.number == 12);
  }

  TEST_CASE("negative numbers and exponents are literals") {
    const ParsedCall c = parse_call("CausalAttention(3, -2, 6, 1e-1)");
    CHECK(c.config.at("d_out").number == -2);
    CHECK(c.config.at("dropout").number == doctest::Approx(0.1));
    CHECK(has_code(c, "non_positive"));
  }

  TEST_CASE("ints as Python reads them: 0768 is Python's SyntaxError, 0b11, 0o17 and 0x1F are ints, 00 is 0") {
    const ParsedCall leading = parse_call("MultiHeadAttention(0768, 768, 1024, 0.0, 12)");
    REQUIRE(leading.diagnostics.size() == 1);
    CHECK(leading.diagnostics[0].code == "syntax");
    CHECK(leading.diagnostics[0].message == "leading zeros in the int 0768 at column 20: Python refuses them");
    CHECK(leading.diagnostics[0].hint == "Write 768.");
    CHECK(leading.diagnostics[0].pytorch == "SyntaxError: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers");
    const ParsedCall bases = parse_call("MultiHeadAttention(0b11, 0x3, 0o6, 0.0, 0b1_1)");
    CHECK_FALSE(has_error(bases.diagnostics));
    CHECK(bases.config.at("d_in").number == 3);
    CHECK(bases.config.at("d_in").kind == SlotValue::Kind::Int);
    CHECK(bases.config.at("d_out").number == 3);
    CHECK(bases.config.at("context_length").number == 6);
    CHECK(bases.config.at("num_heads").number == 3);
    CHECK(parse_call("MultiHeadAttention(3, 0x1F, 6, 0.0, 1)").config.at("d_out").number == 31);
    // 00 and 0768.0 are fine in Python
    CHECK(parse_call("CausalAttention(3, 2, 6, 00)").config.at("dropout").number == 0);
    CHECK(parse_call("CausalAttention(3, 2, 6, 00)").diagnostics.empty());
    CHECK(parse_call("CausalAttention(3, 2, 6, 0768.0)").config.at("dropout").number == 768.0);
  }

  TEST_CASE("2**31 is refused honestly: Python would compute it, the lab reads literals only") {
    const ParsedCall c = parse_call("MultiHeadAttention(3, 2, 6, 0.0, 2**31)");
    REQUIRE(c.diagnostics.size() == 1);
    CHECK(c.diagnostics[0].code == "not_a_literal");
    CHECK(c.diagnostics[0].message == "num_heads = 2 ** 31 is arithmetic: Python would compute it, but this lab reads each slot as one literal value");
    CHECK(c.diagnostics[0].hint == "Type the result itself (for example 768).");
  }
}
