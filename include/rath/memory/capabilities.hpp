#pragma once
// What a memory backend can do (memory_flow.md §1.5). Informational only: nothing
// checks it before dispatch.
//
// Thread safety: plain values; nothing throws.
#include <string_view>

namespace rath::memory {

enum class ScopeModel { kv, fs, vector, hybrid };
[[nodiscard]] std::string_view to_string(ScopeModel m) noexcept;

struct MemoryCapabilities {
    ScopeModel scope_model = ScopeModel::hybrid;
    bool supports_write = false;
    bool supports_read = false;
    bool supports_list = false;
    bool supports_tree = false;
    bool supports_vector_search = false;
    bool supports_intent_search = false;
    bool supports_resource_ingest = false;
    bool supports_session_commit = false;
    bool supports_l0_l1_l2 = false;
    bool operator==(const MemoryCapabilities&) const = default;
};

}  // namespace rath::memory
