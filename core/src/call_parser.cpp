#include "attention_lab/call_parser.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "attention_lab/validator.hpp"

namespace attention_lab {

namespace {

struct Token {
  enum class Kind { Name, Number, String, LParen, RParen, Comma, Equals, Other, End } kind;
  std::string text;
  size_t column;  // 1-based character column of the token start
  bool is_float = false;
  int base = 10;  // 2, 8 or 16 for Python's 0b, 0o and 0x integers
};

Diagnostic syntax(std::string message, std::string hint) { return {Severity::Error, "syntax", {}, std::move(message), std::move(hint), "SyntaxError: invalid syntax"}; }

/// Python's tokenizer refuses more than 200 open brackets ("too many nested parentheses").
constexpr int kMaxNesting = 200;

/// Splits the call into tokens; stops at the first character that cannot start a token.
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
      const size_t start = i;
      // Bytes >= 0x80 continue a name, as Python accepts non-ASCII letters in identifiers: a Cyrillic
      // 'а' inside "SelfАttention_v1" then gives an unknown class, as Python's NameError does.
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '.' || static_cast<unsigned char>(s[i]) >= 0x80)) ++i;
      out.push_back({Token::Kind::Name, s.substr(start, i - start), start + 1});
    } else if (c == '0' && i + 2 < s.size() && std::strchr("bBoOxX", s[i + 1]) != nullptr && s[i + 1] != '\0' && std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      // Python's 0b11, 0o17, 0x1F (underscores between digits allowed): ints like any other.
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
      out.push_back(t);
    } else if (std::isdigit(c) || ((c == '.') && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
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
        return out;
      }
      out.push_back(t);
    } else if (c == '\'' || c == '"') {
      const size_t start = i++;
      while (i < s.size() && static_cast<unsigned char>(s[i]) != c && s[i] != '\n') ++i;
      if (i >= s.size() || s[i] != static_cast<char>(c)) {
        diags.push_back(
            syntax("a string starting at column " + std::to_string(start + 1) + " is never closed", "Close the quote, or remove it: slots take numbers and True/False."));
        return out;
      }
      ++i;
      out.push_back({Token::Kind::String, s.substr(start + 1, i - start - 2), start + 1});
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

struct Arg {
  std::string keyword;  // "" for positional
  SlotValue value;
  std::string text;
  size_t column;
};

/// Reads one argument value: a literal number (with sign), True/False/None, a string, or an
/// expression (kept as text, reported by the validator as not_a_literal).
SlotValue read_value(const std::vector<Token>& toks, size_t& i, std::string& text) {
  const size_t start = i;
  int depth = 0;
  // Collect tokens up to the next top-level ',' or ')'.
  while (toks[i].kind != Token::Kind::End) {
    if (depth == 0 && (toks[i].kind == Token::Kind::Comma || toks[i].kind == Token::Kind::RParen)) break;
    if (toks[i].kind == Token::Kind::LParen) ++depth;
    if (toks[i].kind == Token::Kind::RParen) --depth;
    ++i;
  }
  text.clear();
  for (size_t k = start; k < i; ++k)
    text += (k > start && toks[k].kind != Token::Kind::RParen && toks[k - 1].kind != Token::Kind::LParen && toks[k - 1].text != "-" && toks[k - 1].text != "+" &&
                     !(toks[k].text == "*" && toks[k - 1].text == "*")
                 ? " "
                 : "") +
            toks[k].text;
  const size_t n = i - start;
  if (n == 0) return SlotValue::none();
  // Signs and redundant parentheses around a literal, as Python evaluates them: -(3) is -3, ((0.1)) is 0.1.
  size_t k = start, end = i;
  double sign = 1.0;
  std::string sign_text;
  const auto closes_at_end = [&](size_t open) {
    int d = 0;
    for (size_t m = open; m < end; ++m) {
      if (toks[m].kind == Token::Kind::LParen) ++d;
      if (toks[m].kind == Token::Kind::RParen && --d == 0) return m + 1 == end;
    }
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    while (k < end && toks[k].kind == Token::Kind::Other && (toks[k].text == "-" || toks[k].text == "+")) {
      if (toks[k].text == "-") sign = -sign;
      sign_text += toks[k].text;
      ++k;
      changed = true;
    }
    if (end - k >= 3 && toks[k].kind == Token::Kind::LParen && toks[end - 1].kind == Token::Kind::RParen && closes_at_end(k)) {
      ++k;
      --end;
      changed = true;
    }
  }
  if (k + 1 == end && toks[k].kind == Token::Kind::Number) {
    std::string digits;
    for (char ch : toks[k].text)
      if (ch != '_') digits += ch;
    double v = 0;
    if (toks[k].base == 10) {
      v = sign * std::strtod(digits.c_str(), nullptr);
    } else {
      for (size_t m = 2; m < digits.size(); ++m)
        v = v * toks[k].base + (std::isdigit(static_cast<unsigned char>(digits[m])) ? digits[m] - '0' : std::tolower(static_cast<unsigned char>(digits[m])) - 'a' + 10);
      v *= sign;
    }
    return toks[k].is_float ? SlotValue::floating(v, text) : SlotValue::integer(v, text);
  }
  if (k + 1 == end && toks[k].kind == Token::Kind::Name && sign_text.empty()) {
    const std::string& w = toks[k].text;
    if (w == "True") return SlotValue::boolean_value(true);
    if (w == "False") return SlotValue::boolean_value(false);
    if (w == "None") return SlotValue::none();
    if (w == "true" || w == "false") return SlotValue::expression(w);
  }
  if (k + 1 == end && toks[k].kind == Token::Kind::Name && (toks[k].text == "inf" || toks[k].text == "nan")) return SlotValue::expression(text);
  if (k + 1 == end && sign_text.empty() && toks[k].kind == Token::Kind::String) return SlotValue::string(toks[k].text);
  return SlotValue::expression(text);
}

std::string strip_prefix(const std::string& name) {
  for (const char* prefix : {"torch.nn.", "nn.", "attention_lab.", "previous_chapters.", "ch03."}) {
    const std::string p = prefix;
    if (name.rfind(p, 0) == 0) return name.substr(p.size());
  }
  return name;
}

}  // namespace

