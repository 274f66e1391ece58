#pragma once
// Process-wide registry of memory backend kinds (memory_flow.md §1.9): ordered by
// registration, with an optional default. get() makes a fresh backend instance every
// call (each with its own store table). "local" is built in and the default;
// "openviking" is built in and always available (each store names its server). A third
// party registers its own kind with register_memory_backend, like a provider kind.
//
// Thread safety: every function may be called from any thread at once; factories run
// outside the registry lock. Errors: MemoryBackendNotFound for an unknown name,
// MemoryBackendError("memory backend 'x' is already registered") for a duplicate.
#include <rath/memory/backend.hpp>
#include <rath/memory/capabilities.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rath::memory {

struct MemoryBackendClass {
    std::function<MemoryBackendPtr()> create;
    std::function<bool()> is_available;  // cheap: no network, no subprocess
    std::function<MemoryCapabilities()> capabilities;
};

void register_memory_backend(std::string name, MemoryBackendClass cls);
// Registration order.
[[nodiscard]] std::vector<std::string> memory_backend_names();
// Registered and available; never throws.
[[nodiscard]] bool is_memory_backend_available(std::string_view name) noexcept;
[[nodiscard]] MemoryBackendPtr get_memory_backend(std::string_view name);
[[nodiscard]] MemoryBackendClass get_memory_backend_class(std::string_view name);
// First registered-and-available name -> a fresh instance; otherwise
// MemoryBackendNotFound(names joined by ", ", the registered-and-available names).
[[nodiscard]] MemoryBackendPtr preferred_memory_backend(const std::vector<std::string>& names);
void set_default_memory_backend(std::string_view name);
// Fresh instance of the default; MemoryBackendNotFound("<default>", names) when unset.
[[nodiscard]] MemoryBackendPtr current_memory_backend();

namespace testing {
// Test-only: forget every registration and the default (the built-ins come back on
// the next registry call).
void reset_memory_registry();
}  // namespace testing

}  // namespace rath::memory
