#pragma once
// MemoryStoreSpec (memory_flow.md §1.6): what to open. Backends ignore the fields that
// do not apply to them. `options` holds the JSON scalars a backend reads (the local
// backend: "path", "analyzer", "bm25_k1", "bm25_b", "embedding_provider",
// "chat_provider"); live clients ride in their own typed slots.
//
// Thread safety: a plain value. Throws: from_config as documented below.
#include <boost/json/object.hpp>

#include <memory>
#include <optional>
#include <string>

namespace rath::llm {
class EmbeddingClient;
class ChatClient;
}  // namespace rath::llm

namespace rath::memory {

struct MemoryStoreSpec {
    std::optional<std::string> namespace_{};
    std::optional<std::string> account_id{};
    std::optional<std::string> user_id{};
    std::optional<std::string> agent_id{};
    std::optional<boost::json::object> options{};
    // Pre-built clients (the Python `options.embedding` / `options.chat` objects).
    std::shared_ptr<rath::llm::EmbeddingClient> embedding{};
    std::shared_ptr<rath::llm::ChatClient> chat{};

    // The `memory.providers[name]` entry of the config file (`name` unset: the
    // configured default provider), its non-null `path`, `embedding_provider` and
    // `chat_provider` copied into `options` (which stays unset when none is). Reads the
    // config file at the call, never earlier. Throws rath::config::ConfigLookupError
    // (naming the file) when no name is given and no default is set, or when the name
    // is unknown; rath::config::ConfigError when the file is malformed.
    [[nodiscard]] static MemoryStoreSpec from_config(std::optional<std::string> name = std::nullopt);
};

}  // namespace rath::memory
