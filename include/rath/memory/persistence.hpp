#pragma once
// Where local memory stores live (memory_flow.md §2.13): <config-dir>/memory/local/<id>/.
// Pure path helpers plus a stateless registry of store directories.
//
// Thread safety: every function may be called from any thread; there is no locking,
// so concurrent deletes of one id race as the filesystem does. Errors:
// std::filesystem::filesystem_error from the functions that create or delete.
#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rath::memory {

[[nodiscard]] std::filesystem::path memory_root();        // <config-dir>/memory
[[nodiscard]] std::filesystem::path local_memory_root();  // <config-dir>/memory/local
[[nodiscard]] std::filesystem::path local_store_dir(std::string_view id);
// mkdir -p local_memory_root(); idempotent.
std::filesystem::path ensure_local_memory_root();

// True for a lowercase 8-4-4-4-12 hex id (the only spelling list_local accepts).
[[nodiscard]] bool is_canonical_uuid(std::string_view id) noexcept;

class PersistentMemoryRegistry {
public:
    // A new uuid4 id with its directory created.
    [[nodiscard]] std::string alloc_local_id() const;
    std::filesystem::path ensure_local(std::string_view id) const;
    [[nodiscard]] std::filesystem::path local_path(std::string_view id) const;
    // Sub-directories named by canonical uuids, in name order; missing root: empty.
    [[nodiscard]] std::vector<std::string> list_local() const;
    // False when absent; else removes the store recursively.
    bool delete_local(std::string_view id) const;
    // Deletes each listed store whose directory mtime is older than now - older_than;
    // returns the deleted ids in list order. Closing a local store bumps its mtime.
    std::vector<std::string> prune_local(std::chrono::seconds older_than) const;
};

}  // namespace rath::memory
