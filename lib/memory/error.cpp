#include <rath/memory/error.hpp>

#include "lib/text/pyrepr.hpp"

namespace rath::memory {

UnsupportedMemoryOp::UnsupportedMemoryOp(std::string op_type, std::string backend_name)
    : MemoryBackendError("memory backend " + rath::detail::pyrepr(backend_name) + " does not support op " +
                         rath::detail::pyrepr(op_type)),
      op_type_(std::move(op_type)),
      backend_name_(std::move(backend_name)) {}

MemoryStoreClosed::MemoryStoreClosed(std::string handle)
    : MemoryBackendError("memory store " + rath::detail::pyrepr(handle) + " is already closed"),
      handle_(std::move(handle)) {}

MemoryBackendNotFound::MemoryBackendNotFound(std::string name, std::vector<std::string> available)
    : MemoryBackendError("memory backend " + rath::detail::pyrepr(name) +
                         " is not registered; available backends: " + rath::detail::pyrepr_list(available)),
      name_(std::move(name)),
      available_(std::move(available)) {}

MemoryNotFound::MemoryNotFound(std::string uri)
    : MemoryBackendError("memory uri " + rath::detail::pyrepr(uri) + " not found"), uri_(std::move(uri)) {}

MemoryConflict::MemoryConflict(std::string uri)
    : MemoryBackendError("memory uri " + rath::detail::pyrepr(uri) + " write conflict"), uri_(std::move(uri)) {}

}  // namespace rath::memory
