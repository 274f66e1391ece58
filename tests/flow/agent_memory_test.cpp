#include "loop/loop_support.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/flow.hpp>
#include <rath/llm/error.hpp>
#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"
#include "tests/support/env.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/temp_dir.hpp"

#include <rath/config/store.hpp>

#include <chrono>
#include <fstream>
#include <future>
#include <regex>
#include <string>
#include <vector>

using rath::Session;
namespace flow = rath::flow;
namespace mem = rath::memory;
using rath::test::expect;

namespace {

const std::string dark_note = "The user prefers a dark colour theme at night.";
const std::string lang_note = "The user reads English and writes Python.";

// A local store in a temp dir holding the two notes of memory_flow.md §2.9's worked
// example, so the recall order and scores are the spec's.
struct NotesStore {
    rath::test::TempDir dir;
    mem::MemoryStorePtr store;
    NotesStore() {
        store = mem::make_local_memory_backend()->open(rath::test::spec_at(dir.path()));
        expect<mem::WriteResult>(store->dispatch(mem::OpWrite{"memory://user/memories/preferences/dark_mode", dark_note}));
        expect<mem::WriteResult>(store->dispatch(mem::OpWrite{"memory://user/memories/preferences/language", lang_note}));
    }
    ~NotesStore() {
        if (!store->closed()) store->backend().close(store);
    }
};

std::string dark_row() {
    return "[untrusted memory:memory://user/memories/preferences/dark_mode] " + dark_note;
}
std::string lang_row() {
    return "[untrusted memory:memory://user/memories/preferences/language] " + lang_note;
}

std::string content_of(const rath::ChunkRowPtr& row) {
    const auto* c = row->payload().if_contains("content");
    return c && c->is_string() ? std::string(c->as_string()) : std::string();
}

std::string field(const boost::json::value& message, const char* key) {
    const auto& v = message.at(key);
    return v.is_string() ? std::string(v.as_string()) : std::string("<not a string>");
}

// Waits for the first commit_on_forward result of a test.
struct CommitWatch {
    std::promise<std::pair<std::string, mem::MemoryResult>> promise;
    std::future<std::pair<std::string, mem::MemoryResult>> future = promise.get_future();
    std::atomic<int> calls{0};
    auto callback() {
        return [this](const Session& out, const mem::MemoryResult& r) {
            if (calls.fetch_add(1) == 0) promise.set_value({out.id(), r});
        };
    }
    std::pair<std::string, mem::MemoryResult> wait() {
        REQUIRE(future.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
        return future.get();
    }
};

}  // namespace

TEST_SUITE("flow/agent_memory") {

TEST_CASE("an agent with memory sends the recalled notes as untrusted-memory user rows before the user's message") {
    NotesStore notes;
    auto s = rath::test::scripted();
    s.client->rule(rath::testing::ScriptedReply::text("Dark theme it is."));
    flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client},
                                      .memory = notes.store,
                                      .memory_inject = std::make_shared<flow::DefaultRecallInjection>(3)});
    CHECK(notes.store->refcount() == 1);

    Session in = Session::from_user_message("reading code at night");
    Session out = agent(in);
    auto rows = out.chunks();

    auto requests = s.client->requests();
    REQUIRE(requests.size() == 1);
    const auto& m = requests[0].messages;
    REQUIRE(m.size() == 4);
    CHECK(m[0].role == "system");
    CHECK(m[1].role == "user");
    CHECK(m[1].content == dark_row());  // 1.312: the match first
    CHECK(m[2].role == "user");
    CHECK(m[2].content == lang_row());  // 0.000: zero-score fill
    CHECK(m[3].content == "reading code at night");

    // The injected rows stay in the output; the loop's input is a fork of the caller's.
    REQUIRE(rows.size() == 4);
    CHECK(content_of(rows[0]) == dark_row());
    CHECK(content_of(rows[3]) == "Dark theme it is.");
    CHECK(in.chunks().size() == 1);
    auto parents = out.parent_session_ids();
    REQUIRE(!parents.empty());
    CHECK(parents[0] != in.id());
}

