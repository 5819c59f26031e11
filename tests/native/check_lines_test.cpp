// Each catalogue cause's line and fix as the reader's class writes them (core/src/check_lines.cpp),
// checked on the readers' modules of tests/fixtures/check_readers.py and generate_check_fixtures.py:
// for a class and the mistake written into its forward, the explaining cause shows the [line, fix] of
// tests/fixtures/check_lines.json (written by hand from the class's source in the book's repository).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <utility>

#include "attention_lab/plan.hpp"
#include "check_cases.hpp"
#include "test_paths.hpp"

using namespace attention_lab;

namespace {

const nlohmann::json& expected_lines() {
  static const nlohmann::json lines = [] {
    std::ifstream in(std::string(test_paths::fixtures) + "/check_lines.json");
    return nlohmann::json::parse(in);
  }();
  return lines;
}

std::string class_of(const nlohmann::json& c) {
  const std::string call = c.at("call");
  return call.substr(0, call.find('('));
}

}  // namespace

TEST_SUITE("check_module lines") {
  TEST_CASE("the explaining cause quotes the line of the reader's class and the book's line of that class") {
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto& c : check_cases::all()) {
      if (!c.at("expect").at("explains").is_string()) continue;
      const std::string name = class_of(c), mistake = c.at("expect").at("explains");
      const auto& table = expected_lines();
      if (!table.contains(name) || !table.at(name).contains(mistake)) continue;
      CAPTURE(c.at("name").get<std::string>());
      const CheckReport r = check_cases::check(c).report;
      const auto cause = std::find_if(r.causes.begin(), r.causes.end(), [&](const CheckCause& x) { return x.id == mistake; });
      REQUIRE(cause != r.causes.end());
      CHECK(cause->explains);
      CHECK(cause->line == table.at(name).at(mistake).at(0).get<std::string>());
      CHECK(cause->fix == table.at(name).at(mistake).at(1).get<std::string>());
      seen.insert({name, mistake});
    }
    size_t listed = 0;
    for (const auto& [name, entries] : expected_lines().items())
      if (name != "_about") listed += entries.size();
    CHECK(seen.size() == listed);  // every line of the table was shown by a case of its class
  }

  TEST_CASE("every cause of every class differs from its fix, and the chapter 3 names stay in chapter 3's classes") {
    for (const auto& c : check_cases::all()) {
      if (!c.at("expect").at("explains").is_null() || !c.at("expect").at("agree").get<bool>()) continue;
      const std::string name = class_of(c);
      CAPTURE(c.at("name").get<std::string>());
      for (const CheckCause& cause : check_cases::check(c).report.causes) {
        CAPTURE(cause.id);
        CHECK(cause.line != cause.fix);
        // a class whose forward has no out_proj, no W_query(x), no head_dim is not shown them
        if (name == "MultiHeadAttentionCombinedQKV" || name == "MHAPyTorchScaledDotProduct") CHECK(cause.fix.find("out_proj") == std::string::npos);
        if (name == "SelfAttention_v1" || name == "MHAEinsum") CHECK(cause.fix.find("W_query(x)") == std::string::npos);
        if (name.rfind("SelfAttention", 0) == 0 || name == "CausalAttention" || name == "MultiHeadAttentionWrapper") CHECK(cause.line.find("head_dim") == std::string::npos);
      }
    }
  }
}

TEST_SUITE("check_module lines") {
  TEST_CASE("the classes without reader fixtures: their own split, buffer, attention call and mask line") {
    const auto lines = [](const std::string& call, const std::string& id) {
      const ForwardPlan plan = plan_forward(check_cases::config_of(call));
      for (const Mistake& m : mistake_catalogue())
        if (m.id == id) {
          REQUIRE(m.applies(plan));
          const CauseLines l = m.lines(plan);
          return std::pair{l.line, l.fix};
        }
      FAIL("no entry " << id);
      return std::pair<std::string, std::string>{};
    };
    using P = std::pair<std::string, std::string>;
    CHECK(lines("MultiHeadAttentionWithSWA(4, 4, 0.0, 2, sliding_window_size=3)", "heads_view_no_transpose") ==
          P{"keys = self.W_key(x).view(b, self.num_heads, num_tokens, self.head_dim)", "keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)"});
    CHECK(lines("MultiHeadAttentionWithSWA(4, 4, 0.0, 2, sliding_window_size=3)", "mask_diagonal") ==
          P{"mask_bool = (diff <= 0) | (diff >= W)", "mask_bool = (diff < 0) | (diff >= W)"});
    CHECK(lines("MHAPyTorchClass(4, 4, 2, 6)", "mask_diagonal") == P{"self.register_buffer(\"mask\", torch.triu(torch.ones(context_length, context_length), diagonal=0).bool())",
                                                                     "self.register_buffer(\"mask\", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())"});
    CHECK(lines("MHAPyTorchClass(4, 4, 2, 6)", "mask_not_passed") == P{"attn_output, _ = self.multihead_attn(x, x, x, need_weights=self.need_weights)",
                                                                       "attn_output, _ = self.multihead_attn(x, x, x, attn_mask=attn_mask, need_weights=self.need_weights)"});
    CHECK(lines("MHAPyTorchFlexAttention(4, 4, 2, 6)", "mask_not_passed") ==
          P{"context_vec = flex_attention(queries, keys, values)", "context_vec = flex_attention(queries, keys, values, block_mask=attn_mask)"});
    CHECK(lines("MultiHeadLatentAttention(4, 4, 0.0, 2)", "mask_diagonal") ==
          P{"scores.masked_fill_(q_pos.unsqueeze(-1) <= k_pos.unsqueeze(0), -torch.inf)", "scores.masked_fill_(q_pos.unsqueeze(-1) < k_pos.unsqueeze(0), -torch.inf)"});
    CHECK(lines("GatedMultiHeadAttention(4, 4, 6, 0.0, 2)", "scale_d_out") ==
          P{"attn_weights = torch.softmax(attn_scores / (self.d_out ** 0.5), dim=-1)", "attn_weights = torch.softmax(attn_scores / (self.head_dim ** 0.5), dim=-1)"});
  }
}
