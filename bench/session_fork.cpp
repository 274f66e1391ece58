// Fork and extend cost against transcript length. A fork shares the immutable chunk
// table, so its time and memory must not depend on how many rows the session holds;
// appending to a fork copies at most one 32-row block and one trie path.
//
//   session_fork [forks=1000000] [held=100000]
// One JSON line per transcript length (10, 1,000, 10,000, 100,000 rows).
#include <rath/session.hpp>

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace {

double rss_mb() {
    std::ifstream f("/proc/self/statm");
    long pages = 0, resident = 0;
    f >> pages >> resident;
    return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// Bytes currently allocated through malloc (exact, unlike RSS, which reuses freed pages).
double heap_bytes() {
    struct mallinfo2 mi = ::mallinfo2();
    return static_cast<double>(mi.uordblks + mi.hblkhd);
}

double peak_rss_mb() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

rath::Session make_session(std::size_t rows) {
    std::vector<rath::ChunkRowPtr> v;
    v.reserve(rows);
    for (std::size_t i = 0; i < rows; ++i)
        v.push_back(i % 2 ? rath::assistant_turn_chunk({}, "answer " + std::to_string(i))
                          : rath::user_text_chunk("question " + std::to_string(i)));
    return rath::Session(rath::ChunkTable(v));
}

}  // namespace

int main(int argc, char** argv) {
    using clock = std::chrono::steady_clock;
    long forks = argc > 1 ? std::atol(argv[1]) : 1000000;
    long held = argc > 2 ? std::atol(argv[2]) : 100000;
    for (std::size_t rows : {10u, 1000u, 10000u, 100000u}) {
        rath::Session base = make_session(rows);
        auto start = clock::now();

        // Time: fork `forks` times (each fork is dropped right away).
        auto t0 = clock::now();
        std::size_t check = 0;
        for (long i = 0; i < forks; ++i) {
            rath::Session f = base.fork();
            check += f.chunks().size();
        }
        double fork_s = std::chrono::duration<double>(clock::now() - t0).count();

        // Memory: hold `held` forks at once and measure the heap growth (the handle
        // vector itself is reserved before the measurement starts).
        std::vector<rath::Session> keep;
        keep.reserve(static_cast<std::size_t>(held));
        double before = heap_bytes();
        double rss_before = rss_mb();
        for (long i = 0; i < held; ++i) keep.push_back(base.fork());
        double held_bytes = heap_bytes() - before;
        double held_rss_mb = rss_mb() - rss_before;
        keep.clear();
        keep.shrink_to_fit();

        // Extend: append one row to a fork (the fork then owns a new table).
        const long appends = 100000;
        auto row = rath::user_text_chunk("one more");
        rath::ChunkTable table = base.chunks();
        auto t1 = clock::now();
        for (long i = 0; i < appends; ++i) check += table.append(row).size();
        double append_s = std::chrono::duration<double>(clock::now() - t1).count();

        double wall = std::chrono::duration<double>(clock::now() - start).count();
        std::printf(
            "{\"bench\": \"session_fork\", \"rows\": %zu, \"forks\": %ld, \"held\": %ld, \"wall_s\": %.3f, "
            "\"fork_ns\": %.1f, \"heap_bytes_per_fork\": %.1f, \"rss_mb_held\": %.1f, \"append_ns\": %.1f, "
            "\"peak_rss_mb\": %.1f, \"check\": %zu}\n",
            rows, forks, held, wall, fork_s * 1e9 / static_cast<double>(forks), held_bytes / static_cast<double>(held),
            held_rss_mb, append_s * 1e9 / static_cast<double>(appends), peak_rss_mb(), check);
        std::fflush(stdout);
    }
    return 0;
}
