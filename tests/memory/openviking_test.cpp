// The OpenViking adapter (memory_flow.md §3) against a loopback server that implements
// OpenViking's documented endpoints, envelopes and error codes (viking_server.hpp).
#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"
#include "tests/memory/viking_server.hpp"

#include <chrono>
#include <fstream>

using namespace rath::memory;
using rath::test::expect;
using rath::test::expect_failure;
namespace json = boost::json;

namespace {

MemoryStoreSpec viking_spec(const std::string& url, json::object extra = {}) {
    MemoryStoreSpec s;
    extra["url"] = url;
    s.options = std::move(extra);
    return s;
}

}  // namespace

TEST_CASE("openviking is a registered backend kind with the full capabilities of §1.5") {
    testing::reset_memory_registry();
    auto names = memory_backend_names();
    CHECK(std::find(names.begin(), names.end(), "openviking") != names.end());
    CHECK(is_memory_backend_available("openviking"));
    auto b = get_memory_backend("openviking");
    CHECK(b->name() == "openviking");
    auto caps = b->capabilities();
    CHECK(caps.scope_model == ScopeModel::hybrid);
    CHECK((caps.supports_write && caps.supports_read && caps.supports_list && caps.supports_tree &&
           caps.supports_vector_search && caps.supports_intent_search && caps.supports_resource_ingest &&
           caps.supports_session_commit && caps.supports_l0_l1_l2));
}

TEST_CASE("an openviking store needs a url; its handle is 32 hex digits and close is idempotent") {
    auto b = make_openviking_memory_backend();
    CHECK_THROWS_WITH_AS((void)b->open(MemoryStoreSpec{}),
                         "MemoryStoreSpec.options must carry either 'url' (HTTP mode) or 'path' (embedded mode)",
                         MemoryBackendError);
    MemoryStoreSpec embedded;
    embedded.options = json::object{{"path", "/tmp/ov-data"}};
    CHECK_THROWS_WITH_AS((void)b->open(embedded), doctest::Contains("failed to open OpenViking embedded client at /tmp/ov-data"),
                         MemoryBackendError);
    CHECK_THROWS_WITH_AS((void)b->open(viking_spec("http://127.0.0.1:1", {{"timeout", -1.0}})),
                         doctest::Contains("failed to open OpenViking HTTP client at http://127.0.0.1:1"),
                         MemoryBackendError);
    auto store = b->open(viking_spec("http://127.0.0.1:1/"));
    CHECK(store->handle().size() == 32);
    CHECK(store->handle().find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(b->store_count() == 1);
    b->close(store);
    b->close(store);
    CHECK(b->store_count() == 0);
    CHECK_THROWS_AS((void)store->dispatch(OpList{"memory://user"}), MemoryStoreClosed);
}

TEST_CASE("every request carries the API key and the account, user and agent headers") {
    rath::test::VikingServer server("sk-root");
    server.put("viking://user/memories/a.md", "alpha");
    auto b = make_openviking_memory_backend();
    auto spec = viking_spec(server.url(), {{"api_key", "sk-root"}});
    spec.user_id = "alice";
    spec.agent_id = "rath-agent";
    auto store = b->open(spec);
    (void)expect<ListResult>(store->dispatch(OpList{"memory://user/memories"}));
    auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].method == "GET");
    CHECK(reqs[0].target == "/api/v1/fs/ls?uri=viking://user/memories");
    CHECK(reqs[0].headers.at("x-api-key") == "sk-root");
    CHECK(reqs[0].headers.at("x-openviking-account") == "default");
    CHECK(reqs[0].headers.at("x-openviking-user") == "alice");
    CHECK(reqs[0].headers.at("x-openviking-agent") == "rath-agent");
    b->close(store);

    auto bad = b->open(viking_spec(server.url(), {{"api_key", "wrong"}}));
    auto f = expect_failure(bad->dispatch(OpList{"memory://user"}), FailureKind::unauthorized);
    CHECK(f.message == "Missing or invalid API key");
    CHECK(f.detail == std::optional<std::string>("UnauthenticatedError"));
    b->close(bad);
}

