// Loads the PyTorch reference fixtures written by tests/fixtures/generate_fixtures.py.
#pragma once

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "attention_lab/schema.hpp"
#include "attention_lab/tensor.hpp"
#include "attention_lab/validator.hpp"
#include "test_paths.hpp"

namespace fixtures {

inline const nlohmann::json& all() {
  static const nlohmann::json data = [] {
    std::ifstream in(std::string(attention_lab::test_paths::fixtures) + "/attention_fixtures.json");
    return nlohmann::json::parse(in);
  }();
  return data;
}

/// {"shape": [...], "data": [...]} with "-inf"/"inf"/"nan" strings for non-finite values.
inline attention_lab::Tensor tensor(const nlohmann::json& j) {
  attention_lab::Tensor t(j.at("shape").get<attention_lab::Shape>());
  const auto& data = j.at("data");
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i].is_string()) {
      const std::string s = data[i].get<std::string>();
      const float inf = std::numeric_limits<float>::infinity();
      t.data[i] = s == "-inf" ? -inf : s == "inf" ? inf : std::numeric_limits<float>::quiet_NaN();
    } else {
      t.data[i] = static_cast<float>(data[i].get<double>());
    }
  }
  return t;
}

inline attention_lab::SlotMap config(const nlohmann::json& j) {
  attention_lab::SlotMap m;
  for (const auto& [key, value] : j.items()) {
    if (value.is_null())
      m[key] = attention_lab::SlotValue::none();  // dtype=None, sliding_window_size=None
    else if (value.is_boolean())
      m[key] = attention_lab::SlotValue::boolean_value(value.get<bool>());
    else if (key == "dropout")
      m[key] = attention_lab::SlotValue::floating(value.get<double>());
    else
      m[key] = attention_lab::SlotValue::integer(value.get<double>());
  }
  return m;
}

/// The module config of a fixture case ({"class", "config", ...}), validated.
inline attention_lab::ModuleConfig module_config(const nlohmann::json& c) { return attention_lab::validated_config(c.at("class").get<std::string>(), config(c.at("config"))); }

inline const nlohmann::json& named_case(const std::string& name) {
  for (const auto& c : all().at("cases"))
    if (c.at("name") == name) return c;
  throw std::runtime_error("no fixture case " + name);
}

}  // namespace fixtures
