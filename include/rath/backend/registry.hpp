#pragma once
// Process-wide backend registry by name (backend_tools.md §1.1). get(name) returns one
// lazily created instance per name for the whole process (race-safe).
#include <rath/backend/backend.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rath::backend {

struct BackendClass {
    std::function<std::unique_ptr<Backend>()> create;
    std::function<bool()> is_available;  // cheap: no network, no subprocess
    std::function<Capabilities()> capabilities;
};

// Throws BackendError("backend '<name>' is already registered") on a duplicate.
void register_backend(std::string name, BackendClass cls);
// Registration order.
std::vector<std::string> backend_names();
bool is_backend_available(std::string_view name);
// Throws BackendNotFound.
Backend& get_backend(std::string_view name);
const BackendClass& get_backend_class(std::string_view name);
// First registered and available name; BackendNotFound(joined names, available) otherwise.
Backend& preferred_backend(const std::vector<std::string>& names);
void set_default_backend(std::string_view name);
Backend& current_backend();

// Registers the built-in backends once (idempotent); every registry entry point calls it.
void register_builtin_backends();

namespace testing {
// Test-only: forget the cached singleton instances (fresh state per test).
void reset_backend_instances();
}  // namespace testing

}  // namespace rath::backend
