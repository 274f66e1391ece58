#pragma once
// Provider-neutral conversation messages and tool declarations (OpenAI Chat shape).
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <vector>

namespace rath::llm {

// Roles are stored as free strings; adapters decide what to do with unknown ones.
namespace role {
inline constexpr const char* system = "system";
inline constexpr const char* user = "user";
inline constexpr const char* assistant = "assistant";
inline constexpr const char* tool = "tool";
inline constexpr const char* developer = "developer";
}  // namespace role

struct Message {
    std::string role{};
    std::optional<std::string> content{};       // unset = no "content" key on the wire
    std::optional<std::string> name{};          // OpenAI only
    std::optional<std::string> tool_call_id{};  // role=tool: the call being answered
    // Assistant turns: OpenAI wire form {"id","type":"function","function":{"name","arguments"}}.
    std::optional<std::vector<boost::json::object>> tool_calls{};

    [[nodiscard]] static Message system(std::string text) { return {.role = role::system, .content = std::move(text)}; }
    [[nodiscard]] static Message user(std::string text) { return {.role = role::user, .content = std::move(text)}; }
    [[nodiscard]] static Message assistant(std::string text) {
        return {.role = role::assistant, .content = std::move(text)};
    }
    [[nodiscard]] static Message tool_result(std::string call_id, std::string text) {
        return {.role = role::tool, .content = std::move(text), .tool_call_id = std::move(call_id)};
    }
};

struct FunctionTool {
    std::string name{};
    boost::json::object parameters{};  // JSON Schema
    std::optional<std::string> description{};
    std::optional<bool> strict{};
};

}  // namespace rath::llm
