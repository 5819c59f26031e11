// The readers' modules of tests/fixtures/check_module_fixtures.json (generate_check_fixtures.py), read
// and checked in one place for the check tests.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_lab/call_parser.hpp"
#include "attention_lab/check_module.hpp"
#include "attention_lab/validator.hpp"
#include "fixtures.hpp"

namespace check_cases {

inline const nlohmann::json& all() {
  static const nlohmann::json data = [] {
    std::ifstream in(std::string(attention_lab::test_paths::fixtures) + "/check_module_fixtures.json");
    return nlohmann::json::parse(in);
  }();
  return data.at("cases");
}

inline attention_lab::ModuleConfig config_of(const std::string& call) {
  const attention_lab::ParsedCall parsed = attention_lab::parse_call(call);
  return attention_lab::validated_config(parsed.class_name, parsed.config);
}

inline std::vector<attention_lab::NamedTensor> named(const nlohmann::json& list) {
  std::vector<attention_lab::NamedTensor> out;
  for (const auto& t : list) out.push_back({t.at("name").get<std::string>(), fixtures::tensor(t)});
  return out;
}

/// A check's report and the ids of the causes that explain.
struct Checked {
  attention_lab::CheckReport report;
  std::vector<std::string> explaining;
};

/// check_module on a case, as the page's snippet saved it.
/// The case's check: with its "seed" (torch.manual_seed right before the forward, training mode) when it has one, or `seed`.
inline Checked check(const nlohmann::json& c, std::optional<uint64_t> seed = std::nullopt) {
  std::vector<attention_lab::NamedTensor> stages;
  if (c.contains("stages"))
    for (const auto& [id, t] : c.at("stages").items()) stages.push_back({id, fixtures::tensor(t)});
  if (c.contains("seed")) seed = c.at("seed").get<uint64_t>();
  Checked out{attention_lab::check_module(config_of(c.at("call")), named(c.at("state_dict")), fixtures::tensor(c.at("x")), fixtures::tensor(c.at("output")), stages,
                                          attention_lab::kDefaultMemoryBudgetBytes, nullptr, seed),
              {}};
  for (const attention_lab::CheckCause& cause : out.report.causes)
    if (cause.explains) out.explaining.push_back(cause.id);
  return out;
}

inline std::vector<std::string> cause_ids(const attention_lab::CheckReport& r) {
  std::vector<std::string> ids;
  for (const attention_lab::CheckCause& c : r.causes) ids.push_back(c.id);
  return ids;
}

inline const nlohmann::json& named_case(const std::string& name) {
  for (const auto& c : all())
    if (c.at("name") == name) return c;
  throw std::runtime_error("no check fixture " + name);
}

}  // namespace check_cases
