// The text of core/include/attention_lab/typed_classes.hpp, written from the recipe list (class_specs()):
// one struct per class, its members the constructor's slots in the Python signature's order. Used by
// the generator (tools/typed/gen_typed_classes.cpp) and by the native test that the header is current.
#pragma once

#include <cctype>
#include <string>

#include "attention_lab/schema.hpp"

namespace attention_lab::tools {

/// The member type of a slot: required slots are the value type itself (a missing one does not
/// compile), slots with a default are Defaulted (left out: the recipe's default).
inline std::string typed_member_type(const SlotSpec& slot) {
  const char* base = slot.type == SlotType::Int           ? "Int"
                     : slot.type == SlotType::Float       ? "Float"
                     : slot.type == SlotType::Bool        ? "Bool"
                     : slot.type == SlotType::OptionalInt ? "OptionalInt"
                                                          : "Dtype";
  return slot.default_value ? "Defaulted<" + std::string(base) + ">" : base;
}

/// The struct's name: the class id with each character C++ does not take in a name as '_'
/// ("MultiHeadAttention@ch05/07_gpt_to_llama" -> "MultiHeadAttention_ch05_07_gpt_to_llama").
inline std::string typed_struct_name(const ClassSpec& spec) {
  std::string out = spec.name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return out;
}

/// `MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`.
inline std::string typed_signature(const ClassSpec& spec) {
  std::string out = spec.python_class() + "(";
  for (size_t i = 0; i < spec.slots.size(); ++i) {
    const SlotSpec& s = spec.slots[i];
    out += (i ? ", " : "") + s.name + (s.default_value ? "=" + s.default_value->python() : "");
  }
  return out + ")";
}

/// `text` as `///` lines of at most about 100 columns, each starting with `indent` (clang-format leaves
/// such lines as they are, so that the header stays what this function writes).
inline std::string doc_lines(const std::string& indent, const std::string& text) {
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    // a class id's '@' (Name@folder) would start a Doxygen command: written \@
    for (size_t at = word.find('@'); at != std::string::npos; at = word.find('@', at + 2)) word.insert(at, "\\");
    if (!line.empty() && indent.size() + 4 + line.size() + 1 + word.size() > 100) {
      out += indent + "/// " + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) out += indent + "/// " + line + "\n";
  return out;
}

inline std::string render_typed_classes() {
  std::string out =
      "// GENERATED from the recipe list (class_specs(), core/src/recipes.cpp) by tools/typed/gen_typed_classes.cpp:\n"
      "//   cmake --build --preset native && ./build/native/attention_lab_typed_classes core/include/attention_lab/typed_classes.hpp\n"
      "// Do not edit; the native suite fails when it is not what the recipes write. Include attention_lab/typed.hpp.\n"
      "// One struct per attention class, in the recipe list's order; its members are the constructor's slots\n"
      "// in the Python signature's order, so that aggregate initialisation reads as the Python call.\n"
      "#pragma once\n\n"
      "#include \"attention_lab/typed.hpp\"\n\n"
      "namespace attention_lab::typed {\n";
  for (const ClassSpec& spec : class_specs()) {
    out += "\n" + doc_lines("", typed_signature(spec) + ": " + (spec.python_class() != spec.name ? spec.name + ", " : "") + spec.source() + ".");
    out += doc_lines("", spec.doc);
    out += "struct " + typed_struct_name(spec) + " {\n";
    out += "  /// The class's name in the recipe list (validated_config looks it up).\n";
    out += "  static constexpr const char* class_name = \"" + spec.name + "\";\n";
    for (const SlotSpec& s : spec.slots) {
      out += doc_lines("  ", (s.default_value ? "default " + s.default_value->python() + ": " : std::string()) + s.doc);
      // `= {}` on a Defaulted member: left out, it is not a missing initializer (-Wmissing-field-initializers).
      out += "  " + typed_member_type(s) + " " + s.name + (s.default_value ? " = {}" : "") + ";\n";
    }
    out += "  /// The slots given, by name (a Defaulted one only when given): what validated_config checks.\n";
    out += "  SlotMap slots() const {\n";
    out += "    SlotMap m;\n";
    for (const SlotSpec& s : spec.slots) out += "    put(m, \"" + s.name + "\", " + s.name + ");\n";
    out += "    return m;\n";
    out += "  }\n";
    out += "};\n";
  }
  out += "\n}  // namespace attention_lab::typed\n";
  return out;
}

}  // namespace attention_lab::tools
