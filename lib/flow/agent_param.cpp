#include <rath/flow/agent_param.hpp>
#include <rath/llm/error.hpp>
#include <rath/memory/backend.hpp>
#include <rath/memory/store.hpp>

#include "lib/text/pyrepr.hpp"

#include <stdexcept>

namespace rath::flow {

std::string AgentParam::repr() const {
    std::string session = agent_session.repr();
    std::string indented;
    for (char c : session) {
        indented += c;
        if (c == '\n') indented += "  ";
    }
    std::string out = "AgentParam(\n  (agent_session): " + indented + "\n  (provider): " + provider.to_string();
    if (memory)
        out += "\n  (memory): MemoryStore(backend=" + detail::pyrepr(memory->backend().name()) +
               ", handle=" + detail::pyrepr(memory->handle()) + ")";
    return out + "\n)";
}

AgentParam& AgentParam::to(std::optional<llm::Provider> target, std::optional<std::string> provider_name,
                           std::optional<std::string> model) {
    if (target && provider_name) throw std::invalid_argument("pass either a Provider positionally or provider=, not both");
    if (!target && !provider_name && !model)
        throw std::invalid_argument("nothing to bind: pass a Provider, provider=<name>, or model=");
    if (target) {
        llm::Provider p = std::move(*target);
        if (!p.model && model) p.model = model;
        provider = std::move(p);
    } else if (provider_name) {
        llm::Provider overrides;
        overrides.model = model;
        provider = llm::Provider::from_config(std::string_view(*provider_name), nullptr, overrides);
    } else {
        provider.model = model;
    }
    return *this;
}

}  // namespace rath::flow
