#include "attention_lab/text.hpp"

#include <cstdio>

namespace attention_lab {

std::string format_g(double v, int precision) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", precision, v);
  return buffer;
}

std::string with_commas(double v) {
  char buffer[400];  // %.0f of the largest double has 309 digits
  std::snprintf(buffer, sizeof buffer, "%.0f", v);
  std::string s = buffer;
  const size_t start = (s[0] == '-') ? 1 : 0;
  for (int i = static_cast<int>(s.size()) - 3; i > static_cast<int>(start); i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace attention_lab
