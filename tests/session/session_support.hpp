#pragma once
// Helpers of the session suite: an in-test sandbox backend that counts opens and
// closes (a real Backend subclass, registered under its own name). A per-test
// OPENRATH_HOME is support/env.hpp's TempHome.
#include <rath/backend/backend.hpp>
#include <rath/backend/registry.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace rath::test {

inline constexpr const char* kMemBackend = "session-test-mem";

// Opens take a little while (a timer on the io_context) so that concurrent opens overlap.
class MemBackend : public rath::backend::Backend {
public:
    MemBackend() : Backend(kMemBackend) {}
    rath::backend::Capabilities capabilities() const override { return {}; }
    std::size_t sandbox_count() const override { return static_cast<std::size_t>(opens - closes); }

    boost::asio::awaitable<rath::backend::SandboxPtr> async_open(std::optional<rath::backend::SandboxSpec> spec) override {
        boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, std::chrono::milliseconds(20));
        co_await t.async_wait(boost::asio::use_awaitable);
        int n = ++opens;
        std::string handle = spec && spec->working_dir ? *spec->working_dir : "mem-" + std::to_string(n);
        co_return std::make_shared<rath::backend::Sandbox>(*this, handle, spec.value_or(rath::backend::SandboxSpec{}));
    }
    boost::asio::awaitable<void> async_close(rath::backend::SandboxPtr sb) override {
        if (sb->mark_closed()) ++closes;
        co_return;
    }
    boost::asio::awaitable<rath::backend::DispatchResult> async_dispatch(rath::backend::SandboxPtr,
                                                                         rath::backend::Payload) override {
        co_return rath::backend::ToolExecutionFailure{"unsupported_tool", "the session test backend runs nothing", {}};
    }

    std::atomic<int> opens{0};
    std::atomic<int> closes{0};
};

inline MemBackend& mem_backend() {
    static std::once_flag once;
    std::call_once(once, [] {
        rath::backend::register_backend(kMemBackend, rath::backend::BackendClass{
                                                         .create = [] { return std::make_unique<MemBackend>(); },
                                                         .is_available = [] { return true; },
                                                         .capabilities = [] { return rath::backend::Capabilities{}; },
                                                     });
    });
    return dynamic_cast<MemBackend&>(rath::backend::get_backend(kMemBackend));
}

}  // namespace rath::test
