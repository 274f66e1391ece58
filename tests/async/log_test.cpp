// rath's one logger (rath/log.hpp): levels, sink replacement, failing sinks, threads,
// and the stderr default.
#include <rath/log.hpp>

#include <doctest/doctest.h>

#include "support/log_capture.hpp"

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using rath::LogLevel;

namespace {

// Sets the minimum level for one test and restores the previous one.
struct LevelGuard {
    LogLevel prev = rath::log_level();
    explicit LevelGuard(LogLevel min) { rath::set_log_level(min); }
    ~LevelGuard() { rath::set_log_level(prev); }
};

// What `fn` writes to file descriptor 2.
template <class F>
std::string stderr_of(F fn) {
    std::fflush(stderr);
    std::FILE* tmp = std::tmpfile();
    REQUIRE(tmp != nullptr);
    const int saved = ::dup(2);
    ::dup2(::fileno(tmp), 2);
    fn();
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    std::string out;
    std::rewind(tmp);
    for (int c; (c = std::fgetc(tmp)) != EOF;) out.push_back(static_cast<char>(c));
    std::fclose(tmp);
    return out;
}

}  // namespace

TEST_SUITE("async/log") {

TEST_CASE("records below the minimum level never reach the sink and the default minimum is info") {
    CHECK(rath::log_level() == LogLevel::info);
    rath::test::LogCapture log;
    rath::log(LogLevel::debug, "rath.test", "hidden");
    rath::log(LogLevel::info, "rath.test", "shown");
    {
        LevelGuard g(LogLevel::error);
        CHECK(rath::log_level() == LogLevel::error);
        rath::log(LogLevel::warning, "rath.test", "below error");
        rath::log(LogLevel::error, "rath.test", "an error");
    }
    {
        LevelGuard g(LogLevel::off);
        rath::log(LogLevel::error, "rath.test", "everything is off");
    }
    {
        LevelGuard g(LogLevel::debug);
        rath::log(LogLevel::debug, "rath.test", "debug allowed");
        rath::log(LogLevel::off, "rath.test", "off is never a record");
    }
    CHECK(log.messages("rath.test") == std::vector<std::string>{"shown", "an error", "debug allowed"});
}

TEST_CASE("a record carries its level, channel and message to the sink") {
    rath::test::LogCapture log;
    rath::log(LogLevel::warning, "rath.session.loop", "run_session_loop hit max_tool_rounds=2");
    auto e = log.entries();
    REQUIRE(e.size() == 1);
    CHECK(e[0].level == LogLevel::warning);
    CHECK(e[0].channel == "rath.session.loop");
    CHECK(e[0].message == "run_session_loop hit max_tool_rounds=2");
}

TEST_CASE("replacing the sink returns the previous one and an empty sink restores the default") {
    std::vector<std::string> first, second;
    auto original = rath::set_log_sink([&](const rath::LogRecord& r) { first.emplace_back(r.message); });
    rath::log(LogLevel::info, "rath.test", "one");
    auto prev = rath::set_log_sink([&](const rath::LogRecord& r) { second.emplace_back(r.message); });
    REQUIRE(prev);
    rath::log(LogLevel::info, "rath.test", "two");
    prev(rath::LogRecord{LogLevel::info, "rath.test", "through the returned sink"});
    auto mine = rath::set_log_sink({});
    CHECK(mine);
    CHECK(first == std::vector<std::string>{"one", "through the returned sink"});
    CHECK(second == std::vector<std::string>{"two"});
    // With the default back, records go to stderr and to neither sink.
    auto written = stderr_of([] { rath::log(LogLevel::warning, "rath.test", "to stderr"); });
    CHECK(written == "WARNING rath.test: to stderr\n");
    CHECK(second.size() == 1);
    CHECK_FALSE(rath::set_log_sink(std::move(original)));
}

TEST_CASE("the default sink writes one line per record naming the level and channel") {
    rath::test::LogCapture outer;  // saved and restored around the default
    auto captured = rath::set_log_sink({});
    LevelGuard g(LogLevel::debug);
    auto written = stderr_of([] {
        rath::log(LogLevel::debug, "rath.a", "d");
        rath::log(LogLevel::info, "rath.b", "i");
        rath::log(LogLevel::warning, "rath.c", "w");
        rath::log(LogLevel::error, "rath.d", "e");
    });
    rath::set_log_sink(std::move(captured));
    CHECK(written == "DEBUG rath.a: d\nINFO rath.b: i\nWARNING rath.c: w\nERROR rath.d: e\n");
    CHECK(outer.entries().empty());
}

TEST_CASE("a sink that throws does not escape log and later records still arrive") {
    int calls = 0;
    auto prev = rath::set_log_sink([&](const rath::LogRecord& r) {
        ++calls;
        if (r.message == "bad") throw std::runtime_error("sink failed");
    });
    CHECK_NOTHROW(rath::log(LogLevel::error, "rath.test", "bad"));
    CHECK_NOTHROW(rath::log(LogLevel::error, "rath.test", "good"));
    rath::set_log_sink(std::move(prev));
    CHECK(calls == 2);
}

TEST_CASE("records logged from several threads while the sink is replaced all arrive whole and in order") {
    constexpr int threads = 8, each = 500;
    std::mutex mu;
    std::vector<std::string> a, b;
    auto into = [&mu](std::vector<std::string>& out) {
        return [&mu, &out](const rath::LogRecord& r) {
            std::lock_guard lk(mu);
            out.emplace_back(r.message);
        };
    };
    auto prev = rath::set_log_sink(into(a));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([t] {
            for (int i = 0; i < each; ++i)
                rath::log(LogLevel::info, "rath.test", "thread " + std::to_string(t) + " record " + std::to_string(i));
        });
    for (int k = 0; k < 200; ++k) rath::set_log_sink(k % 2 ? into(a) : into(b));
    for (auto& th : pool) th.join();
    rath::set_log_sink(std::move(prev));

    CHECK(a.size() + b.size() == std::size_t{threads} * each);
    // Every record whole, and one thread's records reach each sink in the order that
    // thread logged them.
    std::size_t broken = 0, out_of_order = 0;
    for (const auto* seen : {&a, &b}) {
        std::vector<int> next(threads, 0);
        for (const auto& m : *seen) {
            int t = -1, i = -1;
            if (std::sscanf(m.c_str(), "thread %d record %d", &t, &i) != 2 || t < 0 || t >= threads ||
                m != "thread " + std::to_string(t) + " record " + std::to_string(i)) {
                ++broken;
                continue;
            }
            if (i < next[static_cast<std::size_t>(t)]) ++out_of_order;
            next[static_cast<std::size_t>(t)] = i + 1;
        }
    }
    CHECK(broken == 0);
    CHECK(out_of_order == 0);
}

TEST_CASE("a log level parses from its lower-case name and from nothing else") {
    CHECK(rath::parse_log_level("debug") == rath::LogLevel::debug);
    CHECK(rath::parse_log_level("info") == rath::LogLevel::info);
    CHECK(rath::parse_log_level("warning") == rath::LogLevel::warning);
    CHECK(rath::parse_log_level("error") == rath::LogLevel::error);
    CHECK(rath::parse_log_level("off") == rath::LogLevel::off);
    CHECK_FALSE(rath::parse_log_level("WARNING").has_value());
    CHECK_FALSE(rath::parse_log_level("warn").has_value());
    CHECK_FALSE(rath::parse_log_level("").has_value());
}

}  // TEST_SUITE
