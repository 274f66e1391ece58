#pragma once
// Memo extraction on commit (memory_flow.md §2.12 steps 6-9): the exact prompt, the
// transcript rendering and the lenient parse of the model's JSON array.
//
// Thread safety: pure functions. Nothing throws except std::bad_alloc.
#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::memory::detail {

[[nodiscard]] std::string_view extraction_system_prompt() noexcept;
// "Conversation:\n[<role>] <content>\n...\n\nReturn the JSON array now."
[[nodiscard]] std::string extraction_user_prompt(const std::vector<boost::json::object>& messages);
// The (public uri, content) pairs of the answer's array items that are objects with a
// string memory-prefixed "uri" and a string "content"; nothing when it does not parse.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> parse_extracted(std::string_view text);

}  // namespace rath::memory::detail
