#pragma once
// Private: where the reports of one tool call of an agent run go (rath/tool/tool_event.hpp).
// The loop makes one ToolEventSink per run that has an on_event, one ToolCallScope per
// call it dispatches, and closes the scope when the call settled: a report made later
// (through a copy of the session the tool kept) is dropped, so tool events never
// interleave with the model's streamed deltas.
#include <rath/llm/stream_delta.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace rath::detail {

struct ToolEventSink {
    explicit ToolEventSink(std::shared_ptr<const std::function<void(const llm::StreamDelta&)>> cb)
        : on_event(std::move(cb)) {}
    // Serializes the run's reports (parallel calls take turns) and each against its
    // scope's close.
    std::mutex mu;
    const std::shared_ptr<const std::function<void(const llm::StreamDelta&)>> on_event;
};

struct ToolCallScope {
    ToolCallScope(std::shared_ptr<ToolEventSink> s, std::string t, std::string id)
        : sink(std::move(s)), tool(std::move(t)), call_id(std::move(id)) {}
    const std::shared_ptr<ToolEventSink> sink;
    const std::string tool;
    const std::string call_id;
    bool open = true;  // guarded by sink->mu

    // Once this returns, no report of the call reaches on_event any more.
    void close() {
        std::lock_guard lock(sink->mu);
        open = false;
    }
};

}  // namespace rath::detail
