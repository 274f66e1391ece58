#pragma once
// The environment variables rath reads, declared in one table: what each is for, whether
// it holds a secret, its default, and which variables a provider kind falls back to
// when its entry leaves a field unset. The LLM clients resolve through this table and
// `rath config show | env` print it, so the two cannot disagree.
//
// Thread safety: everything here reads only constant tables and the process
// environment (getenv); safe from any thread while nothing calls setenv. Throws:
// declared() and env() throw ConfigError for a name the table does not declare, which
// is a programming error surfaced at once rather than a silently unread variable.
#include <rath/config/store.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rath::config {

enum class EnvKind {
    secret,   // a credential: masked wherever it is shown
    routing,  // where to send requests, which model, which directory
    flag,     // on for 1, true, yes, on (any case)
};
[[nodiscard]] std::string_view to_string(EnvKind k) noexcept;

struct EnvVar {
    std::string_view name;
    EnvKind kind;
    std::string_view used_for;       // one line for the reference table
    std::string_view default_value;  // "" when unset means "not used"
};

// Every declared variable, sorted by name.
[[nodiscard]] std::span<const EnvVar> declared_env() noexcept;
// The entry of `name`; ConfigError "'<X>' is not a declared OpenRath environment variable;
// declared: [...]" otherwise.
[[nodiscard]] const EnvVar& declared(std::string_view name);
// The declared variable's value trimmed; nullopt when unset or blank.
[[nodiscard]] std::optional<std::string> env(std::string_view name);
// A declared flag: true for 1/true/yes/on, case-insensitive.
[[nodiscard]] bool env_flag(std::string_view name);

enum class ProviderField { api_key, base_url, model };

// The variables a provider kind ("openai", "anthropic", "litellm", "atlascloud") reads
// for `field` when the Provider and its config entry leave it unset, first set wins.
// `azure`: the OpenAI client talks to an Azure endpoint (its key order differs). An
// unknown kind has none.
[[nodiscard]] std::span<const std::string_view> provider_env(std::string_view kind, ProviderField field,
                                                             bool azure = false) noexcept;

}  // namespace rath::config
