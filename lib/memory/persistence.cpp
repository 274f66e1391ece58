#include <rath/config/paths.hpp>
#include <rath/memory/persistence.hpp>

#include "lib/session/uuid.hpp"

#include <algorithm>
#include <system_error>

namespace fs = std::filesystem;

namespace rath::memory {

fs::path memory_root() { return rath::config::resolve_config_dir() / "memory"; }
fs::path local_memory_root() { return memory_root() / "local"; }
fs::path local_store_dir(std::string_view id) { return local_memory_root() / std::string(id); }

fs::path ensure_local_memory_root() {
    fs::path p = local_memory_root();
    fs::create_directories(p);
    return p;
}

bool is_canonical_uuid(std::string_view id) noexcept {
    if (id.size() != 36) return false;
    for (std::size_t i = 0; i < id.size(); ++i) {
        char c = id[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return false;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

std::string PersistentMemoryRegistry::alloc_local_id() const {
    std::string id = rath::detail::new_uuid_v4();
    fs::create_directories(local_store_dir(id));
    return id;
}

fs::path PersistentMemoryRegistry::ensure_local(std::string_view id) const {
    fs::path p = local_store_dir(id);
    fs::create_directories(p);
    return p;
}

fs::path PersistentMemoryRegistry::local_path(std::string_view id) const { return local_store_dir(id); }

std::vector<std::string> PersistentMemoryRegistry::list_local() const {
    std::vector<std::string> out;
    std::error_code ec;
    fs::directory_iterator it(local_memory_root(), ec);
    if (ec) return out;
    for (const auto& e : it) {
        std::error_code sec;
        if (!e.is_directory(sec)) continue;
        std::string name = e.path().filename().string();
        if (is_canonical_uuid(name)) out.push_back(std::move(name));
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool PersistentMemoryRegistry::delete_local(std::string_view id) const {
    fs::path p = local_store_dir(id);
    std::error_code ec;
    if (!fs::exists(p, ec)) return false;
    fs::remove_all(p);
    return true;
}

std::vector<std::string> PersistentMemoryRegistry::prune_local(std::chrono::seconds older_than) const {
    std::vector<std::string> deleted;
    auto cutoff = fs::file_time_type::clock::now() - older_than;
    for (const auto& id : list_local()) {
        std::error_code ec;
        auto t = fs::last_write_time(local_store_dir(id), ec);
        if (ec) continue;
        if (t < cutoff && delete_local(id)) deleted.push_back(id);
    }
    return deleted;
}

}  // namespace rath::memory
