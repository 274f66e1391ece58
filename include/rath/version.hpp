#pragma once
#include <string_view>

namespace rath {

// The library version, "MAJOR.MINOR.PATCH".
[[nodiscard]] std::string_view version() noexcept;

}  // namespace rath
