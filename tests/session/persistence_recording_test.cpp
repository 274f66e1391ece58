// The model-call recording beside a persisted transcript: written by the session
// writer (record_llm) in queue order, skipped by the listing, deleted with its session.
#include "support/env.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/session.hpp>
#include <rath/session/persistence/async_writer.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using namespace rath;
using namespace rath::persistence;
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

}  // namespace

TEST_SUITE("session/persistence/recording") {

TEST_CASE("the recording's path sits beside the transcript, for the final and the partial name") {
    CHECK(recording_path_for("/d/abc.jsonl") == fs::path("/d/abc.llm.jsonl"));
    CHECK(recording_path_for("/d/abc.jsonl.__partial__") == fs::path("/d/abc.llm.jsonl"));
    CHECK(recording_path_for("/d/run.log") == fs::path("/d/run.log.llm.jsonl"));
    CHECK(is_recording_path("/d/abc.llm.jsonl"));
    CHECK_FALSE(is_recording_path("/d/abc.jsonl"));
}

TEST_CASE("a writer with record_llm writes the recording lines in queue order beside the transcript") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    auto body = [](Session s) -> asio::awaitable<fs::path> {
        AsyncWriterOptions o;
        o.writer.record_llm = true;
        auto w = co_await AsyncSessionWriter::async_open(s, o);
        co_await w.async_enqueue_recording("{\"n\": 1}\n");
        co_await w.async_enqueue_chunk(0, s.chunks()[0]);
        co_await w.async_enqueue_recording("{\"n\": 2}\n");
        co_await w.async_close();
        co_return w.path();
    };
    const fs::path transcript = async::block_on(async::Runtime::default_runtime(), body(s));
    CHECK(read(recording_path_for(transcript)) == "{\"n\": 1}\n{\"n\": 2}\n");
    CHECK(load_session(s.id()).chunks.size() == 1);

    // The listing shows the session once and does not report the recording as a bad file.
    std::vector<PersistenceError> skipped;
    CHECK(list_persisted_sessions({.skipped = &skipped}).size() == 1);
    CHECK(skipped.empty());
    CHECK(delete_session(s.id()));
    CHECK_FALSE(fs::exists(recording_path_for(transcript)));
}

TEST_CASE("a recording line queued on a writer without record_llm fails, latched like a failed write") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    auto body = [](Session s) -> asio::awaitable<void> {
        auto w = co_await AsyncSessionWriter::async_open(s);
        co_await w.async_enqueue_recording("{}\n");
        co_await w.async_close();
    };
    CHECK_THROWS_WITH_AS(async::block_on(async::Runtime::default_runtime(), body(s)),
                         doctest::Contains("was opened without record_llm"), PersistenceError);
}

}  // TEST_SUITE
