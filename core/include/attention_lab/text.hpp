// Numbers as text, with printf rather than iostreams (which would add ~100 KB to the WebAssembly).
#pragma once

#include <string>

namespace attention_lab {

/// `v` with `precision` significant digits, as printf's %.*g (and std::ostream with precision(p)).
std::string format_g(double v, int precision);

/// `v` as a message shows a number a reader gave: a whole number as an int ("3", "-1"), any other with
/// the fewest digits that read back as the same double, as Python's repr and JavaScript's String
/// print it ("1.5", "0.1", "1e-40"; never "1.500000" or "0.000000"); "NaN", "Infinity", "-Infinity".
std::string format_number(double v);

/// `v` rounded to a whole number with thousands separators: 160,000,400,000.
std::string with_commas(double v);

}  // namespace attention_lab
