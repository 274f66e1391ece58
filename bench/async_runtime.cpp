// Micro-benchmarks of the async runtime: spawn+complete of 1,000,000 trivial
// coroutines, strand hop cost, keyed-lane round trip, and Lazy set->resume latency.
// Prints one JSON line per figure.
#include "bench/common/report.hpp"

#include <rath/async.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using rath::async::Runtime;
using rath::bench::Line;

namespace {

// Raw co_spawn of n coroutines on the io_context, counted down to zero.
void spawn_raw(Runtime& rt, int n, int threads) {
    std::atomic<int> left{n};
    rath::async::Lazy<void> done;
    double t0 = rath::bench::now_s(), c0 = rath::bench::cpu_s();
    for (int i = 0; i < n; ++i)
        asio::co_spawn(rt.executor(), []() -> asio::awaitable<void> { co_return; }(), [&](std::exception_ptr) {
            if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) done.set_value();
        });
    done.wait();
    double wall = rath::bench::now_s() - t0, cpu = rath::bench::cpu_s() - c0;
    Line("async_spawn")
        .add_str("mode", "co_spawn")
        .add("coroutines", n)
        .add("threads", threads)
        .add("wall_s", wall)
        .add("ns_per_coroutine", wall * 1e9 / n)
        .add("cpu_ns_per_coroutine", cpu * 1e9 / n)
        .add("peak_rss_mb", rath::bench::peak_rss_mb())
        .print();
}

// The same through TaskGroup (own strand per child, results in order).
void spawn_group(Runtime& rt, int n, int threads) {
    double t0 = rath::bench::now_s(), c0 = rath::bench::cpu_s();
    rath::async::TaskGroup<int> g(rt);
    for (int i = 0; i < n; ++i) g.spawn([i]() -> asio::awaitable<int> { co_return i; });
    auto r = g.join();
    double wall = rath::bench::now_s() - t0, cpu = rath::bench::cpu_s() - c0;
    if (r.size() != std::size_t(n)) std::abort();
    Line("async_spawn")
        .add_str("mode", "task_group")
        .add("coroutines", n)
        .add("threads", threads)
        .add("wall_s", wall)
        .add("ns_per_coroutine", wall * 1e9 / n)
        .add("cpu_ns_per_coroutine", cpu * 1e9 / n)
        .add("peak_rss_mb", rath::bench::peak_rss_mb())
        .print();
}

// One coroutine hopping between two strands n times (co_await post(strand)).
void strand_hop(Runtime& rt, int n) {
    auto a = asio::make_strand(rt.executor());
    auto b = asio::make_strand(rt.executor());
    double t0 = rath::bench::now_s();
    rath::async::block_on(rt, [](decltype(a) a, decltype(b) b, int n) -> asio::awaitable<void> {
        for (int i = 0; i < n; ++i) {
            co_await asio::co_spawn(i % 2 ? a : b, []() -> asio::awaitable<void> { co_return; }(), asio::use_awaitable);
        }
    }(a, b, n));
    double wall = rath::bench::now_s() - t0;
    Line("strand_hop")
        .add("hops", n)
        .add("wall_s", wall)
        .add("ns_per_hop", wall * 1e9 / n)
        .add("peak_rss_mb", rath::bench::peak_rss_mb())
        .print();
}

// Handlers posted through one strand: the serialization cost per handler.
void strand_post(Runtime& rt, int n) {
    auto s = asio::make_strand(rt.executor());
    std::atomic<int> left{n};
    rath::async::Lazy<void> done;
    double t0 = rath::bench::now_s();
    for (int i = 0; i < n; ++i)
        asio::post(s, [&] {
            if (left.fetch_sub(1, std::memory_order_relaxed) == 1) done.set_value();
        });
    done.wait();
    double wall = rath::bench::now_s() - t0;
    Line("strand_post").add("handlers", n).add("wall_s", wall).add("ns_per_handler", wall * 1e9 / n).add("peak_rss_mb", rath::bench::peak_rss_mb()).print();
}

// Keyed lane round trip: acquire the key's lane, run a trivial op on its strand, release.
void lane_round_trip(Runtime& rt, int n) {
    double t0 = rath::bench::now_s();
    rath::async::block_on(rt, [](Runtime* rtp, int n) -> asio::awaitable<void> {
        for (int i = 0; i < n; ++i)
            co_await rtp->strands().async_run("sandbox:bench", []() -> asio::awaitable<void> { co_return; }());
    }(&rt, n));
    double wall = rath::bench::now_s() - t0;
    Line("lane_round_trip").add("ops", n).add("wall_s", wall).add("ns_per_op", wall * 1e9 / n).add("peak_rss_mb", rath::bench::peak_rss_mb()).print();
}

// Time from Lazy::set_value on a plain thread to the awaiting coroutine running.
void lazy_latency(Runtime& rt, int iterations) {
    std::vector<double> us;
    us.reserve(iterations);
    for (int i = 0; i < iterations; ++i) {
        rath::async::Lazy<std::chrono::steady_clock::time_point> lazy;
        std::atomic<bool> parked{false};
        auto resumed = rt.submit([](decltype(lazy) l, std::atomic<bool>* parked) -> asio::awaitable<double> {
            parked->store(true);
            auto set_at = co_await l.async_get();
            co_return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - set_at).count();
        }(lazy, &parked));
        while (!parked.load()) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::microseconds(20));  // let it suspend
        lazy.set_value(std::chrono::steady_clock::now());
        us.push_back(resumed.get());
    }
    std::sort(us.begin(), us.end());
    Line("lazy_set_resume")
        .add("iterations", iterations)
        .add("p50_us", us[us.size() / 2])
        .add("p99_us", us[us.size() * 99 / 100])
        .add("wall_s", 0.0)
        .add("peak_rss_mb", rath::bench::peak_rss_mb())
        .print();
}

}  // namespace

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 1'000'000;
    for (int threads : {1, 2}) {
        Runtime rt({.threads = std::size_t(threads)});
        spawn_raw(rt, n, threads);
        spawn_group(rt, n, threads);
    }
    Runtime rt({.threads = 1});
    strand_hop(rt, n / 10);
    strand_post(rt, n);
    lane_round_trip(rt, n / 10);
    lazy_latency(rt, 10'000);
}
