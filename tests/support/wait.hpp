#pragma once
// Waiting in tests for something another thread or process does, without a fixed sleep.
#include <chrono>
#include <thread>

namespace rath::test {

// Polls `cond` every `poll` until it holds or `limit` passed; then one last look. The
// generous default only matters when the condition never holds: a test fails later,
// never sooner, and a loaded machine does not make it flaky.
template <class F>
bool eventually(F cond, std::chrono::milliseconds limit = std::chrono::seconds(30),
                std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        if (cond()) return true;
        std::this_thread::sleep_for(poll);
    }
    return cond();
}

}  // namespace rath::test
