#pragma once
// W3C Trace Context (https://www.w3.org/TR/trace-context/) for runs. A run's trace
// context is its output session's "traceparent" lineage extra, which a service sets
// through LoopOptions::lineage_extras when it starts the run: recorded with the run
// (the persisted header has it), and read by what the run calls on its behalf. MCP
// tools send it with every tools/call of that session (params._meta.traceparent; over
// Streamable HTTP also the traceparent header, rath/mcp/tools.hpp). Model requests
// carry it when the caller puts it in the provider's extra_headers, as
// examples/13_agent_service does.
//
// Thread safety: free functions over their arguments; session_traceparent takes the
// session's lock as every Session reader does. Nothing here throws except
// std::bad_alloc.
#include <optional>
#include <string>
#include <string_view>

namespace rath {

class Session;

// The lineage extra that holds a run's trace context.
inline constexpr std::string_view traceparent_extra = "traceparent";

// "VV-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", lowercase, version not ff,
// neither id all zeros: what may be forwarded as a traceparent field (anything else is
// ignored, as the specification says a receiver does; it also keeps a header value free
// of control characters).
[[nodiscard]] bool is_valid_traceparent(std::string_view value) noexcept;

// A new span in `parent`'s trace (its trace id and flags, a fresh random parent id), or
// in a new trace with flags 01 (sampled) when `parent` is nullopt or not valid.
[[nodiscard]] std::string child_traceparent(std::optional<std::string_view> parent);

// The session's trace context: its last "traceparent" lineage extra when that is a
// string and valid; nullopt otherwise.
[[nodiscard]] std::optional<std::string> session_traceparent(const Session& session);

}  // namespace rath
