// Numbers as text, with printf rather than iostreams (which would add ~100 KB to the WebAssembly).
#pragma once

#include <string>

namespace attention_lab {

/// `v` with `precision` significant digits, as printf's %.*g (and std::ostream with precision(p)).
std::string format_g(double v, int precision);

/// `v` rounded to a whole number with thousands separators: 160,000,400,000.
std::string with_commas(double v);

}  // namespace attention_lab