ParsedCall parse_call(const std::string& text, size_t max_length) {
  ParsedCall call;
  auto& diags = call.diagnostics;
  if (text.size() > max_length) {
    diags.push_back({Severity::Error,
                     "too_long",
                     {},
                     "the call is " + std::to_string(text.size()) + " characters long",
                     "Paste just the constructor call, e.g. MultiHeadAttention(768, 768, 1024, 0.0, 12).",
                     ""});
    return call;
  }
  const std::vector<Token> toks = tokenize(text, diags);
  if (!diags.empty()) return call;
  size_t i = 0;
  if (toks[i].kind == Token::Kind::End) {
    diags.push_back(syntax("the call is empty", "Paste a call such as MultiHeadAttention(768, 768, 1024, 0.0, 12)."));
    diags.back().code = "empty";
    diags.back().pytorch = "";
    return call;
  }
  // An optional `name =` in front: `mha = MultiHeadAttention(...)`.
  if (toks[i].kind == Token::Kind::Name && toks[i + 1].kind == Token::Kind::Equals && toks[i + 2].kind == Token::Kind::Name) i += 2;
  if (toks[i].kind != Token::Kind::Name) {
    diags.push_back(
        syntax("expected a class name at column " + std::to_string(toks[i].column) + ", found '" + toks[i].text + "'", "Start with the class, e.g. MultiHeadAttention(...)."));
    return call;
  }
  call.class_name = strip_prefix(toks[i].text);
  ++i;
  if (toks[i].kind != Token::Kind::LParen) {
    diags.push_back(syntax("expected '(' after " + call.class_name, "Write the arguments in parentheses: " + call.class_name + "(d_in, d_out, ...)."));
    return call;
  }
  ++i;
  std::vector<Arg> args;
  bool closed = false;
  bool seen_keyword = false;
  while (toks[i].kind != Token::Kind::End) {
    if (toks[i].kind == Token::Kind::RParen) {
      closed = true;
      ++i;
      break;
    }
    Arg arg;
    arg.column = toks[i].column;
    if (toks[i].kind == Token::Kind::Name && toks[i + 1].kind == Token::Kind::Equals) {
      arg.keyword = toks[i].text;
      i += 2;
      seen_keyword = true;
    } else if (seen_keyword) {
      diags.push_back({Severity::Error,
                       "positional_after_keyword",
                       {},
                       "a positional value follows a keyword argument at column " + std::to_string(arg.column),
                       "Put positional values first, or name this one too.",
                       "SyntaxError: positional argument follows keyword argument"});
    }
    arg.value = read_value(toks, i, arg.text);
    if (arg.text.empty()) {
      diags.push_back(syntax("an empty argument at column " + std::to_string(arg.column), "Remove the extra comma or fill in the value."));
    } else {
      args.push_back(arg);
    }
    if (toks[i].kind == Token::Kind::Comma) ++i;
  }
  if (!closed) {
    diags.push_back(syntax("the '(' after " + call.class_name + " is never closed", "Add ')' at the end of the call."));
  } else if (toks[i].kind != Token::Kind::End) {
    diags.push_back(syntax("unexpected text after the call at column " + std::to_string(toks[i].column) + ": '" + toks[i].text + "'",
                           "Paste one constructor call; remove what follows the closing parenthesis."));
  }

  const ClassSpec* spec = find_class(call.class_name);
  if (spec == nullptr) {
    for (const auto& d : check_config(call.class_name, {})) diags.push_back(d);
    return call;
  }

  // Bind arguments to slots as Python does: positionals left to right, then keywords.
  std::vector<const Arg*> bound(spec->slots.size(), nullptr);
  std::vector<std::string> bound_source(spec->slots.size());
  size_t positional = 0;
  std::vector<Arg> unknown;
  for (const Arg& a : args) {
    if (a.keyword.empty()) {
      if (positional < spec->slots.size()) {
        bound[positional] = &a;
        bound_source[positional] = "positional";
      } else {
        diags.push_back({Severity::Error,
                         "extra_positional",
                         {},
                         call.class_name + " takes " + std::to_string(spec->slots.size()) + " slots but value " + std::to_string(positional + 1) + " (" + a.text + ") has no slot",
                         call.class_name + "(" +
                             [&] {
                               std::string s;
                               for (size_t k = 0; k < spec->slots.size(); ++k) s += (k ? ", " : "") + spec->slots[k].name;
                               return s;
                             }() +
                             ")",
                         "TypeError: __init__() takes from " +
                             std::to_string(1 + std::count_if(spec->slots.begin(), spec->slots.end(), [](const SlotSpec& s) { return !s.default_value; })) + " to " +
                             std::to_string(spec->slots.size() + 1) + " positional arguments but " + std::to_string(args.size() + 1) + " were given"});
      }
      ++positional;
      continue;
    }
    size_t k = 0;
    while (k < spec->slots.size() && spec->slots[k].name != a.keyword) ++k;
    if (k == spec->slots.size()) {
      unknown.push_back(a);
      continue;
    }
    if (bound[k] != nullptr) {
      const bool by_position = bound_source[k] == "positional";
      diags.push_back({Severity::Error,
                       "duplicate_slot",
                       {a.keyword},
                       a.keyword + " is given twice: " + bound[k]->text + (by_position ? " (by position)" : "") + " and " + a.text,
                       "Keep one of them; the first, " + bound[k]->text + ", is used here.",
                       by_position ? "TypeError: __init__() got multiple values for argument '" + a.keyword + "'" : "SyntaxError: keyword argument repeated: " + a.keyword});
      continue;
    }
    bound[k] = &a;
    bound_source[k] = "keyword";
  }

  for (size_t k = 0; k < spec->slots.size(); ++k) {
    const SlotSpec& slot = spec->slots[k];
    ParsedSlot ps;
    ps.name = slot.name;
    ps.position = slot.position;
    if (bound[k] != nullptr) {
      ps.value = bound[k]->value;
      ps.source = bound_source[k];
      ps.text = bound[k]->text;
      call.config[slot.name] = ps.value;
    } else if (slot.default_value) {
      ps.value = *slot.default_value;
      ps.source = "default";
    } else {
      continue;  // missing: reported by check_config
    }
    call.slots.push_back(ps);
  }
  for (const Arg& a : unknown) {
    call.slots.push_back({a.keyword, 0, a.value, "keyword", a.text});
    call.config[a.keyword] = a.value;
  }
  for (const auto& d : check_config(call.class_name, call.config)) diags.push_back(d);
  return call;
}

SlotValue parse_literal(const std::string& text) {
  if (text.size() > 1000) return SlotValue::expression(text.substr(0, 40) + "...");
  std::vector<Diagnostic> diags;
  const std::vector<Token> toks = tokenize(text, diags);
  if (!diags.empty()) return SlotValue::expression(text);
  size_t i = 0;
  std::string source;
  SlotValue v = read_value(toks, i, source);
  if (toks[i].kind != Token::Kind::End) return SlotValue::expression(text);  // e.g. "3)" or "1, 2"
  return v;
}

}  // namespace attention_lab
