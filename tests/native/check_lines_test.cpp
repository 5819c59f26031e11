// Each catalogue cause's line and fix as the reader's class writes them (core/src/check_lines.cpp),
// checked on the readers' modules of tests/fixtures/check_readers.py and generate_check_fixtures.py:
// for a class and the mistake written into its forward, the explaining cause shows the [line, fix] of
// tests/fixtures/check_lines.json (written by hand from the class's source in the book's repository).
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>

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
