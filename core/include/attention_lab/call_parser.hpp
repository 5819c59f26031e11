// Parses a Python constructor call such as `MultiHeadAttention(768, 768, 1024, 0.0, 12)`.
#pragma once

#include <string>
#include <vector>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/schema.hpp"

namespace attention_lab {

struct ParsedSlot {
  std::string name;
  int position = 0;  // 1-based slot position in the signature; 0 for an unknown keyword
  SlotValue value;
  std::string source;  // "positional" | "keyword" | "default"
  std::string text;    // as written ("" for defaults)
};

struct ParsedCall {
  std::string class_name;               // "" when none could be read
  SlotMap config;                       // what was given (defaults not filled in)
  std::vector<ParsedSlot> slots;        // every slot of the class left to right, then unknown keywords
  std::vector<Diagnostic> diagnostics;  // syntax and argument-binding problems, then check_config's
};

/// Accepts "nn." and "torch.nn." prefixes, an optional "name =" in front, positional, keyword and mixed
/// arguments, True/False/None, "0.", ".0" and "1e-3", signs, trailing commas, whitespace, newlines and
/// `#` comments. Never throws; anything else is a diagnostic (syntax, unknown_class, extra_positional,
/// duplicate_slot, positional_after_keyword, not_a_literal, ... plus every check_config code).
/// Input longer than `max_length` characters is refused with code "too_long"; more than 200 nested
/// parentheses is a syntax error, as in Python. Redundant parentheses and signs around a literal are
/// read as Python evaluates them (`-(3)` is -3). A name with a non-ASCII lookalike letter is an
/// unknown_class whose hint names the character.
ParsedCall parse_call(const std::string& text, size_t max_length = 100000);

/// One value as Python would read it: `768` (Int), `0.0`/`.5`/`1e-3` (Float), `True`/`False`, `None`,
/// anything else an Expression (empty text is None). Used for form fields, so a field holding `3.0`
/// is diagnosed like the same text in a pasted call.
SlotValue parse_literal(const std::string& text);

}  // namespace attention_lab