TEST_CASE("read, list, tree and write map to the content and fs endpoints with memory:// URIs out") {
    rath::test::VikingServer server;
    server.put("viking://user/memories/prefs/theme.md", "dark theme at night");
    server.put("viking://user/memories/prefs/deep/x.md", "deep");
    server.put("viking://user/memories/profile.md", "writes C++");
    auto b = make_openviking_memory_backend();
    auto store = b->open(viking_spec(server.url()));

    auto r = expect<ReadResult>(store->dispatch(OpRead{"memory://user/memories/profile.md"}));
    CHECK(r.uri == "memory://user/memories/profile.md");
    CHECK(std::get<std::string>(r.data) == "writes C++");
    CHECK(r.level == ReadLevel::detail);
    CHECK(server.requests().back().target ==
          "/api/v1/content/read?uri=viking://user/memories/profile.md&offset=0&limit=-1");
    auto raw = expect<ReadResult>(store->dispatch(OpRead{"viking://user/memories/profile.md", ReadLevel::detail, std::nullopt}));
    CHECK(raw.uri == "memory://user/memories/profile.md");
    CHECK(std::get<std::vector<std::byte>>(raw.data).size() == 10);
    auto abs = expect<ReadResult>(store->dispatch(OpRead{"memory://user/memories/prefs", ReadLevel::abstract}));
    CHECK(std::get<std::string>(abs.data) == "Abstract of viking://user/memories/prefs");
    CHECK(abs.level == ReadLevel::abstract);
    auto ov = expect<ReadResult>(store->dispatch(OpRead{"memory://user/memories/prefs", ReadLevel::overview}));
    CHECK(std::get<std::string>(ov.data) == "Overview of viking://user/memories/prefs");
    // The server keeps L0/L1 for directories only.
    auto f = expect_failure(store->dispatch(OpRead{"memory://user/memories/profile.md", ReadLevel::abstract}),
                            FailureKind::invalid_uri);
    CHECK(f.detail == std::optional<std::string>("InvalidArgumentError"));
    expect_failure(store->dispatch(OpRead{"memory://user/memories/none.md"}), FailureKind::not_found);

    auto ls = expect<ListResult>(store->dispatch(OpList{"memory://user/memories"}));
    REQUIRE(ls.entries.size() == 2);
    CHECK(ls.entries[0] == MemoryEntry{"prefs", "memory://user/memories/prefs/", true, 4096});
    CHECK(ls.entries[1] == MemoryEntry{"profile.md", "memory://user/memories/profile.md", false, 10});

    // Pre-order, keeping nodes at most `depth` '/' deeper than the op's URI (a
    // directory's URI ends in '/', which counts).
    auto uris_at = [&](int depth) {
        MemoryResult r = store->dispatch(OpTree{"memory://user/memories", depth});
        std::vector<std::string> uris;
        for (const auto& e : expect<ListResult>(r).entries) uris.push_back(e.uri);
        return uris;
    };
    CHECK(uris_at(1) == std::vector<std::string>{"memory://user/memories/profile.md"});
    CHECK(uris_at(2) == std::vector<std::string>{"memory://user/memories/prefs/", "memory://user/memories/prefs/theme.md",
                                                 "memory://user/memories/profile.md"});
    CHECK(uris_at(3).size() == 5);

    auto w = expect<WriteResult>(store->dispatch(OpWrite{"viking://user/memories/profile.md", "writes Rust too"}));
    CHECK(w == WriteResult{"memory://user/memories/profile.md", 15});
    CHECK(server.file("viking://user/memories/profile.md") == std::optional<std::string>("writes Rust too"));
    auto body = json::parse(server.requests().back().body).as_object();
    CHECK(body.at("uri") == "viking://user/memories/profile.md");
    CHECK(body.at("mode") == "replace");
    CHECK(body.at("wait") == false);
    CHECK_FALSE(body.contains("timeout"));  // null members are left out, as the SDK does
    // The server only updates existing files.
    expect_failure(store->dispatch(OpWrite{"memory://user/memories/new.md", "x"}), FailureKind::not_found);
    auto before = server.requests().size();
    auto inv = expect_failure(store->dispatch(OpWrite{"memory://elsewhere/x", "x"}), FailureKind::invalid_uri);
    CHECK(inv.message == "unsupported URI scope: 'memory://elsewhere/x'");
    CHECK(inv.detail == std::optional<std::string>("MemoryOpWrite"));
    CHECK(server.requests().size() == before);  // refused before any request
    b->close(store);
}

