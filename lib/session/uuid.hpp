#pragma once
// Random v4 UUIDs rendered as lowercase 8-4-4-4-12 hex, and validation of ids read
// from files.
#include <optional>
#include <string>
#include <string_view>

namespace rath::detail {

std::string new_uuid_v4();
// The canonical lowercase form of a UUID string (hyphenated, or 32 hex digits, or
// wrapped in braces / "urn:uuid:"), or nullopt when it is not one.
std::optional<std::string> canonical_uuid(std::string_view s);

}  // namespace rath::detail
