#include <rath/tool/tool_event.hpp>

#include <rath/log.hpp>
#include <rath/session.hpp>

#include "lib/session/session_state.hpp"
#include "lib/tool/tool_call_scope.hpp"

#include <exception>

namespace rath::tool {

bool report_tool_event(const Session& session, ToolEvent event) {
    auto* scope = detail::SessionAccess::tool_call_scope(session);
    if (!scope) return false;
    event.tool = scope->tool;
    event.call_id = scope->call_id;
    llm::StreamDelta delta;
    delta.tool_event = std::move(event);
    std::lock_guard lock(scope->sink->mu);
    if (!scope->open) return false;
    try {
        (*scope->sink->on_event)(delta);
    } catch (const std::exception& e) {
        log(LogLevel::warning, "rath.session.loop", std::string("on_event threw on a tool event: ") + e.what());
    } catch (...) {
        log(LogLevel::warning, "rath.session.loop", "on_event threw on a tool event");
    }
    return true;
}

bool report_progress(const Session& session, double progress, std::optional<double> total, std::string message) {
    if (!tool_events_wanted(session)) return false;
    ToolEvent e;
    e.kind = ToolEvent::Kind::progress;
    e.progress = progress;
    e.total = total;
    e.message = std::move(message);
    return report_tool_event(session, std::move(e));
}

bool report_log(const Session& session, std::string level, std::string message, std::optional<std::string> logger) {
    if (!tool_events_wanted(session)) return false;
    ToolEvent e;
    e.kind = ToolEvent::Kind::log;
    e.level = std::move(level);
    e.logger = std::move(logger);
    e.message = std::move(message);
    return report_tool_event(session, std::move(e));
}

bool tool_events_wanted(const Session& session) noexcept {
    auto* scope = detail::SessionAccess::tool_call_scope(session);
    if (!scope) return false;
    std::lock_guard lock(scope->sink->mu);
    return scope->open;
}

}  // namespace rath::tool
