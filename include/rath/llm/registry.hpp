#pragma once
// Process-wide registry of chat client kinds (openai, anthropic, ...), open to
// third-party kinds. Built-ins are registered by register_builtin_clients(), which
// every lookup calls first (idempotent).
// Every function may be called from any thread at once.
#include <rath/llm/chat_client.hpp>
#include <rath/llm/provider.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rath::llm {

using ChatClientFactory = std::function<std::shared_ptr<ChatClient>(const Provider&, const ChatClientOptions&)>;

// Inserts or silently replaces (last registration wins).
void register_chat_client(const std::string& kind, ChatClientFactory factory);
// kind = provider.provider_kind or "openai". Unknown kind: ProviderConfigError
// "unknown provider_kind='<k>'; registered kinds: [...]". The factory runs outside the lock.
[[nodiscard]] std::shared_ptr<ChatClient> chat_client_for(const Provider& provider,
                                                          const ChatClientOptions& options = {});
[[nodiscard]] std::vector<std::string> registered_kinds();  // sorted
// openai, anthropic, atlascloud, litellm.
void register_builtin_clients();

}  // namespace rath::llm
