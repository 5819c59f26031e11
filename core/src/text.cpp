#include "attention_lab/text.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace attention_lab {

std::string format_g(double v, int precision) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", precision, v);
  return buffer;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0) return "0";                                                 // not "-0"
  if (v == std::floor(v) && std::fabs(v) < 1e16) return format_g(v, 17);  // every digit of a whole number, no exponent
  // The shortest %g that reads back exactly: %g's exponent form ("1e-05", "1e+16") is Python's.
  for (int precision = 1; precision < 17; ++precision) {
    const std::string s = format_g(v, precision);
    if (std::strtod(s.c_str(), nullptr) == v) return s;
  }
  return format_g(v, 17);
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
