#include "tools/rath-fake-llm/src/json_out.hpp"

#include "lib/text/json_string.hpp"

namespace rath::fake_llm::detail {

void append_json_string(std::string& out, std::string_view s) {
    rath::detail::append_json_string(out, s, {.replace_invalid_utf8 = true});
}

}  // namespace rath::fake_llm::detail
