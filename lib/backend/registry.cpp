#include <rath/backend/registry.hpp>

#include "lib/text/pyrepr.hpp"

#include <map>
#include <mutex>
#include <optional>

namespace rath::backend {

namespace {

struct Entry {
    BackendClass cls;
    std::unique_ptr<Backend> instance;
};

struct Registry {
    std::recursive_mutex mu;  // creating an instance may register nothing else, but may query
    std::vector<std::string> order;
    std::map<std::string, Entry, std::less<>> entries;
    std::optional<std::string> default_name;
};

Registry& reg() {
    static Registry r;
    return r;
}

Entry& find_locked(Registry& r, std::string_view name) {
    auto it = r.entries.find(name);
    if (it == r.entries.end()) throw BackendNotFound(std::string(name), r.order);
    return it->second;
}

}  // namespace

void register_backend(std::string name, BackendClass cls) {
    auto& r = reg();
    std::lock_guard lk(r.mu);
    if (r.entries.count(name)) throw BackendError("backend " + rath::detail::pyrepr(name) + " is already registered");
    r.order.push_back(name);
    r.entries.emplace(std::move(name), Entry{std::move(cls), nullptr});
}

std::vector<std::string> backend_names() {
    register_builtin_backends();
    auto& r = reg();
    std::lock_guard lk(r.mu);
    return r.order;
}

bool is_backend_available(std::string_view name) {
    register_builtin_backends();
    auto& r = reg();
    std::lock_guard lk(r.mu);
    auto it = r.entries.find(name);
    if (it == r.entries.end()) return false;
    return !it->second.cls.is_available || it->second.cls.is_available();
}

Backend& get_backend(std::string_view name) {
    register_builtin_backends();
    auto& r = reg();
    std::lock_guard lk(r.mu);
    Entry& e = find_locked(r, name);
    if (!e.instance) e.instance = e.cls.create();
    return *e.instance;
}

const BackendClass& get_backend_class(std::string_view name) {
    register_builtin_backends();
    auto& r = reg();
    std::lock_guard lk(r.mu);
    return find_locked(r, name).cls;
}

Backend& preferred_backend(const std::vector<std::string>& names) {
    for (auto& n : names)
        if (is_backend_available(n)) return get_backend(n);
    std::vector<std::string> available;
    for (auto& n : backend_names())
        if (is_backend_available(n)) available.push_back(n);
    std::string joined;
    for (std::size_t i = 0; i < names.size(); ++i) joined += (i ? ", " : "") + names[i];
    throw BackendNotFound(joined, available);
}

void set_default_backend(std::string_view name) {
    register_builtin_backends();
    auto& r = reg();
    std::lock_guard lk(r.mu);
    (void)find_locked(r, name);
    r.default_name = std::string(name);
}

Backend& current_backend() {
    register_builtin_backends();
    std::string name;
    {
        auto& r = reg();
        std::lock_guard lk(r.mu);
        if (!r.default_name) throw BackendNotFound("<default>", r.order);
        name = *r.default_name;
    }
    return get_backend(name);
}

namespace testing {
void reset_backend_instances() {
    auto& r = reg();
    std::lock_guard lk(r.mu);
    for (auto& [n, e] : r.entries) e.instance.reset();
}
}  // namespace testing

}  // namespace rath::backend
