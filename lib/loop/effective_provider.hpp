#pragma once
// Private: which provider an operator (the loop, compress, select_session) calls
// (session.md §9): its own when that has any field set, else the user session's
// (Session::to(Provider)).
#include <rath/llm/provider.hpp>
#include <rath/session.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rath::detail {

// nullopt: `given` stands. The session's provider when `given` is unset and the session
// has one. Neither, and no executor or client of the caller's own (which carry their own
// endpoint) → std::invalid_argument, thrown before the operator does anything.
inline std::optional<llm::Provider> session_provider_for(const llm::Provider& given, const Session& user,
                                                         bool has_own_model_path, std::string_view op) {
    if (!llm::provider_is_unset(given)) return std::nullopt;
    if (auto bound = user.provider()) return *bound;
    if (has_own_model_path) return std::nullopt;
    throw std::invalid_argument("no provider for " + std::string(op) +
                                ": pass agent_provider=Provider(...) or bind one on the session via "
                                "session.to(Provider(...))");
}

}  // namespace rath::detail
