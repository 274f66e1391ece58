#pragma once
// Credential and setting resolution: explicit > environment > config file.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace rath::llm {

// The environment variable trimmed; blank or absent gives nullopt.
[[nodiscard]] std::optional<std::string> env_value(const char* name);

// First candidate that is set and non-blank, trimmed; "" when none is. The candidates
// are views: only the chosen one is copied.
[[nodiscard]] std::string resolve_credential(std::initializer_list<std::optional<std::string_view>> candidates);

}  // namespace rath::llm
