// The call's tokens as Python's tokenizer reads them: names, int and float literals (0x1F, 1_000, 1e-3),
// strings, brackets, commas and '='; anything else one "other" token per character.
#include <cctype>
#include <cstring>
#include <optional>

#include "call_tokens.hpp"

namespace attention_lab::call_parser_detail {

namespace {

/// Python's tokenizer refuses more than 200 open brackets ("too many nested parentheses").
constexpr int kMaxNesting = 200;

/// A name or dotted path (torch.nn.MultiHeadAttention).
Token read_name(const std::string& s, size_t& i) {
  const size_t start = i;
  // Bytes >= 0x80 continue a name, as Python accepts non-ASCII letters in identifiers: a Cyrillic
  // 'а' inside "SelfАttention_v1" then gives an unknown class, as Python's NameError does.
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '.' || static_cast<unsigned char>(s[i]) >= 0x80)) ++i;
  return {Token::Kind::Name, s.substr(start, i - start), start + 1};
}

/// Python's 0b11, 0o17, 0x1F (underscores between digits allowed): ints like any other.
Token read_based_int(const std::string& s, size_t& i) {
  const size_t start = i;
  const int base = std::tolower(static_cast<unsigned char>(s[i + 1])) == 'b' ? 2 : std::tolower(static_cast<unsigned char>(s[i + 1])) == 'o' ? 8 : 16;
  i += 2;
  bool ok = true;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) {
    const int digit = std::isdigit(static_cast<unsigned char>(s[i]))   ? s[i] - '0'
                      : std::isalpha(static_cast<unsigned char>(s[i])) ? std::tolower(static_cast<unsigned char>(s[i])) - 'a' + 10
                                                                       : 0;
    if (s[i] != '_' && digit >= base) ok = false;
    ++i;
  }
  Token t{ok ? Token::Kind::Number : Token::Kind::Other, s.substr(start, i - start), start + 1};
  t.base = base;
  return t;
}

/// A decimal int or float (768, 1_000, 0.1, .5, 1e-3); none after a syntax error in `diags`.
std::optional<Token> read_decimal(const std::string& s, size_t& i, std::vector<Diagnostic>& diags) {
  const size_t start = i;
  bool is_float = false;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
  if (i < s.size() && s[i] == '.') {
    is_float = true;
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
      is_float = true;
      i = j;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
  }
  // 0x10, 12abc: a number glued to letters is not a decimal literal.
  const size_t glued_start = i;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
  Token t{Token::Kind::Number, s.substr(start, i - start), start + 1, is_float};
  if (i != glued_start) t.kind = Token::Kind::Other;
  // 0768: Python 3 refuses leading zeros in a decimal int (00 and 0_0 are fine; 0768.0 is a float).
  if (t.kind == Token::Kind::Number && !is_float && t.text.size() > 1 && t.text[0] == '0' && t.text.find_first_not_of("0_") != std::string::npos) {
    std::string digits = t.text.substr(t.text.find_first_not_of("0_"));
    diags.push_back(syntax("leading zeros in the int " + t.text + " at column " + std::to_string(start + 1) + ": Python refuses them", "Write " + digits + "."));
    diags.back().pytorch = "SyntaxError: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers";
    return std::nullopt;
  }
  return t;
}

/// A quoted string (on one line); none after a syntax error in `diags`.
std::optional<Token> read_string(const std::string& s, size_t& i, std::vector<Diagnostic>& diags) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t start = i++;
  while (i < s.size() && static_cast<unsigned char>(s[i]) != c && s[i] != '\n') ++i;
  if (i >= s.size() || s[i] != static_cast<char>(c)) {
    diags.push_back(syntax("a string starting at column " + std::to_string(start + 1) + " is never closed", "Close the quote, or remove it: slots take numbers and True/False."));
    return std::nullopt;
  }
  ++i;
  return Token{Token::Kind::String, s.substr(start + 1, i - start - 2), start + 1};
}

}  // namespace

std::vector<Token> tokenize(const std::string& s, std::vector<Diagnostic>& diags) {
  std::vector<Token> out;
  size_t i = 0;
  int depth = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isspace(c) || c == '\\') {
      ++i;
    } else if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (std::isalpha(c) || c == '_') {
      out.push_back(read_name(s, i));
    } else if (c == '0' && i + 2 < s.size() && std::strchr("bBoOxX", s[i + 1]) != nullptr && s[i + 1] != '\0' && std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(read_based_int(s, i));
    } else if (std::isdigit(c) || ((c == '.') && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      const std::optional<Token> t = read_decimal(s, i, diags);
      if (!t) return out;
      out.push_back(*t);
    } else if (c == '\'' || c == '"') {
      const std::optional<Token> t = read_string(s, i, diags);
      if (!t) return out;
      out.push_back(*t);
    } else if (c == '(') {
      if (++depth > kMaxNesting) {
        diags.push_back(syntax("more than " + std::to_string(kMaxNesting) + " nested parentheses at column " + std::to_string(i + 1),
                               "Python stops at 200 levels too; a constructor call needs one pair of parentheses."));
        diags.back().pytorch = "SyntaxError: too many nested parentheses";
        return out;
      }
      out.push_back({Token::Kind::LParen, "(", ++i});
    } else if (c == ')') {
      if (depth > 0) --depth;
      out.push_back({Token::Kind::RParen, ")", ++i});
    } else if (c == ',') {
      out.push_back({Token::Kind::Comma, ",", ++i});
    } else if (c == '=') {
      out.push_back({Token::Kind::Equals, "=", ++i});
    } else {
      // Operators, brackets, or a non-ASCII character (a lookalike letter or digit): one "other" token
      // per character (UTF-8 sequences kept whole).
      const size_t start = i++;
      while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
      out.push_back({Token::Kind::Other, s.substr(start, i - start), start + 1});
    }
  }
  out.push_back({Token::Kind::End, "", s.size() + 1});
  return out;
}

}  // namespace attention_lab::call_parser_detail
