#pragma once
// Private: the output session of a two-input operator (the loop, compress), built on
// the caller's thread.
#include <rath/session.hpp>
#include <rath/session/lineage_recorder.hpp>

#include <optional>
#include <string>

namespace rath::detail {

// A session over `rows` placed like `user` (its sandbox backend and spec, and its live
// sandbox bound), with the operator's lineage (parents user and agent, `op`); `id`
// unset: a fresh one.
Session make_operator_output(const Session& user, const Session& agent, ChunkTable rows, std::string op,
                             LineageKind kind, LineageExtras extras = {}, std::optional<std::string> id = {});

// The registry entries of an operator's run: user, agent and out, with out active.
void register_operator_sessions(const Session& user, const Session& agent, const Session& out);

}  // namespace rath::detail
