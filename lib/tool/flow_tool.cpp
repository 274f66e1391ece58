#include <rath/async/block_on.hpp>
#include <rath/session.hpp>
#include <rath/tool/flow_tool.hpp>

#include <cstdio>

namespace rath::tool {

FlowToolCall::FlowToolCall(std::string name, std::optional<std::string> description, boost::json::object parameters)
    : name_(std::move(name)), description_(std::move(description)), parameters_(std::move(parameters)) {}

FlowToolCall::~FlowToolCall() = default;

ResourceKey FlowToolCall::resource_key(const boost::json::object&) const {
    if (parallel_safe()) return {"safe", name_};
    return {"global"};
}

std::string FlowToolCall::lane_group() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "tool@%p", static_cast<const void*>(this));
    return buf;
}

ToolReturn FlowToolCall::call(const Session& session, boost::json::object arguments) {
    return rath::async::block_on(async_call(session, std::move(arguments)));
}

}  // namespace rath::tool
