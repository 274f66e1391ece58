#pragma once
// Counts how many operations run at once and the most that ever did, for tests that
// check a concurrency bound.
#include <atomic>

namespace rath::test {

struct Gauge {
    std::atomic<int> now{0}, peak{0};
    void enter() {
        const int n = ++now;
        int p = peak.load();
        while (n > p && !peak.compare_exchange_weak(p, n)) {
        }
    }
    void leave() { --now; }
};

}  // namespace rath::test
