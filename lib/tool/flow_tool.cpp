#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/session.hpp>
#include <rath/tool/flow_tool.hpp>

#include <cstdint>

namespace rath::tool {

FlowToolCall::FlowToolCall(std::string name, std::optional<std::string> description, boost::json::object parameters)
    : name_(std::move(name)), description_(std::move(description)), parameters_(std::move(parameters)) {}

FlowToolCall::~FlowToolCall() = default;

ResourceKey FlowToolCall::resource_key(const boost::json::object&) const {
    if (parallel_safe()) return {"safe", name_};
    return {"global"};
}

std::string FlowToolCall::lane_group() const {
    // "tool@0x" and the address in hex, without snprintf (this runs for every call).
    static constexpr char hex[] = "0123456789abcdef";
    char buf[32] = "tool@0x";
    std::size_t n = 7;
    auto v = reinterpret_cast<std::uintptr_t>(this);
    int shift = static_cast<int>(sizeof v * 8) - 4;
    while (shift > 0 && ((v >> shift) & 0xF) == 0) shift -= 4;
    for (; shift >= 0; shift -= 4) buf[n++] = hex[(v >> shift) & 0xF];
    return std::string(buf, n);
}

boost::asio::awaitable<ToolReturn> run_blocking(std::function<ToolReturn()> body) {
    rath::async::Runtime* rt = rath::async::current_runtime();
    auto pool = (rt ? *rt : rath::async::Runtime::default_runtime()).blocking_executor();
    return rath::async::Runtime::async_blocking(pool, std::move(body));
}

ToolReturn FlowToolCall::call(const Session& session, boost::json::object arguments) {
    return rath::async::block_on(async_call(session, std::move(arguments)));
}

}  // namespace rath::tool
