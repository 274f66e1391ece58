// rath sessions tail on a run that is still writing its file, and sessions prune by
// count and age, on sessions persisted by real loop runs.
#include "support/wait.hpp"
#include "cli/cli_support.hpp"
#include "support/temp_dir.hpp"

#include <rath/loop/session_loop.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/testing/scripted_client.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace json = boost::json;
namespace fs = std::filesystem;
using rath::Session;
using namespace std::chrono_literals;

using rath::test::contains;
using rath::test::rath_cli;

namespace {

using rath::test::eventually;

struct Nothing {};
BOOST_DESCRIBE_STRUCT(Nothing, (), ())

// Reads `fd` into `out` until `needle` shows up, EOF, or `limit`; true when it showed up.
bool read_until(int fd, std::string& out, std::string_view needle, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!contains(out, needle) && std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        char buf[4096];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) return contains(out, needle);
        if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    }
    return contains(out, needle);
}

std::vector<Session> persist_runs(const fs::path& dir, int n) {
    rath::llm::Provider provider;
    provider.model = "cli-prune-test";
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider);
    client->rule(rath::testing::ScriptedReply::text("ok"));
    const Session agent = Session::from_agent_prompt("Answer ok.");
    std::vector<Session> out;
    for (int i = 0; i < n; ++i) {
        out.push_back(rath::run_session_loop(Session::from_user_message("run " + std::to_string(i)), agent,
                                             {.provider = provider, .client = client, .persist_path = dir}));
        out.back().synchronize();
    }
    return out;
}

std::size_t files_in(const fs::path& dir) {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
    return n;
}

}  // namespace

TEST_SUITE("cli/tail_prune") {

TEST_CASE("sessions tail prints a running session's rows as they are written and exits 0 when the run closes it") {
    rath::test::TempDir dir;
    auto release = std::make_shared<std::promise<void>>();
    std::shared_future<void> released = release->get_future().share();
    // A failed check below must not leave the run's tool (and the process exit) waiting.
    struct ReleaseAtExit {
        std::shared_ptr<std::promise<void>> p;
        bool done = false;
        void now() {
            if (!done) p->set_value();
            done = true;
        }
        ~ReleaseAtExit() { now(); }
    } release_at_exit{release};
    auto wait_tool = rath::tool::make_tool<Nothing>("wait_for_test", "Waits until the test lets it go.",
                                                    [released](Session, Nothing) {
                                                        released.wait();
                                                        return json::value("released");
                                                    });
    rath::llm::Provider provider;
    provider.model = "cli-tail-test";
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider);
    client->push(rath::testing::ScriptedReply::tool_call("call_w", "wait_for_test", "{}"));
    client->push(rath::testing::ScriptedReply::text("All done after the wait."));
    Session out = rath::run_session_loop(Session::from_user_message("wait, then answer"),
                                         Session::from_agent_prompt("You wait."),
                                         {.provider = provider, .tools = {wait_tool}, .client = client,
                                          .persist_path = dir.path()});
    const fs::path partial = dir.path() / (out.id() + std::string(rath::persistence::session_partial_suffix));
    // The run is inside its tool call: user row and the assistant's call are on disk.
    REQUIRE(eventually([&] {
        std::error_code ec;
        return fs::exists(partial, ec) && rath::persistence::load_session_file(partial).chunks.size() == 2;
    }));

    // Still open: a bounded tail gives up with exit code 1.
    auto bounded = rath_cli({"--dir", dir.path().string(), "sessions", "tail", out.id(), "--timeout", "0.3"});
    CHECK(bounded.exit_code == 1);
    CHECK(contains(bounded.out, "-> call wait_for_test (id call_w)"));
    CHECK(contains(bounded.err, "still open after 0.3 s"));

    auto child = rath::test::spawn_with_stdout_pipe(
        rath::test::bin_path("rath"), {"--dir", dir.path().string(), "sessions", "tail", out.id().substr(0, 8), "--interval", "0.05"});
    std::string seen;
    CHECK(read_until(child.out_fd, seen, "-> call wait_for_test (id call_w)", 30s));
    CHECK_FALSE(contains(seen, "All done"));
    release_at_exit.now();  // the rest of the run is written while tail follows the file
    CHECK(read_until(child.out_fd, seen, "closed  usage", 30s));
    ::close(child.out_fd);
    CHECK(rath::test::wait_exit_code(child.pid) == 0);
    CHECK(out.text() == std::optional<std::string>("All done after the wait."));
    CHECK(contains(seen, "[2] tool_result wait_for_test (id call_w)\n    \"released\"\n"));
    CHECK(contains(seen, "[3] assistant\n    All done after the wait.\n"));
}

TEST_CASE("sessions prune --keep removes all but the newest, --dry-run removes nothing, --older-than goes by age") {
    rath::test::TempDir dir;
    auto runs = persist_runs(dir.path(), 3);
    REQUIRE(files_in(dir.path()) == 3);
    const std::string d = dir.path().string();

    auto dry = rath_cli({"--dir", d, "sessions", "prune", "--keep", "1", "--dry-run"});
    CHECK(dry.exit_code == 0);
    CHECK(contains(dry.out, "would remove " + runs[0].id()));
    CHECK(contains(dry.out, "would remove " + runs[1].id()));
    CHECK_FALSE(contains(dry.out, runs[2].id()));
    CHECK(contains(dry.out, "2 would be removed, 1 kept"));
    CHECK(files_in(dir.path()) == 3);

    auto young = rath_cli({"--dir", d, "--json", "sessions", "prune", "--older-than", "1h"});
    CHECK(young.exit_code == 0);
    auto o = json::parse(young.out).as_object();
    CHECK(o.at("removed").as_array().empty());
    CHECK(o.at("kept").as_int64() == 3);

    auto keep = rath_cli({"--dir", d, "sessions", "prune", "--keep", "1"});
    CHECK(keep.exit_code == 0);
    CHECK(contains(keep.out, "2 removed, 1 kept"));
    REQUIRE(files_in(dir.path()) == 1);
    CHECK(fs::exists(dir.path() / (runs[2].id() + ".jsonl")));

    std::this_thread::sleep_for(1100ms);
    auto old = rath_cli({"--dir", d, "sessions", "prune", "--older-than", "1s"});
    CHECK(old.exit_code == 0);
    CHECK(contains(old.out, "removed " + runs[2].id()));
    CHECK(files_in(dir.path()) == 0);

    CHECK(rath_cli({"--dir", d, "sessions", "prune"}).exit_code == 2);  // neither bound
    CHECK(rath_cli({"--dir", d, "sessions", "prune", "--older-than", "3 fortnights"}).exit_code == 2);
}

}  // TEST_SUITE
