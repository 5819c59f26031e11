// The call parser's tokens, for its source files only (not part of the public headers).
#pragma once

#include <string>
#include <vector>

#include "attention_lab/diagnostics.hpp"

namespace attention_lab::call_parser_detail {

struct Token {
  enum class Kind { Name, Number, String, LParen, RParen, Comma, Equals, Other, End } kind;
  std::string text;
  size_t column;  // 1-based character column of the token start
  bool is_float = false;
  int base = 10;  // 2, 8 or 16 for Python's 0b, 0o and 0x integers
};

/// A syntax diagnostic (Python's SyntaxError) with `message` and the fix `hint`.
inline Diagnostic syntax(std::string message, std::string hint) { return {Severity::Error, "syntax", {}, std::move(message), std::move(hint), "SyntaxError: invalid syntax"}; }

/// Splits the call into tokens, ending with an End token; stops at the first character that cannot
/// start a token (a syntax diagnostic in `diags`).
std::vector<Token> tokenize(const std::string& s, std::vector<Diagnostic>& diags);

}  // namespace attention_lab::call_parser_detail
