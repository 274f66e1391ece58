#pragma once
// LoopObserver: what a service watches an agent loop through (metrics, tracing). The
// loop reports every model call and every tool call of its runs, after it ends.
//
// Thread safety: the loop calls an observer from runtime threads, for many runs at
// once: an observer shared by loops must allow that. Its functions should be quick and
// must not block (they run on an io thread). Cancellation: a call cut short by
// cancellation is reported with outcome "cancelled". Errors: what an observer throws is
// logged (channel rath.session.loop) and otherwise ignored; the run goes on.
#include <chrono>
#include <cstdint>
#include <string_view>

namespace rath {

struct ModelCallRecord {
    std::string_view provider_kind;  // "openai", "anthropic", ... (LoopOptions::provider)
    std::string_view model;          // the model the request named ("" when unset)
    std::chrono::steady_clock::duration duration{};  // the whole call, retries included
    std::string_view outcome;        // "ok", "error" or "cancelled"
    std::int64_t prompt_tokens = 0;  // from the answer's usage (0 without usage)
    std::int64_t completion_tokens = 0;
};

struct ToolCallRecord {
    std::string_view name;
    std::chrono::steady_clock::duration duration{};
    // "ok" (a result row; it may carry the tool's own failure body), "error" (the
    // dispatch threw: a tool_execution_exception row) or "cancelled".
    std::string_view outcome;
};

class LoopObserver {
public:
    virtual ~LoopObserver() = default;
    virtual void on_model_call(const ModelCallRecord&) {}
    virtual void on_tool_call(const ToolCallRecord&) {}
};

}  // namespace rath
