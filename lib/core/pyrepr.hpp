#pragma once
// Python-compatible string rendering used in messages and repr output that the spec
// pins byte for byte (session.md §1.9).
#include <string>
#include <string_view>
#include <vector>

namespace rath::detail {

// Python's repr() of a str: quote choice, escapes, printable non-ASCII kept literal.
std::string pyrepr(std::string_view utf8);
// Python's repr() of a list of str: ['a', 'b'].
std::string pyrepr_list(const std::vector<std::string>& items);
// session.md §1.9 preview(): newlines folded to the two characters \n, long text
// cut to "<head> ... <tail>" by code points.
std::string preview(std::string_view utf8, std::size_t max_chars);

}  // namespace rath::detail
