#include "attention_lab/call_parser.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "attention_lab/validator.hpp"
#include "call_tokens.hpp"

namespace attention_lab {

using namespace call_parser_detail;

namespace {

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

/// The callee: an optional `name =` in front (`mha = MultiHeadAttention(...)`), the class name and its
/// '('. Sets call.class_name and moves `i` past the '('; false after a syntax diagnostic.
bool read_callee(const std::vector<Token>& toks, size_t& i, ParsedCall& call) {
  auto& diags = call.diagnostics;
  if (toks[i].kind == Token::Kind::End) {
    diags.push_back(syntax("the call is empty", "Paste a call such as MultiHeadAttention(768, 768, 1024, 0.0, 12)."));
    diags.back().code = "empty";
    diags.back().pytorch = "";
    return false;
  }
  // An optional `name =` in front: `mha = MultiHeadAttention(...)`.
  if (toks[i].kind == Token::Kind::Name && toks[i + 1].kind == Token::Kind::Equals && toks[i + 2].kind == Token::Kind::Name) i += 2;
  if (toks[i].kind != Token::Kind::Name) {
    diags.push_back(
        syntax("expected a class name at column " + std::to_string(toks[i].column) + ", found '" + toks[i].text + "'", "Start with the class, e.g. MultiHeadAttention(...)."));
    return false;
  }
  // A class id with its book folder, Name@chNN/folder (classes that share a Python name): the name,
  // '@' and what follows it up to '(', written without spaces.
  std::string name = toks[i].text;
  for (size_t at = toks[i].column + name.size(); toks[i + 1].kind != Token::Kind::LParen && toks[i + 1].kind != Token::Kind::End && toks[i + 1].column == at &&
                                                 (name.find('@') != std::string::npos || toks[i + 1].text == "@");
       at += toks[i + 1].text.size(), ++i)
    name += toks[i + 1].text;
  call.class_name = strip_prefix(name);
  ++i;
  if (toks[i].kind != Token::Kind::LParen) {
    diags.push_back(syntax("expected '(' after " + call.class_name, "Write the arguments in parentheses: " + call.class_name + "(d_in, d_out, ...)."));
    return false;
  }
  ++i;
  return true;
}

/// The arguments up to the closing ')': keyword or positional, each value as read_value reads it.
std::vector<Arg> read_args(const std::vector<Token>& toks, size_t& i, const std::string& class_name, std::vector<Diagnostic>& diags) {
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
    diags.push_back(syntax("the '(' after " + class_name + " is never closed", "Add ')' at the end of the call."));
  } else if (toks[i].kind != Token::Kind::End) {
    diags.push_back(syntax("unexpected text after the call at column " + std::to_string(toks[i].column) + ": '" + toks[i].text + "'",
                           "Paste one constructor call; remove what follows the closing parenthesis."));
  }
  return args;
}

/// extra_positional: value `positional` (0-based) of the call has no slot left.
Diagnostic extra_positional(const ClassSpec& spec, const std::string& class_name, const Arg& a, size_t positional, size_t num_args) {
  return {Severity::Error,
          "extra_positional",
          {},
          class_name + " takes " + std::to_string(spec.slots.size()) + " slots but value " + std::to_string(positional + 1) + " (" + a.text + ") has no slot",
          class_name + "(" +
              [&] {
                std::string s;
                for (size_t k = 0; k < spec.slots.size(); ++k) s += (k ? ", " : "") + spec.slots[k].name;
                return s;
              }() +
              ")",
          "TypeError: __init__() takes from " + std::to_string(1 + std::count_if(spec.slots.begin(), spec.slots.end(), [](const SlotSpec& s) { return !s.default_value; })) +
              " to " + std::to_string(spec.slots.size() + 1) + " positional arguments but " + std::to_string(num_args + 1) + " were given"};
}

/// Each slot's argument once bound (or none), how it was given, and the keywords no slot has.
struct Binding {
  std::vector<const Arg*> bound;
  std::vector<std::string> bound_source;
  std::vector<Arg> unknown;
};

/// Binds arguments to slots as Python does: positionals left to right, then keywords.
Binding bind_args(const ClassSpec& spec, const std::vector<Arg>& args, const std::string& class_name, std::vector<Diagnostic>& diags) {
  Binding b{std::vector<const Arg*>(spec.slots.size(), nullptr), std::vector<std::string>(spec.slots.size()), {}};
  size_t positional = 0;
  for (const Arg& a : args) {
    if (a.keyword.empty()) {
      if (positional < spec.slots.size()) {
        b.bound[positional] = &a;
        b.bound_source[positional] = "positional";
      } else {
        diags.push_back(extra_positional(spec, class_name, a, positional, args.size()));
      }
      ++positional;
      continue;
    }
    size_t k = 0;
    while (k < spec.slots.size() && spec.slots[k].name != a.keyword) ++k;
    if (k == spec.slots.size()) {
      b.unknown.push_back(a);
      continue;
    }
    if (b.bound[k] != nullptr) {
      const bool by_position = b.bound_source[k] == "positional";
      diags.push_back({Severity::Error,
                       "duplicate_slot",
                       {a.keyword},
                       a.keyword + " is given twice: " + b.bound[k]->text + (by_position ? " (by position)" : "") + " and " + a.text,
                       "Keep one of them; the first, " + b.bound[k]->text + ", is used here.",
                       by_position ? "TypeError: __init__() got multiple values for argument '" + a.keyword + "'" : "SyntaxError: keyword argument repeated: " + a.keyword});
      continue;
    }
    b.bound[k] = &a;
    b.bound_source[k] = "keyword";
  }
  return b;
}

/// The call's slots left to right (given or default; a missing one is check_config's to report), then
/// the unknown keywords; the given values into call.config.
void fill_slots(const ClassSpec& spec, const Binding& b, ParsedCall& call) {
  for (size_t k = 0; k < spec.slots.size(); ++k) {
    const SlotSpec& slot = spec.slots[k];
    ParsedSlot ps;
    ps.name = slot.name;
    ps.position = slot.position;
    if (b.bound[k] != nullptr) {
      ps.value = b.bound[k]->value;
      ps.source = b.bound_source[k];
      ps.text = b.bound[k]->text;
      call.config[slot.name] = ps.value;
    } else if (slot.default_value) {
      ps.value = *slot.default_value;
      ps.source = "default";
    } else {
      continue;  // missing: reported by check_config
    }
    call.slots.push_back(ps);
  }
  for (const Arg& a : b.unknown) {
    call.slots.push_back({a.keyword, 0, a.value, "keyword", a.text});
    call.config[a.keyword] = a.value;
  }
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
  if (!read_callee(toks, i, call)) return call;
  const std::vector<Arg> args = read_args(toks, i, call.class_name, diags);

  const ClassSpec* spec = find_class(call.class_name);
  if (spec == nullptr) {
    for (const auto& d : check_config(call.class_name, {})) diags.push_back(d);
    return call;
  }
  fill_slots(*spec, bind_args(*spec, args, call.class_name, diags), call);
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
