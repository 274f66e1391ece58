// The async runtime alone: fan out 100,000 coroutines on the rath runtime, serialize
// part of them through resource-keyed lanes, and report what it cost. No key, no
// network.
#include <rath/async.hpp>
#include <rath/version.hpp>

#include <chrono>
#include <cstdio>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

int main() {
    auto& rt = rath::async::Runtime::default_runtime();
    std::printf("rath %s runtime: %zu io threads, %zu blocking threads\n", std::string(rath::version()).c_str(),
                rt.thread_count(), rt.blocking_thread_count());

    constexpr int n = 100'000;
    auto t0 = std::chrono::steady_clock::now();
    rath::async::TaskGroup<long> group(rt);
    for (int i = 0; i < n; ++i)
        group.spawn([i]() -> asio::awaitable<long> {
            co_await rath::async::async_sleep(1ms);  // every child parks on a timer
            co_return i;
        });
    long sum = 0;
    for (long v : group.join()) sum += v;
    double fan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("fan-out: %d coroutines, each parked on a 1 ms timer, joined in %.3f s (sum %ld)\n", n, fan_s, sum);

    // Ten "sandboxes": calls with the same key run one at a time, in order.
    t0 = std::chrono::steady_clock::now();
    rath::async::TaskGroup<int> lanes(rt);
    for (int i = 0; i < 40; ++i)
        lanes.spawn([&rt, i]() -> asio::awaitable<int> {
            co_return co_await rt.strands().async_run("sandbox-" + std::to_string(i % 10),
                                                      []() -> asio::awaitable<int> {
                                                          co_await rath::async::async_sleep(20ms);
                                                          co_return 1;
                                                      }());
        });
    int done = 0;
    for (int v : lanes.join()) done += v;
    double lane_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("lanes: %d calls of 20 ms over 10 keys took %.3f s (serial per key: 4 x 20 ms; parallel across keys)\n",
                done, lane_s);
    return sum == long(n) * (n - 1) / 2 && done == 40 ? 0 : 1;
}
