#pragma once
// AgentParam: the nn.Parameter analogue (memory_flow.md §4.2) — the agent's system
// session plus the provider it calls. Held by shared_ptr so a parent's to() and a
// compiled manifest see the same object.
#include <rath/llm/provider.hpp>
#include <rath/memory/fwd.hpp>
#include <rath/session.hpp>

#include <optional>
#include <string>

namespace rath::flow {

struct AgentParam {
    Session agent_session;
    llm::Provider provider;
    // The owning agent's memory store (null: none). Informational: the agent holds the
    // reference on it.
    memory::MemoryStorePtr memory{};

    // "AgentParam(\n  (agent_session): <repr>\n  (provider): <model>\n)", with a
    // "  (memory): MemoryStore(backend='local', handle='...')" line when memory is set.
    std::string repr() const;

    // Rebinds the provider (memory_flow.md §4.2 [UPSTREAM]): a full Provider is used
    // as is (its model filled from `model` only when unset); a config preset by name;
    // or only a new model on a copy of the current provider. Nothing given throws.
    AgentParam& to(std::optional<llm::Provider> target = std::nullopt,
                   std::optional<std::string> provider_name = std::nullopt,
                   std::optional<std::string> model = std::nullopt);
};

}  // namespace rath::flow
