#pragma once
// Credential and setting resolution: explicit > environment > config file.
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rath::llm {

// The environment variable trimmed; blank or absent gives nullopt. Only variables
// declared in rath/config/env.hpp are read: another name throws config::ConfigError.
[[nodiscard]] std::optional<std::string> env_value(const char* name);

// First candidate that is set and non-blank, trimmed; "" when none is. The candidates
// are views: only the chosen one is copied.
[[nodiscard]] std::string resolve_credential(std::initializer_list<std::optional<std::string_view>> candidates);

// `explicit_value` when set and non-blank, else the first set variable of `env_names`
// (config::provider_env gives a provider kind's), trimmed; "" when none is.
[[nodiscard]] std::string resolve_setting(const std::optional<std::string>& explicit_value,
                                          std::span<const std::string_view> env_names);

}  // namespace rath::llm
