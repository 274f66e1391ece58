#pragma once
// What a tool reports while it runs (progress, log lines), and how it reports it: through
// the Session the dispatcher gave the call. An agent run delivers each event to its
// LoopOptions::on_event as a StreamDelta whose tool_event is set, tagged with the call's
// tool name and the model's call id, between the model's streamed deltas (a run's tools
// run while no model call streams).
//
// Delivery: only while the call is in flight. A report made through a session that was
// not given to a running loop's tool call, in a run without on_event, or after the call
// returned (a copy kept by the tool) delivers nothing and returns false; so a tool
// reports unconditionally and pays nothing when nobody listens (tool_events_wanted
// tells it beforehand, for reports that cost something to build).
//
// Thread safety: a tool may report from any thread. The events of one run reach
// on_event one at a time (calls that run in parallel take turns), in the order they
// were reported; on_event runs on the reporting thread and must not report itself.
// What on_event throws is logged and dropped. Never throws but std::bad_alloc.
#include <optional>
#include <string>

namespace rath {
class Session;
}

namespace rath::tool {

struct ToolEvent {
    enum class Kind { progress, log };
    Kind kind = Kind::progress;
    std::string tool;     // the called tool's name (set by the report)
    std::string call_id;  // the model's tool_calls[].id (set by the report; "" when it gave none)
    // progress: how far, out of `total` when known (MCP's notifications/progress).
    double progress = 0;
    std::optional<double> total{};
    // log: an RFC 5424 level name as MCP's logging uses (debug, info, notice, warning,
    // error, critical, alert, emergency) and the logger's name, when given.
    std::string level{};
    std::optional<std::string> logger{};
    std::string message{};  // progress: its message ("" for none); log: the text
};

// Sends `event` (its tool and call_id are overwritten with the call's) to the run's
// event stream; true when it was delivered.
bool report_tool_event(const Session& session, ToolEvent event);
bool report_progress(const Session& session, double progress, std::optional<double> total = std::nullopt,
                     std::string message = {});
bool report_log(const Session& session, std::string level, std::string message,
                std::optional<std::string> logger = std::nullopt);
// Whether a report through `session` would be delivered now.
[[nodiscard]] bool tool_events_wanted(const Session& session) noexcept;

}  // namespace rath::tool
