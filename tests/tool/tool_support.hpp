#pragma once
#include "backend/backend_support.hpp"
#include "support/gauge.hpp"

#include <rath/async/deadline.hpp>
#include <rath/session.hpp>
#include <rath/tool/dispatch.hpp>
#include <rath/tool/policy.hpp>
#include <rath/tool/system_tools.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/json/parse.hpp>

#include <atomic>

namespace rath::test {

namespace json = boost::json;
namespace rt = rath::tool;

inline rt::FlowToolPtr builtin(const std::string& name) {
    auto t = rt::global_system_tools().find(name);
    REQUIRE(t != nullptr);
    return t;
}

inline json::object obj(std::string_view text) { return json::parse(text).as_object(); }

struct SleepArgs {
    std::string key;
};
BOOST_DESCRIBE_STRUCT(SleepArgs, (), (key))

// A user tool that sleeps 50 ms on the runtime (no thread blocked) while a gauge counts.
inline rt::FlowToolPtr sleeping_tool(std::string name, Gauge& g, rt::ToolTraits traits, bool key_by_arg) {
    struct KeyedTool : rt::FlowToolCall {
        rt::FlowToolPtr inner;
        bool by_arg;
        KeyedTool(rt::FlowToolPtr i, bool b) : FlowToolCall(i->name(), i->description(), i->parameters()), inner(i), by_arg(b) {}
        bool parallel_safe() const override { return inner->parallel_safe(); }
        bool sandbox_scoped() const override { return inner->sandbox_scoped(); }
        rt::ResourceKey resource_key(const json::object& a) const override {
            if (by_arg) return {std::string(a.at("key").as_string())};
            return FlowToolCall::resource_key(a);
        }
        boost::asio::awaitable<rt::ToolReturn> async_call(rath::Session s, json::object a) override {
            return inner->async_call(std::move(s), std::move(a));
        }
    };
    auto inner = rt::make_tool<SleepArgs>(
        std::move(name), "sleep a little",
        [&g](rath::Session, SleepArgs a) -> boost::asio::awaitable<json::value> {
            g.enter();
            co_await rath::async::async_sleep(std::chrono::milliseconds(50));
            g.leave();
            co_return json::value(a.key);
        },
        std::move(traits));
    return std::make_shared<KeyedTool>(inner, key_by_arg);
}

}  // namespace rath::test
