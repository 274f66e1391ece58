#pragma once
// The environment of commands the host backends start (backend_tools.md §9.2
// "Environment"). Pure functions; thread-safe; nothing throws except std::bad_alloc.
#include <rath/backend/host_backend.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::backend::detail {

// True when a variable looks like it carries a credential: its name, compared without
// case, contains KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH; or its name
// ends in URL and its value is a URL with userinfo ("scheme://user[:pass]@host...").
[[nodiscard]] bool is_credential_variable(std::string_view name, std::string_view value);

// The child's complete environment ("K=V", sorted by name) from `parent` ("K=V"
// entries, malformed ones skipped): filtered by options.env_mode (scrub_credentials:
// drop is_credential_variable and names matching options.credential_patterns unless
// listed in env_allow; allowlist: only env_allow), then `extra` on top (what the caller
// asked for explicitly always wins).
[[nodiscard]] std::vector<std::string> child_environment(const std::vector<std::string_view>& parent,
                                                         const HostOptions& options,
                                                         const std::optional<std::map<std::string, std::string>>& extra);

}  // namespace rath::backend::detail