TEST_CASE("find and search merge memories, resources and skills by score with the level and snippet mapped") {
    rath::test::VikingServer server;
    server.put("viking://user/memories/editor.md", "User prefers vim\nwith a dark theme");
    server.put("viking://resources/guide/vim.md", "A guide to vim and dark colour schemes");
    server.put("viking://resources/guide/food.md", "Noodles");
    auto b = make_openviking_memory_backend();
    auto store = b->open(viking_spec(server.url()));
    auto hits = expect<FindResult>(store->dispatch(OpFind{"vim dark guide", std::nullopt, 5})).hits;
    REQUIRE(hits.size() == 2);
    CHECK(hits[0].uri == "memory://resources/guide/vim.md");  // 3/3 words, from `resources`
    CHECK(hits[0].score == doctest::Approx(1.0));
    CHECK(hits[0].snippet == std::optional<std::string>("A guide to vim and dark colour schemes"));
    CHECK(hits[0].level == std::optional<ReadLevel>(ReadLevel::detail));
    CHECK(hits[1].uri == "memory://user/memories/editor.md");  // 2/3, from `memories`
    CHECK(hits[1].snippet == std::optional<std::string>("User prefers vim"));
    auto body = json::parse(server.requests().back().body).as_object();
    CHECK(body == json::parse(R"({"query":"vim dark guide","target_uri":"","limit":5})").as_object());

    auto scoped = expect<FindResult>(store->dispatch(OpFind{"vim", std::string("memory://user/memories"), 8})).hits;
    REQUIRE(scoped.size() == 1);
    CHECK(json::parse(server.requests().back().body).at("target_uri") == "viking://user/memories");

    auto searched = expect<FindResult>(store->dispatch(OpSearch{"noodles", std::string("s1"), std::nullopt, 3})).hits;
    REQUIRE(searched.size() == 1);
    CHECK(searched[0].uri == "memory://resources/guide/food.md");
    CHECK(server.requests().back().target == "/api/v1/search/search");
    CHECK(json::parse(server.requests().back().body) ==
          json::parse(R"({"query":"noodles","target_uri":"","session_id":"s1","limit":3})"));
    b->close(store);
}

