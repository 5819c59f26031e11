// What a call refuses: the code and slot of the AttentionError it throws, for tests that assert both.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "attention_lab/tensor.hpp"

/// {code, slot} of the AttentionError `f` throws; {"", ""} when it throws none.
inline std::pair<std::string, std::string> refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const attention_lab::AttentionError& e) {
    return {e.code(), e.slot()};
  }
  return {"", ""};
}
