#pragma once
// Renders a Turn in the OpenAI Chat Completions or Anthropic Messages wire format
// (non-streaming JSON, or SSE events), and the providers' error bodies.
#include "tools/rath-fake-llm/src/reply.hpp"
#include "tools/rath-fake-llm/src/request.hpp"
#include "tools/rath-fake-llm/src/turn.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace rath::fake_llm::detail {

struct RenderContext {
    std::string_view model;          // as reported in the response
    std::uint64_t created = 0;       // unix seconds
    std::uint64_t id_number = 0;     // chatcmpl-fake-N / msg_fake_N
    std::vector<std::string_view>* pieces = nullptr;  // scratch
};

// Renders `turn` (already carrying its fault) into `reply`.
void render_chat(const ChatRequest& req, const Turn& turn, const RenderContext& ctx, Reply& reply);

// An error response in the API's own shape. `type` is the provider error type.
void render_error(Api api, unsigned status, std::string_view type, std::string_view message, Reply& reply,
                  std::string_view code = {});

}  // namespace rath::fake_llm::detail
