// AsyncSessionWriter (session.md §5.4): I/O on the blocking pool, FIFO drain, latched
// errors.
#include "support/env.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/session.hpp>
#include <rath/session/persistence/async_writer.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>

#include <doctest/doctest.h>

#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <sstream>

using namespace rath;
using namespace rath::persistence;
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> record_types(const fs::path& p) {
    std::ifstream f(p);
    std::vector<std::string> out;
    for (std::string l; std::getline(f, l);) {
        auto k = l.find("\"record_type\": \"");
        out.push_back(l.substr(k + 16, l.find('"', k + 16) - k - 16));
    }
    return out;
}

template <class T>
T run(asio::awaitable<T> aw) {
    return async::block_on(async::Runtime::default_runtime(), std::move(aw));
}

}  // namespace

TEST_SUITE("session/persistence/async_writer") {

TEST_CASE("the header is on disk when the writer is open and close promotes the file") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    auto body = [](Session s) -> asio::awaitable<std::vector<std::string>> {
        auto w = co_await AsyncSessionWriter::async_open(s);
        std::vector<std::string> seen = record_types(w.partial_path());
        CHECK(w.partial_path() == session_partial_path(s.id()));
        co_await w.async_write_chunk(0, s.chunks()[0]);
        co_await w.async_write_chunk(1, assistant_turn_chunk({}, std::string("yo")));
        co_await w.async_close();
        co_await w.async_close();  // idempotent
        CHECK(w.chunks_written() == 2);
        co_return seen;
    };
    auto at_open = run(body(s));
    CHECK(at_open == std::vector<std::string>{"header"});
    CHECK(record_types(session_file_path(s.id())) == std::vector<std::string>{"header", "chunk", "chunk", "trailer"});
    CHECK_FALSE(fs::exists(session_partial_path(s.id())));
}

TEST_CASE("sequential writes land in order") {
    rath::test::TempHome home;
    Session s;
    auto body = [](Session s) -> asio::awaitable<void> {
        auto w = co_await AsyncSessionWriter::async_open(s);
        for (int i = 0; i < 64; ++i) co_await w.async_write_chunk(i, user_text_chunk("row " + std::to_string(i)));
        co_await w.async_close();
    };
    run(body(s));
    auto p = load_session(s.id());
    REQUIRE(p.chunks.size() == 64);
    for (int i = 0; i < 64; ++i) CHECK(p.chunks[i]->payload().at("content").as_string() == "row " + std::to_string(i));
}

TEST_CASE("enqueued rows from a small queue are all written in FIFO order") {
    rath::test::TempHome home;
    Session s;
    auto body = [](Session s) -> asio::awaitable<void> {
        AsyncWriterOptions options{.queue_maxsize = 1};  // named: see async_writer.hpp
        auto w = co_await AsyncSessionWriter::async_open(s, std::move(options));
        for (int i = 0; i < 50; ++i) co_await w.async_enqueue_chunk(i, user_text_chunk(std::to_string(i)));
        co_await w.async_close();
    };
    run(body(s));
    auto p = load_session(s.id());
    REQUIRE(p.chunks.size() == 50);
    for (int i = 0; i < 50; ++i) CHECK(p.chunks[i]->payload().at("content").as_string() == std::to_string(i));
}

TEST_CASE("abandon keeps the partial and it loads as not closed") {
    rath::test::TempHome home;
    Session s;
    auto body = [](Session s) -> asio::awaitable<void> {
        auto w = co_await AsyncSessionWriter::async_open(s);
        co_await w.async_write_chunk(0, user_text_chunk("kept"));
        co_await w.async_abandon();
        co_await w.async_abandon();
        bool refused = false;
        try {
            co_await w.async_write_chunk(1, user_text_chunk("late"));
        } catch (const PersistenceError& e) {
            refused = std::string(e.what()) == "AsyncSessionWriter is closed; cannot enqueue more chunks";
        }
        CHECK(refused);
    };
    run(body(s));
    CHECK(fs::exists(session_partial_path(s.id())));
    auto p = load_session(s.id());
    CHECK_FALSE(p.closed);
    CHECK(p.chunks.size() == 1);
}

TEST_CASE("writing after close is refused") {
    rath::test::TempHome home;
    Session s;
    auto body = [](Session s) -> asio::awaitable<std::string> {
        auto w = co_await AsyncSessionWriter::async_open(s);
        co_await w.async_close();
        try {
            co_await w.async_write_chunk(0, user_text_chunk("late"));
        } catch (const PersistenceError& e) {
            co_return e.what();
        }
        co_return "accepted";
    };
    CHECK(run(body(s)) == "AsyncSessionWriter is closed; cannot enqueue more chunks");
}

TEST_CASE("dropping the last handle abandons the writer and releases its lock") {
    rath::test::TempHome home;
    Session s;
    auto body = [](Session s) -> asio::awaitable<void> {
        {
            auto w = co_await AsyncSessionWriter::async_open(s);
            co_await w.async_write_chunk(0, user_text_chunk("x"));
        }
        // The drain finishes and unlocks on the pool; retry until the lock is free.
        for (int i = 0; i < 200; ++i) {
            try {
                auto again = co_await AsyncSessionWriter::async_open(s);
                co_await again.async_close();
                co_return;
            } catch (const PersistenceError&) {
            }
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(5));
            co_await t.async_wait(asio::use_awaitable);
        }
        FAIL("the lock was never released");
    };
    run(body(s));
    CHECK(load_session(s.id()).closed);
}

TEST_CASE("a failed write is latched into the next write and into close") {
    rath::test::TempHome home;
    Session s;
    // A real write failure: a file size limit makes write(2) fail with EFBIG.
    struct rlimit old {};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto prev_handler = std::signal(SIGXFSZ, SIG_IGN);
    auto body = [](Session s, rlimit old) -> asio::awaitable<std::vector<std::string>> {
        std::vector<std::string> errors;
        auto w = co_await AsyncSessionWriter::async_open(s);
        co_await w.async_write_chunk(0, user_text_chunk("small"));
        auto size = fs::file_size(w.partial_path());
        rlimit lim{static_cast<rlim_t>(size + 64), old.rlim_max};
        ::setrlimit(RLIMIT_FSIZE, &lim);
        try {
            co_await w.async_write_chunk(1, user_text_chunk(std::string(4096, 'x')));
        } catch (const PersistenceError& e) {
            errors.push_back(e.what());
        }
        ::setrlimit(RLIMIT_FSIZE, &old);
        try {
            co_await w.async_write_chunk(2, user_text_chunk("after"));
        } catch (const PersistenceError& e) {
            errors.push_back(e.what());
        }
        try {
            co_await w.async_close();
        } catch (const PersistenceError& e) {
            errors.push_back(e.what());
        }
        co_return errors;
    };
    auto errors = run(body(s, old));
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, prev_handler);
    REQUIRE(errors.size() == 3);
    CHECK(errors[0].find("failed to write to") != std::string::npos);
    CHECK(errors[1] == errors[0]);
    CHECK(errors[2] == errors[0]);
    CHECK(fs::exists(session_file_path(s.id())));  // promoted anyway, as the spec says
    auto p = load_session(s.id());  // the torn record was cut back: the file stays loadable
    REQUIRE(p.chunks.size() == 1);     // the row after the failure was refused, not queued
    CHECK(p.chunks[0]->payload().at("content") == "small");
    CHECK(p.closed);
}

}  // TEST_SUITE
