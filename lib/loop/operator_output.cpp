#include "lib/loop/operator_output.hpp"

#include <rath/backend/backend.hpp>
#include <rath/session/registry.hpp>

#include <utility>

namespace rath::detail {

Session make_operator_output(const Session& user, const Session& agent, ChunkTable rows, std::string op,
                             LineageKind kind, LineageExtras extras, std::optional<std::string> id) {
    SessionOptions so;
    so.id = std::move(id);
    so.sandbox_backend = user.sandbox_backend();
    so.sandbox_spec = user.sandbox_spec();
    Session out(std::move(rows), std::move(so));
    if (auto sb = user.sandbox(); sb && !sb->closed()) out.bind_sandbox(sb);
    lineage::stamp_operator_output(out, user, agent, std::move(op), kind, std::move(extras));
    return out;
}

void register_operator_sessions(const Session& user, const Session& agent, const Session& out) {
    auto& registry = session_registry();
    registry.register_session(user);
    registry.register_session(agent);
    registry.register_session(out);
    registry.set_active(out);
}

}  // namespace rath::detail
