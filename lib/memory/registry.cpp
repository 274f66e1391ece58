#include <rath/memory/error.hpp>
#include <rath/memory/local.hpp>
#include <rath/memory/openviking.hpp>
#include <rath/memory/registry.hpp>

#include <mutex>
#include <optional>
#include <utility>

namespace rath::memory {
namespace {

struct Registry {
    std::mutex mu;
    std::vector<std::pair<std::string, MemoryBackendClass>> entries;
    std::optional<std::string> default_name;
    bool builtins = false;
};

Registry& registry() {
    static Registry* r = new Registry();  // never destroyed: usable during static destruction
    return *r;
}

// The built-ins register on first use of the registry, not at load time.
void ensure_builtins(Registry& r) {
    if (r.builtins) return;
    r.builtins = true;
    r.entries.emplace_back(local_backend_name,
                           MemoryBackendClass{[] { return make_local_memory_backend(); }, [] { return true; },
                                              [] { return local_memory_capabilities(); }});
    // Always available: the adapter needs only the HTTP client, and a store names its
    // server when it opens (decision on §1.9).
    r.entries.emplace_back(openviking_backend_name,
                           MemoryBackendClass{[] { return make_openviking_memory_backend(); }, [] { return true; },
                                              [] { return openviking_memory_capabilities(); }});
    r.default_name = local_backend_name;
}

std::vector<std::string> names_locked(const Registry& r) {
    std::vector<std::string> out;
    for (const auto& [n, _] : r.entries) out.push_back(n);
    return out;
}

std::optional<MemoryBackendClass> find_class(std::string_view name) {
    auto& r = registry();
    std::lock_guard lk(r.mu);
    ensure_builtins(r);
    for (const auto& [n, cls] : r.entries)
        if (n == name) return cls;
    return std::nullopt;
}

}  // namespace

void register_memory_backend(std::string name, MemoryBackendClass cls) {
    auto& r = registry();
    std::lock_guard lk(r.mu);
    ensure_builtins(r);
    for (const auto& [n, _] : r.entries)
        if (n == name) throw MemoryBackendError("memory backend '" + name + "' is already registered");
    r.entries.emplace_back(std::move(name), std::move(cls));
}

std::vector<std::string> memory_backend_names() {
    auto& r = registry();
    std::lock_guard lk(r.mu);
    ensure_builtins(r);
    return names_locked(r);
}

bool is_memory_backend_available(std::string_view name) noexcept {
    try {
        auto cls = find_class(name);
        return cls && (!cls->is_available || cls->is_available());
    } catch (...) {
        return false;
    }
}

MemoryBackendClass get_memory_backend_class(std::string_view name) {
    if (auto cls = find_class(name)) return *cls;
    throw MemoryBackendNotFound(std::string(name), memory_backend_names());
}

MemoryBackendPtr get_memory_backend(std::string_view name) { return get_memory_backend_class(name).create(); }

MemoryBackendPtr preferred_memory_backend(const std::vector<std::string>& names) {
    for (const auto& n : names)
        if (is_memory_backend_available(n)) return get_memory_backend(n);
    std::string joined;
    for (const auto& n : names) joined += (joined.empty() ? "" : ", ") + n;
    std::vector<std::string> available;
    for (const auto& n : memory_backend_names())
        if (is_memory_backend_available(n)) available.push_back(n);
    throw MemoryBackendNotFound(joined, available);
}

void set_default_memory_backend(std::string_view name) {
    if (!find_class(name)) throw MemoryBackendNotFound(std::string(name), memory_backend_names());
    auto& r = registry();
    std::lock_guard lk(r.mu);
    r.default_name = std::string(name);
}

MemoryBackendPtr current_memory_backend() {
    std::optional<std::string> name;
    {
        auto& r = registry();
        std::lock_guard lk(r.mu);
        ensure_builtins(r);
        name = r.default_name;
    }
    if (!name) throw MemoryBackendNotFound("<default>", memory_backend_names());
    return get_memory_backend(*name);
}

namespace testing {
void reset_memory_registry() {
    auto& r = registry();
    std::lock_guard lk(r.mu);
    r.entries.clear();
    r.default_name.reset();
    r.builtins = false;
}
}  // namespace testing

}  // namespace rath::memory
