#pragma once
// Process-wide backend registry by name (backend_tools.md §1.1). get(name) returns one
// lazily created instance per name for the whole process (race-safe).
//
// Thread safety: every function may be called from any thread at once; a backend's
// factory runs once, on the first get_backend of its name. Errors: BackendNotFound for
// an unknown name, BackendError for a duplicate registration.
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
[[nodiscard]] std::vector<std::string> backend_names();
[[nodiscard]] bool is_backend_available(std::string_view name);
// Throws BackendNotFound.
[[nodiscard]] Backend& get_backend(std::string_view name);
[[nodiscard]] const BackendClass& get_backend_class(std::string_view name);
// First registered and available name; BackendNotFound(joined names, available) otherwise.
[[nodiscard]] Backend& preferred_backend(const std::vector<std::string>& names);
void set_default_backend(std::string_view name);
[[nodiscard]] Backend& current_backend();

// Registers the built-in backends once (idempotent); every registry entry point calls it.
void register_builtin_backends();

namespace testing {
// Test-only: forget the cached singleton instances (fresh state per test).
void reset_backend_instances();
}  // namespace testing

}  // namespace rath::backend
