// SessionWriter and the on-disk layout (session.md §5.1-§5.3).
#include "support/env.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

#include <rath/session.hpp>
#include <rath/session/lineage_recorder.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/session/persistence/writer.hpp>

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

using namespace rath;
using namespace rath::persistence;
namespace fs = std::filesystem;
using rath::test::read_file;

namespace {

std::vector<std::string> lines_of(const fs::path& p) {
    std::vector<std::string> out;
    std::istringstream in(read_file(p));
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

}  // namespace

TEST_SUITE("session/persistence/writer") {

TEST_CASE("the sessions directory follows OPENRATH_HOME and is not created eagerly") {
    rath::test::TempHome home;
    CHECK(default_sessions_dir() == home.path() / "sessions");
    CHECK_FALSE(fs::exists(home.sessions()));
    CHECK(ensure_sessions_dir() == home.sessions());
    CHECK(ensure_sessions_dir() == home.sessions());  // idempotent
    CHECK(fs::is_directory(home.sessions()));
}

TEST_CASE("OPENRATH_HOME is trimmed and a non directory is refused") {
    rath::test::TempHome home;
    ::setenv("OPENRATH_HOME", ("  " + home.path().string() + "  ").c_str(), 1);
    CHECK(default_config_dir() == home.path());
    std::ofstream(home.path() / "file") << "x";
    ::setenv("OPENRATH_HOME", (home.path() / "file").c_str(), 1);
    CHECK_THROWS_WITH_AS(default_config_dir(), doctest::Contains("is not a directory"), PersistenceError);
}

TEST_CASE("files are named by session uuid and uppercase ids name the same file") {
    rath::test::TempHome home;
    Session s;
    CHECK(session_file_path(s.id()) == home.sessions() / (s.id() + ".jsonl"));
    CHECK(session_partial_path(s.id()) == home.sessions() / (s.id() + ".jsonl.__partial__"));
    std::string upper = s.id();
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK(session_file_path(upper) == session_file_path(s.id()));
    CHECK_THROWS_AS(session_file_path("../../etc/passwd"), PersistenceError);
}

TEST_CASE("the header is written at construction to the partial file only") {
    rath::test::TempHome home;
    Session a = create_user_session("hi");
    Session s = a.fork();
    s.to("local", "/work/space");
    SessionWriter w(s, {.sandbox_handle_id = std::string("3f2a1f7e-0000-4000-8000-000000000001")});
    CHECK(fs::exists(w.partial_path()));
    CHECK_FALSE(fs::exists(w.path()));
    auto lines = lines_of(w.partial_path());
    REQUIRE(lines.size() == 1);
    std::string prefix = "{\"record_type\": \"header\", \"schema_version\": 1, \"id\": \"" + s.id() + "\", \"created_at\": \"";
    CHECK(lines[0].starts_with(prefix));
    std::string rest = lines[0].substr(lines[0].find("\", \"parent_session_ids\""));
    CHECK(rest == "\", \"parent_session_ids\": [\"" + a.id() +
                      "\"], \"lineage_operator\": \"Session.fork\", \"lineage_kind\": \"op_fork\", \"lineage_extras\": [], "
                      "\"sandbox_backend\": \"local\", \"sandbox_spec\": {\"image\": null, \"entrypoint\": null, \"env\": "
                      "null, \"timeout_seconds\": null, \"working_dir\": \"/work/space\"}, \"sandbox_handle_id\": "
                      "\"3f2a1f7e-0000-4000-8000-000000000001\"}");
    std::string created = lines[0].substr(prefix.size(), lines[0].find('"', prefix.size()) - prefix.size());
    CHECK(created.ends_with("+00:00"));
    CHECK(parse_iso_datetime(created).has_value());
    struct stat st {};
    REQUIRE(::stat(w.partial_path().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("close writes the trailer and renames the partial to the final file") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    s.set_usage(TokenUsage{.prompt_tokens = 5, .completion_tokens = 6, .total_tokens = 11});
    SessionWriter w(s);
    auto size0 = fs::file_size(w.partial_path());
    w.write_chunk(0, *s.chunks()[0]);
    CHECK(fs::file_size(w.partial_path()) > size0);
    CHECK(w.chunks_written() == 1);
    w.close();
    CHECK_FALSE(fs::exists(w.partial_path()));
    CHECK(w.path() == home.sessions() / (s.id() + ".jsonl"));
    auto lines = lines_of(w.path());
    REQUIRE(lines.size() == 3);
    CHECK(lines[1] == "{\"record_type\": \"chunk\", \"index\": 0, \"kind\": \"user\", \"payload\": {\"content\": \"hi\"}}");
    CHECK(lines[2].starts_with("{\"record_type\": \"trailer\", \"closed_at\": \""));
    CHECK(lines[2].ends_with("\", \"final_chunk_count\": 1, \"cumulative_usage\": {\"prompt_tokens\": 5, "
                             "\"completion_tokens\": 6, \"total_tokens\": 11}}"));
}

TEST_CASE("a zero chunk close is header plus trailer and close is idempotent") {
    rath::test::TempHome home;
    Session s;
    SessionWriter w(s);
    w.close();
    w.close();
    auto lines = lines_of(w.path());
    REQUIRE(lines.size() == 2);
    CHECK(lines[1].find("\"final_chunk_count\": 0, \"cumulative_usage\": null}") != std::string::npos);
}

TEST_CASE("abandon keeps the partial without a trailer") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    SessionWriter w(s);
    w.write_chunk(0, *s.chunks()[0]);
    w.abandon();
    w.abandon();
    CHECK(fs::exists(w.partial_path()));
    CHECK_FALSE(fs::exists(w.path()));
    CHECK(lines_of(w.partial_path()).size() == 2);
    auto p = load_session(s.id());
    CHECK_FALSE(p.closed);
    CHECK(p.chunks.size() == 1);
}

TEST_CASE("writing after close is refused") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    SessionWriter w(s);
    w.close();
    CHECK_THROWS_WITH_AS(w.write_chunk(0, *s.chunks()[0]), doctest::Contains("is closed; cannot append more chunks"),
                         PersistenceError);
}

TEST_CASE("the scope guard closes on normal exit and abandons on an exception") {
    rath::test::TempHome home;
    Session ok = Session::from_user_message("ok");
    {
        SessionWriter w(ok);
        SessionWriterGuard g(w);
        w.write_chunk(0, *ok.chunks()[0]);
    }
    CHECK(load_session(ok.id()).closed);
    Session bad = Session::from_user_message("bad");
    try {
        SessionWriter w(bad);
        SessionWriterGuard g(w);
        w.write_chunk(0, *bad.chunks()[0]);
        throw std::runtime_error("caller failed");
    } catch (const std::runtime_error&) {
    }
    CHECK(fs::exists(session_partial_path(bad.id())));
    CHECK_FALSE(load_session(bad.id()).closed);
}

TEST_CASE("an explicit path puts the partial next to it") {
    rath::test::TempHome home;
    rath::test::TempDir other;
    Session s = Session::from_user_message("x");
    SessionWriter w(s, {.path = other.path() / "sub" / "mine.jsonl"});
    CHECK(w.partial_path() == fs::canonical(other.path()) / "sub" / "mine.jsonl.__partial__");
    w.write_chunk(0, *s.chunks()[0]);
    w.close();
    CHECK(fs::exists(other.path() / "sub" / "mine.jsonl"));
    CHECK(fs::is_directory(home.sessions()));  // the default dir is still created
    CHECK(load_session(s.id(), other.path() / "sub" / "mine.jsonl").chunks.size() == 1);
}

TEST_CASE("tool result rows keep their payload keys on disk") {
    rath::test::TempHome home;
    Session s;
    SessionWriter w(s);
    w.write_chunk(0, *tool_feedback_chunk("call_1", "shell", "{\"exit_code\": 0}"));
    w.close();
    CHECK(lines_of(w.path())[1] ==
          "{\"record_type\": \"chunk\", \"index\": 0, \"kind\": \"tool_result\", \"payload\": {\"tool_call_id\": "
          "\"call_1\", \"name\": \"shell\", \"content\": \"{\\\"exit_code\\\": 0}\"}}");
}

TEST_CASE("a chunk index other than the next one is refused and nothing is written") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("x");
    SessionWriter w(s);
    w.write_chunk(0, *s.chunks()[0]);
    for (std::size_t bad : {std::size_t{0}, std::size_t{2}})
        CHECK_THROWS_WITH_AS(w.write_chunk(bad, *s.chunks()[0]),
                             ("SessionWriter(" + w.path().string() + "): chunk index " + std::to_string(bad) +
                              " where 1 was expected")
                                 .c_str(),
                             PersistenceError);
    w.write_chunk(1, *user_text_chunk("y"));
    w.close();
    auto p = load_session(s.id());
    CHECK(p.chunks.size() == 2);
    CHECK(w.chunks_written() == 2);
}

TEST_CASE("a second writer on the same session is refused even in the same process") {
    rath::test::TempHome home;
    Session s;
    SessionWriter first(s);
    CHECK_THROWS_WITH_AS(SessionWriter{s},
                         ("'" + first.path().string() + "' is already being written by session " + s.id() +
                          " in this process; put {session_id} in the path or name a directory, so that each run "
                          "writes its own file")
                             .c_str(),
                         PersistenceError);
    first.abandon();
    SessionWriter again(s);  // the claim and the lock went with abandon
    again.write_chunk(0, *user_text_chunk("fresh"));
    again.close();
    auto p = load_session(s.id());  // one header: the stale partial was started over
    CHECK(p.closed);
    CHECK(p.chunks.size() == 1);
    SessionWriter after_close(s);  // and with close
    after_close.close();
    CHECK(load_session(s.id()).chunks.empty());
}

TEST_CASE("a partial locked by another writer's open file is refused") {
    rath::test::TempHome home;
    Session s;
    // What a writer in another process holds: an exclusive flock on the partial.
    fs::create_directories(home.sessions());
    auto partial = session_partial_path(s.id());
    int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
    CHECK_THROWS_WITH_AS(SessionWriter{s},
                         ("another process is already writing to '" + partial.string() +
                          "'; refusing to interleave appends (put {session_id} in the path or name a directory, so "
                          "that each run writes its own file)")
                             .c_str(),
                         PersistenceError);
    ::close(fd);
    SessionWriter w(s);  // the failed writer left no claim behind
    w.close();
    CHECK(load_session(s.id()).closed);
}

TEST_CASE("a fixed path shared by two sessions at once is refused naming the session that holds it") {
    rath::test::TempHome home;
    rath::test::TempDir dir;
    Session a = Session::from_user_message("a"), b = Session::from_user_message("b");
    auto fixed = dir.path() / "run.jsonl";
    SessionWriter wa(a, {.path = fixed});
    CHECK_THROWS_WITH_AS(SessionWriter(b, {.path = fixed}),
                         doctest::Contains(("is already being written by session " + a.id() +
                                            " in this process; put {session_id} in the path")
                                               .c_str()),
                         PersistenceError);
    wa.write_chunk(0, *a.chunks()[0]);
    wa.close();
    CHECK(load_session(a.id(), fixed).chunks.size() == 1);  // a's file was not touched by b
    SessionWriter wb(b, {.path = fixed});                    // one after the other is the caller's choice
    wb.close();
    CHECK(load_session_file(fixed).header.id == b.id());
}

TEST_CASE("a persist path template or directory gives each session its own file") {
    rath::test::TempHome home;
    rath::test::TempDir dir;
    Session a = Session::from_user_message("a"), b = Session::from_user_message("b");
    auto canon = fs::canonical(dir.path());
    CHECK(persist_path_for(dir.path() / "run-{session_id}.jsonl", a.id()) == dir.path() / ("run-" + a.id() + ".jsonl"));
    CHECK(persist_path_for(dir.path() / "{session_id}" / "{session_id}.jsonl", a.id()) ==
          dir.path() / a.id() / (a.id() + ".jsonl"));
    CHECK(persist_path_for(dir.path(), a.id()) == dir.path() / (a.id() + ".jsonl"));             // an existing directory
    CHECK(persist_path_for(dir.path() / "new" / "", a.id()) == dir.path() / "new" / (a.id() + ".jsonl"));  // trailing /
    CHECK(persist_path_for(dir.path() / "fixed.jsonl", a.id()) == dir.path() / "fixed.jsonl");

    // Both open at once: no conflict, one file each.
    SessionWriter wa(a, {.path = dir.path() / "t-{session_id}.jsonl"});
    SessionWriter wb(b, {.path = dir.path() / "t-{session_id}.jsonl"});
    SessionWriter da(a, {.path = dir.path() / "by-id" / ""});
    SessionWriter db(b, {.path = dir.path() / "by-id" / ""});
    CHECK(wa.path() == canon / ("t-" + a.id() + ".jsonl"));
    CHECK(db.path() == canon / "by-id" / (b.id() + ".jsonl"));
    for (SessionWriter* w : {&wa, &wb, &da, &db}) w->close();
    CHECK(load_session(a.id(), wa.path()).header.id == a.id());
    CHECK(load_session(b.id(), wb.path()).header.id == b.id());
    // A directory's files are named like the sessions directory's: they load by id too.
    CHECK(load_session_file(da.path()).header.id == a.id());
    CHECK(load_session_file(db.path()).header.id == b.id());
}

TEST_CASE("writers of different sessions do not collide") {
    rath::test::TempHome home;
    Session a = Session::from_user_message("a"), b = Session::from_user_message("b");
    SessionWriter wa(a), wb(b);
    wa.write_chunk(0, *a.chunks()[0]);
    wb.write_chunk(0, *b.chunks()[0]);
    wa.close();
    wb.close();
    CHECK(load_session(a.id()).chunks[0]->payload().at("content") == "a");
    CHECK(load_session(b.id()).chunks[0]->payload().at("content") == "b");
}

TEST_CASE("line separator characters are escaped so the file stays line oriented") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("a\xE2\x80\xA8" "b\xC2\x85" "c\r\nd");
    SessionWriter w(s);
    w.write_chunk(0, *s.chunks()[0]);
    w.close();
    auto text = read_file(w.path());
    CHECK(text.find("a\\u2028b\\u0085c\\r\\nd") != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == 3);
    CHECK(load_session(s.id()).chunks[0]->payload().at("content") == "a\xE2\x80\xA8" "b\xC2\x85" "c\r\nd");
}

}  // TEST_SUITE
