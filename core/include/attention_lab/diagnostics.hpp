// Configuration problems, reported all at once, each with code, severity, slots, message and hint.
#pragma once

#include <string>
#include <vector>

namespace attention_lab {

enum class Severity { Error, Warning, Info };

/// A value that would fix a diagnostic: set `slot` to `value` (the slot's text as typed, e.g. "12").
/// When several slots must change together (values in the wrong slots), one Fix holds the whole
/// corrected call instead ("GroupedQueryAttention(768, 768, 0.0, 12, 4)"): `call` is set, `slot` and
/// `value` are "" (set one slot of such a pair alone and the rest stays wrong).
struct Fix {
  std::string slot;
  std::string value;
  std::string call = {};
};
const char* severity_name(Severity s);

struct Diagnostic {
  Severity severity = Severity::Error;
  /// Stable machine code ("heads_divisibility", "missing_slot", ...). Tests assert codes, not wording.
  std::string code;
  /// The slots involved (may be empty).
  std::vector<std::string> slots;
  std::string message;
  std::string hint;
  /// What PyTorch itself raises for this setup ("" when it runs without complaint).
  std::string pytorch;
  /// Values that would fix it, nearest first per slot (e.g. the head counts that divide d_out near
  /// the one typed). A page offers them as buttons, leaving out slots the reader cannot change.
  std::vector<Fix> fixes = {};
  /// The severity as the page names it ("error", "warning", "info": severity_name).
  std::string severity_text() const { return severity_name(severity); }
};

bool has_error(const std::vector<Diagnostic>& diagnostics);

/// The closest candidate by edit distance (case-insensitive), or "" when none is close enough.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace attention_lab
