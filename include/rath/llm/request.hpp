#pragma once
// A provider-neutral chat request. Unset fields are omitted from the wire body.
#include <rath/llm/message.hpp>
#include <rath/llm/sampling.hpp>
#include <rath/llm/tool_list.hpp>

#include <optional>
#include <string>
#include <vector>

namespace rath::llm {

struct ChatRequest {
    std::vector<Message> messages{};
    std::optional<std::string> model{};  // unset: the client's default-model chain
    std::optional<ToolList> tools{};     // shared and immutable: copying a request is cheap
    SamplingOptions sampling{};
};

}  // namespace rath::llm
