// The one list of codes (core/include/attention_lab/error_codes.hpp): no code twice, every group
// known, and every code the core mints as a string literal (AttentionError("...", ...), a Diagnostic
// made with Severity::..., "...", or `.code = "..."`) is in it. The sources are read from
// test_paths::core (set in CMakeLists.txt). The bindings, the facade and the page are checked by
// tests/node/error-codes.test.mjs.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attention_lab/error_codes.hpp"
#include "test_paths.hpp"

using namespace attention_lab;

namespace {
/// Every literal code minted in core/src/*.cpp and core/include/attention_lab/*.hpp, with a file that
/// mints it ("core/src/validator.cpp").
std::map<std::string, std::string> minted_by_core() {
  static const std::regex minted(R"re((AttentionError\(|Severity::(Error|Warning|Info),|\.code\s*=)\s*"([^"]*)")re");
  std::map<std::string, std::string> out;
  const std::filesystem::path core(attention_lab::test_paths::core);
  for (const auto& dir : {core / "src", core / "include" / "attention_lab"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      for (auto it = std::sregex_iterator(s.begin(), s.end(), minted); it != std::sregex_iterator(); ++it)
        out.emplace((*it)[3].str(), entry.path().lexically_relative(core.parent_path()).string());
    }
  }
  return out;
}

const ErrorCodeInfo* info_of(const std::string& code) {
  for (const ErrorCodeInfo& info : kErrorCodes)
    if (code == info.code) return &info;
  return nullptr;
}
}  // namespace

TEST_SUITE("error codes") {
  TEST_CASE("the table has no code twice, each in a known group, the groups together and in order") {
    std::set<std::string> codes;
    std::vector<std::string> groups;
    for (const ErrorCodeGroup& g : kErrorCodeGroups) groups.push_back(g.id);
    CHECK(std::set<std::string>(groups.begin(), groups.end()).size() == groups.size());
    size_t group = 0;
    for (const ErrorCodeInfo& info : kErrorCodes) {
      CAPTURE(info.code);
      CHECK(codes.insert(info.code).second);
      CHECK(std::regex_match(info.code, std::regex("[a-z][a-z0-9_]*")));
      CHECK(std::string(info.meaning).size() > 0);
      const auto at = std::find(groups.begin(), groups.end(), info.group);
      REQUIRE(at != groups.end());
      const size_t g = static_cast<size_t>(at - groups.begin());
      CHECK(g >= group);
      group = g;
    }
    CHECK(codes.size() >= 80);
  }

  TEST_CASE("is_error_code: every code of the table, nothing else") {
    for (const ErrorCodeInfo& info : kErrorCodes) CHECK(is_error_code(info.code));
    CHECK_FALSE(is_error_code(""));
    CHECK_FALSE(is_error_code("no_such_code"));
    CHECK_FALSE(is_error_code("too_larg"));
    CHECK_FALSE(is_error_code("too_large "));
  }

  TEST_CASE("every code the core mints is in the table, and none of the page's own") {
    const auto minted = minted_by_core();
    // the scan sees each way of minting: AttentionError, make(Severity, ...), a braced Diagnostic, .code =
    for (const char* code : {"too_large", "d_in_d_out_differ", "dropout_ignored", "inverted_mask", "syntax", "too_long", "empty", "non_finite_stage", "checkpoint_bad_header"})
      CHECK_MESSAGE(minted.count(code) == 1, code);
    CHECK(minted.size() >= 55);
    for (const auto& [code, file] : minted) {
      CAPTURE(code);
      CAPTURE(file);
      const ErrorCodeInfo* info = info_of(code);
      REQUIRE_MESSAGE(info != nullptr, file << " mints '" << code << "', which core/include/attention_lab/error_codes.hpp does not list");
      CHECK(std::string(info->group) != "page");
    }
  }
}