TEST_CASE("the recall query is the last user row with text, and top_k and target_uri come from the policy") {
    NotesStore notes;
    expect<mem::WriteResult>(notes.store->dispatch(mem::OpWrite{"memory://agent/memories/style", "Answer at night in one line."}));
    auto s = rath::test::scripted();
    s.client->rule(rath::testing::ScriptedReply::text("ok"));
    flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client},
                                      .memory = notes.store,
                                      .memory_inject = std::make_shared<flow::DefaultRecallInjection>(
                                          1, "memory://user/memories")});
    Session in(rath::ChunkTable{rath::user_text_chunk("reading code at night"), rath::user_text_chunk("   ")});
    (void)agent(in).chunks();
    auto m = s.client->requests().at(0).messages;
    REQUIRE(m.size() == 4);  // system, one memory row, the two user rows
    CHECK(m[1].content == dark_row());
}

TEST_CASE("a chain b(a(in)) with memory recalls for b after a finished, without blocking the caller") {
    NotesStore notes;
    auto s = rath::test::scripted();
    s.client->push(rath::testing::ScriptedReply::text("first answer"));
    s.client->push(rath::testing::ScriptedReply::text("second answer"));
    flow::Agent a("You answer.", {.loop = {.provider = s.provider, .client = s.client}});
    flow::Agent b("You answer again.", {.loop = {.provider = s.provider, .client = s.client},
                                        .memory = notes.store,
                                        .memory_inject = std::make_shared<flow::DefaultRecallInjection>(1)});
    Session out = b(a(Session::from_user_message("reading code at night")));
    CHECK(out.text() == "second answer");
    auto requests = s.client->requests();
    REQUIRE(requests.size() == 2);
    const auto& m = requests[1].messages;  // b's: its prompt, the memory row, a's transcript
    REQUIRE(m.size() == 4);
    CHECK(m[0].content == "You answer again.");
    CHECK(m[1].content == dark_row());
    CHECK(m[2].content == "reading code at night");
    CHECK(m[3].content == "first answer");
}

TEST_CASE("an input that failed fails the memory agent's output with the same error, once") {
    NotesStore notes;
    auto s = rath::test::scripted();  // nothing scripted: a's run fails
    flow::Agent a("You answer.", {.loop = {.provider = s.provider, .client = s.client}});
    flow::Agent b("You answer again.", {.loop = {.provider = s.provider, .client = s.client}, .memory = notes.store});
    Session out = b(a(Session::from_user_message("reading code at night")));
    CHECK_THROWS_AS(out.synchronize(), rath::ProviderConfigError);
    CHECK_NOTHROW(out.synchronize());
    CHECK(s.client->requests().size() == 1);  // b never called the model
}

TEST_CASE("a transcript with no user text injects nothing and the run goes on") {
    NotesStore notes;
    auto s = rath::test::scripted();
    s.client->rule(rath::testing::ScriptedReply::text("ok"));
    flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client}, .memory = notes.store});
    (void)agent(Session::from_user_message("  \n")).chunks();
    auto m = s.client->requests().at(0).messages;
    CHECK(m.size() == 2);
}

TEST_CASE("a store closed behind the agent's back injects nothing, with a warning, and the run still answers") {
    NotesStore notes;
    auto s = rath::test::scripted();
    s.client->rule(rath::testing::ScriptedReply::text("still here"));
    flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client}, .memory = notes.store});
    notes.store->backend().close(notes.store);  // the force-close
    rath::test::LogCapture logs;
    Session out = agent(Session::from_user_message("reading code at night"));
    CHECK(out.text() == "still here");
    CHECK(s.client->requests().at(0).messages.size() == 2);
    auto warnings = logs.messages("rath.flow");
    REQUIRE(!warnings.empty());
    CHECK(warnings[0].rfind("memory injection skipped: store is closed ('", 0) == 0);
}

TEST_CASE("async_forward injects the recalled rows like forward") {
    NotesStore notes;
    auto s = rath::test::scripted();
    s.client->rule(rath::testing::ScriptedReply::text("ok"));
    flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client},
                                      .memory = notes.store,
                                      .memory_inject = std::make_shared<flow::DefaultRecallInjection>(1)});
    auto& rt = rath::async::Runtime::default_runtime();
    Session out = rath::async::block_on(rt, agent->async_forward(Session::from_user_message("reading code at night")));
    auto rows = out.chunks();
    REQUIRE(rows.size() == 3);
    CHECK(content_of(rows[0]) == dark_row());
    CHECK(s.client->requests().at(0).messages.at(1).content == dark_row());
}

