#pragma once
// Forward declarations of the sandbox layer, for headers that only name its types.
#include <memory>

namespace rath::backend {

class Backend;
class Sandbox;
using SandboxPtr = std::shared_ptr<Sandbox>;
struct SandboxSpec;

}  // namespace rath::backend
