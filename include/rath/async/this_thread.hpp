#pragma once
// Which runtime, if any, owns the calling thread. Blocking helpers consult this to
// refuse waits that would deadlock an io_context thread.

namespace rath::async {

class Runtime;

// The runtime whose io_context this thread is running, or nullptr.
[[nodiscard]] Runtime* current_runtime() noexcept;

// True on any io_context thread of any rath runtime (not on blocking-pool threads).
[[nodiscard]] inline bool on_runtime_thread() noexcept { return current_runtime() != nullptr; }

}  // namespace rath::async
