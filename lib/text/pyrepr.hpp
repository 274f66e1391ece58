#pragma once
// Python's repr() of the scalars rath prints in messages and repr output that the spec
// pins byte for byte (session.md §1.9): str, list of str, float; and preview().
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rath::detail {

// Python's repr() of a str: quote choice, escapes, printable non-ASCII kept literal.
// Invalid UTF-8 bytes show as \udcXX, as a str decoded with surrogateescape would.
std::string pyrepr(std::string_view utf8);
// Python's repr() of a list of str: ['a', 'b'].
std::string pyrepr_list(const std::vector<std::string>& items);
// Python's repr() of a float: the shortest text that reads back the same, laid out as
// Python does ("1.0", "0.5", "1e-05", "1.5e+16", "nan", "inf", "-inf").
std::string pyfloat_repr(double d);
// session.md §1.9 preview(): newlines folded to the two characters \n, long text
// cut to "<head> ... <tail>" by code points.
std::string preview(std::string_view utf8, std::size_t max_chars);

}  // namespace rath::detail