TEST_CASE("commit_on_forward commits the finished run's transcript, memory rows included, after the output is ready") {
    NotesStore notes;
    auto s = rath::test::scripted();
    s.client->rule(rath::testing::ScriptedReply::text("Dark theme it is."));
    CommitWatch watch;
    flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client},
                                      .memory = notes.store,
                                      .memory_inject = std::make_shared<flow::DefaultRecallInjection>(1),
                                      .commit_on_forward = true,
                                      .on_commit = watch.callback()});
    Session out = agent(Session::from_user_message("reading code at night"));
    CHECK(out.text() == "Dark theme it is.");

    auto [id, result] = watch.wait();
    CHECK(id == out.id());
    const auto& commit = expect<mem::CommitResult>(result);
    REQUIRE(commit.archived_uri);
    std::regex shape("memory://session/" + out.id() + "/commits/[0-9]{8}T[0-9]{12}/messages\\.json");
    CHECK(std::regex_match(*commit.archived_uri, shape));
    CHECK(commit.extracted_count == -1);

    const mem::MemoryResult read_r = notes.store->dispatch(mem::OpRead{*commit.archived_uri});
    const auto& read = expect<mem::ReadResult>(read_r);
    auto archived = boost::json::parse(std::get<std::string>(read.data)).as_array();
    REQUIRE(archived.size() == 3);
    CHECK(field(archived[0], "role") == "user");
    CHECK(field(archived[0], "content") == dark_row());
    CHECK(field(archived[1], "content") == "reading code at night");
    CHECK(field(archived[2], "role") == "assistant");
    CHECK(field(archived[2], "content") == "Dark theme it is.");
    // The commit held its own reference while it ran and gave it back.
    CHECK(notes.store->refcount() == 1);
}

TEST_CASE("a failed run is not committed and its error still reaches the output, once") {
    NotesStore notes;
    auto s = rath::test::scripted();  // no reply scripted for the first run: it fails
    CommitWatch watch;
    flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client},
                                      .memory = notes.store,
                                      .commit_on_forward = true,
                                      .on_commit = watch.callback()});
    Session failed = agent(Session::from_user_message("first"));
    CHECK_THROWS_AS(failed.synchronize(), rath::ProviderConfigError);

    s.client->rule(rath::testing::ScriptedReply::text("fine"));
    Session ok = agent(Session::from_user_message("second"));
    auto [id, result] = watch.wait();
    CHECK(id == ok.id());
    const mem::MemoryResult list_r = notes.store->dispatch(mem::OpList{"memory://session"});
    const auto& list = expect<mem::ListResult>(list_r);
    REQUIRE(list.entries.size() == 1);
    CHECK(list.entries[0].name == ok.id());
    CHECK(watch.calls.load() == 1);
}

