#pragma once
// Forward declarations of the memory plane's handle types.
#include <memory>

namespace rath::memory {

class MemoryBackend;
class MemoryStore;
using MemoryStorePtr = std::shared_ptr<MemoryStore>;
using MemoryBackendPtr = std::shared_ptr<MemoryBackend>;

}  // namespace rath::memory