TEST_CASE("server error codes map to failure kinds with the SDK class as detail (§3.5)") {
    rath::test::VikingServer server;
    auto b = make_openviking_memory_backend();
    auto store = b->open(viking_spec(server.url()));
    struct Case {
        int status;
        const char* code;
        FailureKind kind;
        const char* detail;
    };
    // HTTP statuses as OpenViking's error-code table documents them.
    const Case cases[] = {
        {404, "NOT_FOUND", FailureKind::not_found, "NotFoundError"},
        {400, "INVALID_URI", FailureKind::invalid_uri, "InvalidURIError"},
        {400, "INVALID_ARGUMENT", FailureKind::invalid_uri, "InvalidArgumentError"},
        {412, "FAILED_PRECONDITION", FailureKind::invalid_uri, "FailedPreconditionError"},
        {403, "PERMISSION_DENIED", FailureKind::unauthorized, "PermissionDeniedError"},
        {401, "UNAUTHENTICATED", FailureKind::unauthorized, "UnauthenticatedError"},
        {501, "UNIMPLEMENTED", FailureKind::unsupported, "UnimplementedError"},
        {500, "NOT_INITIALIZED", FailureKind::unsupported, "NotInitializedError"},
        {504, "DEADLINE_EXCEEDED", FailureKind::timeout, "DeadlineExceededError"},
        {503, "UNAVAILABLE", FailureKind::transport, "UnavailableError"},
        {409, "ABORTED", FailureKind::transport, "AbortedError"},
        {429, "RESOURCE_EXHAUSTED", FailureKind::transport, "ResourceExhaustedError"},
        {409, "CONFLICT", FailureKind::internal, "ConflictError"},
        {409, "ALREADY_EXISTS", FailureKind::internal, "AlreadyExistsError"},
        {500, "INTERNAL", FailureKind::internal, "InternalError"},
        {500, "PROCESSING_ERROR", FailureKind::extraction_failed, "ProcessingError"},
        {500, "EMBEDDING_FAILED", FailureKind::extraction_failed, "EmbeddingFailedError"},
        {500, "VLM_FAILED", FailureKind::extraction_failed, "VLMFailedError"},
        {410, "SESSION_EXPIRED", FailureKind::store_closed, "SessionExpiredError"},
        {500, "SOMETHING_NEW", FailureKind::internal, "OpenVikingError"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.code);
        server.fail_next({c.status, c.code, std::string("boom: ") + c.code});
        auto f = expect_failure(store->dispatch(OpFind{"q"}), c.kind);
        CHECK(f.message == std::string("boom: ") + c.code);
        CHECK(f.detail == std::optional<std::string>(c.detail));
    }
    server.fail_next({502, "", ""});  // a proxy's HTML page, not the envelope
    auto html = expect_failure(store->dispatch(OpList{"memory://user"}), FailureKind::internal);
    CHECK(html.message == "HTTP 502: <html>bad gateway</html>");
    b->close(store);
}

TEST_CASE("an unreachable server is a transport failure and a slow one a timeout failure") {
    auto b = make_openviking_memory_backend();
    std::string dead_url;
    {
        rath::test::VikingServer gone;
        dead_url = gone.url();
    }
    auto dead = b->open(viking_spec(dead_url));
    expect_failure(dead->dispatch(OpFind{"q"}), FailureKind::transport);
    b->close(dead);

    rath::test::VikingServer slow;
    slow.set_delay(std::chrono::milliseconds(1500));
    auto store = b->open(viking_spec(slow.url(), {{"timeout", 0.2}}));
    auto t0 = std::chrono::steady_clock::now();
    expect_failure(store->dispatch(OpList{"memory://user"}), FailureKind::timeout);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1400));
    b->close(store);
}

TEST_CASE("a resource is sent by URL, or uploaded first when it is a local file") {
    rath::test::VikingServer server;
    rath::test::TempDir dir;
    auto b = make_openviking_memory_backend();
    auto store = b->open(viking_spec(server.url()));
    auto w = expect<WriteResult>(store->dispatch(OpResource{"https://example.com/docs/guide.md", std::nullopt, "docs"}));
    CHECK(w == WriteResult{"memory://resources/guide", 0});
    auto body = json::parse(server.requests().back().body).as_object();
    CHECK(body.at("path") == "https://example.com/docs/guide.md");
    CHECK_FALSE(body.contains("to"));
    CHECK(body.at("reason") == "docs");
    CHECK(body.at("wait") == true);

    std::ofstream(dir.path() / "notes.txt", std::ios::binary) << "local notes\r\nline two";
    auto local = expect<WriteResult>(store->dispatch(
        OpResource{(dir.path() / "notes.txt").string(), std::string("memory://resources/mine")}));
    CHECK(local == WriteResult{"memory://resources/mine", 0});
    auto reqs = server.requests();
    REQUIRE(reqs.size() == 3);
    CHECK(reqs[1].target == "/api/v1/resources/temp_upload");
    CHECK(reqs[1].headers.at("content-type").starts_with("multipart/form-data; boundary="));
    auto add = json::parse(reqs[2].body).as_object();
    CHECK(add.at("temp_file_id") == "upload_1");
    CHECK(add.at("source_name") == "notes.txt");
    CHECK(add.at("to") == "viking://resources/mine");
    CHECK(server.file("viking://resources/mine/notes.txt") == std::optional<std::string>("local notes\r\nline two"));

    auto missing = expect_failure(store->dispatch(OpResource{(dir.path() / "absent.txt").string()}), FailureKind::not_found);
    CHECK(missing.message == "resource source not found: " + (dir.path() / "absent.txt").string());
    b->close(store);
}