TEST_CASE("remember_memory, recall_memory and commit_memory run the store's write, find and commit") {
    NotesStore notes;
    auto s = rath::test::scripted();
    flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client}, .memory = notes.store});

    const mem::MemoryResult w_r = agent->remember_memory("The user codes late at night.", "agent", "habits");
    const auto& w = expect<mem::WriteResult>(w_r);
    CHECK(std::regex_match(w.uri, std::regex("memory://agent/memories/habits/[0-9a-f]{8}")));
    CHECK(w.bytes_written == std::string("The user codes late at night.").size());

    const mem::MemoryResult found_r = agent->recall_memory("late night", 2);
    const auto& found = expect<mem::FindResult>(found_r);
    REQUIRE(found.hits.size() == 2);
    CHECK(found.hits[0].uri == w.uri);
    const mem::MemoryResult scoped_r = agent->recall_memory("night", 4, std::string("memory://user/memories/preferences"));
    const auto& scoped = expect<mem::FindResult>(scoped_r);
    CHECK(scoped.hits.size() == 2);

    Session talk(rath::ChunkTable{rath::system_text_chunk("sys"), rath::user_text_chunk("hi"),
                                  rath::tool_feedback_chunk("c1", "echo", "tool body")});
    const mem::MemoryResult c_r = agent->commit_memory(talk);
    const auto& c = expect<mem::CommitResult>(c_r);
    REQUIRE(c.archived_uri);
    const mem::MemoryResult read_r = notes.store->dispatch(mem::OpRead{*c.archived_uri});
    const auto& read = expect<mem::ReadResult>(read_r);
    auto archived = boost::json::parse(std::get<std::string>(read.data)).as_array();
    REQUIRE(archived.size() == 2);  // the tool result row is left out
    CHECK(archived[0] == boost::json::parse(R"({"role":"system","content":"sys"})"));

    auto& rt = rath::async::Runtime::default_runtime();
    const auto r = rath::async::block_on(rt, agent->async_recall_memory("dark colour", 1));
    CHECK(expect<mem::FindResult>(r).hits.at(0).uri == "memory://user/memories/preferences/dark_mode");
    const auto failure = rath::async::block_on(rt, agent->async_commit_memory(Session::from_user_message("x"), false));
    CHECK(expect<mem::CommitResult>(failure).archived_uri.has_value());
}

TEST_CASE("the agent holds one reference on its store; close() releases it and the memory calls then throw") {
    NotesStore notes;
    auto s = rath::test::scripted();
    {
        mem::MemoryStoreGuard guard(notes.store);
        flow::Agent agent("You answer.", {.loop = {.provider = s.provider, .client = s.client}, .memory = notes.store});
        CHECK(notes.store->refcount() == 2);
        CHECK(agent->agent()->memory == notes.store);
        CHECK(agent->agent()->repr().find("(memory): MemoryStore(backend='local', handle='") != std::string::npos);
        auto copy = agent->clone();
        CHECK(notes.store->refcount() == 3);
        copy.reset();
        CHECK(notes.store->refcount() == 2);
        agent->close();
        agent->close();
        CHECK(notes.store->refcount() == 1);
        CHECK(agent->memory() == nullptr);
        CHECK(agent->agent()->memory == nullptr);
        CHECK_THROWS_WITH(agent->recall_memory("x"), "agent has no memory store");
        CHECK_THROWS_WITH(agent->remember_memory("x"), "agent has no memory store");
    }
    CHECK(notes.store->closed());  // the guard's release was the last
    CHECK_THROWS_AS(flow::Agent("x", {.loop = {.provider = s.provider, .client = s.client}, .memory = notes.store}),
                    mem::MemoryStoreClosed);
}

TEST_CASE("open_memory takes a config entry before a backend of the same name, then a backend name") {
    rath::test::TempHome home;
    rath::test::TempDir store_dir;
    rath::config::ConfigStore::clear_cache();
    auto s = rath::test::scripted();

    // No config entry: the "local" backend, a new store under <config-dir>/memory/local/.
    auto fresh = flow::open_memory("local");
    CHECK(fresh->refcount() == 0);
    CHECK(fresh->handle().find((home.path() / "memory" / "local").string()) == 0);
    {
        flow::Agent agent("x", {.loop = {.provider = s.provider, .client = s.client}, .memory = fresh});
        CHECK(fresh->refcount() == 1);
    }
    CHECK(fresh->closed());  // the agent's reference was the only one

    {
        std::ofstream out(home.path() / "config.json");
        out << R"({"memory": {"providers": {"local": {"backend_kind": "local", "path": ")" << store_dir.path().string()
            << R"("}}}})";
    }
    rath::config::ConfigStore::clear_cache();
    auto configured = flow::open_memory("local");
    CHECK(std::filesystem::equivalent(configured->handle(), store_dir.path()));
    configured->backend().close(configured);

    auto by_spec = flow::open_memory(rath::test::spec_at(store_dir.path()));
    CHECK(std::filesystem::equivalent(by_spec->handle(), store_dir.path()));
    by_spec->backend().close(by_spec);

    CHECK_THROWS_AS((void)flow::open_memory("no-such-backend"), mem::MemoryBackendNotFound);
    rath::config::ConfigStore::clear_cache();
}

}  // TEST_SUITE
