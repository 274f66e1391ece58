// A worker process for the run queue's kill -9 test: claims one run from
// (conninfo, schema, queue), prints "claimed <id> <attempts>", then renews its lease
// every 100 ms until it is killed. It never finishes the run.
//
//   pg_queue_worker <conninfo> <schema> <queue> <owner> <lease-ms>
#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/pg/run_queue.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: pg_queue_worker <conninfo> <schema> <queue> <owner> <lease-ms>\n");
        return 2;
    }
    rath::pg::RunQueueOptions o;
    o.conninfo = argv[1];
    o.schema = argv[2];
    o.queue = argv[3];
    const std::string owner = argv[4];
    const std::chrono::milliseconds lease(std::atol(argv[5]));
    rath::pg::RunQueue q(o);
    auto& rt = rath::async::Runtime::default_runtime();
    auto claimed = rath::async::block_on(rt, q.async_claim(owner, lease));
    if (!claimed) {
        std::printf("empty\n");
        return 1;
    }
    std::printf("claimed %lld %d\n", static_cast<long long>(claimed->id), claimed->attempts);
    std::fflush(stdout);
    for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (!rath::async::block_on(rt, q.async_heartbeat(claimed->id, owner, lease))) {
            std::printf("lost\n");
            return 3;
        }
    }
}