TEST_CASE("a commit adds the messages and commits at once; with wait and a timeout it waits for the slow extraction") {
    rath::test::VikingServer server("", std::chrono::milliseconds(400));
    auto b = make_openviking_memory_backend();
    auto store = b->open(viking_spec(server.url()));
    std::vector<json::object> msgs = {
        {{"role", "user"}, {"content", "I prefer vim"}},
        {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array{}}},  // tool-call only: skipped
        {{"role", "assistant"}, {"parts", json::array{json::object{{"type", "text"}, {"text", "Noted."}}}}},
        {{"content", "role defaults to user"}},
    };
    auto t0 = std::chrono::steady_clock::now();
    auto quick = expect<CommitResult>(store->dispatch(OpCommit{"s1", msgs}));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(400));
    CHECK(quick.task_id == std::optional<std::string>("task-1"));
    CHECK(quick.archived_uri == std::optional<std::string>("memory://session/s1/history/archive_1"));
    CHECK(quick.extracted_count == -1);
    auto reqs = server.requests();
    REQUIRE(reqs.size() == 5);
    CHECK(reqs[0].target == "/api/v1/sessions");
    CHECK(reqs[1].target == "/api/v1/sessions/s1/messages");
    CHECK(json::parse(reqs[2].body).as_object().contains("parts"));
    CHECK(json::parse(reqs[3].body).at("role") == "user");
    CHECK(reqs[4].target == "/api/v1/sessions/s1/commit");

    // The session exists now: create_session's ALREADY_EXISTS is ignored. The wait
    // blocks until the background extraction is done, then the task's counts add up.
    t0 = std::chrono::steady_clock::now();
    OpCommit slow{"s1", {msgs[0], msgs[2]}};
    slow.wait = true;
    slow.timeout_seconds = 5.0;
    auto waited = expect<CommitResult>(store->dispatch(slow));
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(300));
    CHECK(waited.task_id == std::optional<std::string>("task-2"));
    CHECK(waited.extracted_count == 2);
    CHECK(server.requests().back().target == "/api/v1/tasks/task-2");

    // A wait shorter than the extraction: the server's DEADLINE_EXCEEDED is ignored and
    // the task, still running, has no counts.
    OpCommit short_wait{"s1", {msgs[0]}};
    short_wait.wait = true;
    short_wait.timeout_seconds = 0.05;
    auto partial = expect<CommitResult>(store->dispatch(short_wait));
    CHECK(partial.task_id == std::optional<std::string>("task-3"));
    CHECK(partial.extracted_count == -1);
    // wait without a timeout does not wait (§3.3).
    OpCommit no_timeout{"s1", {msgs[0]}};
    no_timeout.wait = true;
    auto before = server.requests().size();
    CHECK(expect<CommitResult>(store->dispatch(no_timeout)).extracted_count == -1);
    CHECK(server.requests().size() == before + 3);
    expect_failure(store->dispatch(OpCommit{""}), FailureKind::invalid_uri);
    b->close(store);
}
