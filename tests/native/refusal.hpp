// What a call refuses: the code, slot, message and hint of the AttentionError it throws, read in one
// place for every test that asserts them.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "attention_lab/tensor.hpp"

/// The AttentionError `f` throws, as its parts; all "" when it throws none.
struct Refused {
  std::string code, slot, message, hint;
  /// "code [slot] message": what the refusal says, its fix apart ("" for none).
  std::string said() const { return code.empty() ? "" : code + " [" + slot + "] " + message; }
};
inline Refused refused(const std::function<void()>& f) {
  try {
    f();
  } catch (const attention_lab::AttentionError& e) {
    return {e.code(), e.slot(), e.what(), e.hint()};
  }
  return {};
}

/// {code, slot} of the AttentionError `f` throws; {"", ""} when it throws none.
inline std::pair<std::string, std::string> refusal(const std::function<void()>& f) {
  Refused r = refused(f);
  return {std::move(r.code), std::move(r.slot)};
}

/// The whole refusal a reader sees, "code [slot] message | hint"; "" when `f` throws none.
inline std::string refusal_text(const std::function<void()>& f) {
  const Refused r = refused(f);
  return r.code.empty() ? "" : r.said() + " | " + r.hint;
}
