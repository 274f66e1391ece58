#pragma once
// Answering a server's sampling/createMessage with a rath provider (client/sampling.mdx,
// 2025-11-25), only when the user allows it: the server asks the client's model to
// complete a conversation, so every request first goes to `allow`, and a refusal is
// the spec's user-rejection error (-1) to the server.
//
// Mapping: systemPrompt becomes a system message; each message's text content (a text
// block, or the text blocks of an array) becomes a user or assistant message; maxTokens,
// temperature and stopSequences become the request's sampling options; modelPreferences
// are not used (the provider's model answers). A message with image or audio content is
// refused (rath's chat messages carry text). The answer is
// {"role":"assistant","content":{"type":"text","text":...},"model":...,"stopReason":
// "endTurn"|"maxTokens"}.
//
// Thread safety: the handler may run for several requests at once. `allow` runs on the
// MCP client's strand: it must decide without blocking (a policy, not a prompt).
// Errors: the handler throws McpError for a refused or unusable request and passes on
// the provider's ProviderError; the client turns both into an error answer.
#include <rath/llm/provider.hpp>
#include <rath/mcp/client.hpp>

#include <functional>

namespace rath::mcp {

using SamplingPermission = std::function<bool(const SamplingRequest&)>;

// `provider` is resolved into a chat client once (llm::chat_client_for).
[[nodiscard]] SamplingHandler sampling_through(const llm::Provider& provider, SamplingPermission allow);

// The chat messages a sampling request asks for (exposed for tests).
[[nodiscard]] std::vector<llm::Message> sampling_messages(const SamplingRequest& request);

}  // namespace rath::mcp
