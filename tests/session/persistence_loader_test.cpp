// Loader, listing, pruning and schema versions (session.md §5.5-§5.6).
#include "support/env.hpp"
#include "support/files.hpp"
#include "support/log_capture.hpp"

#include <rath/session.hpp>
#include <rath/session/lineage_recorder.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/session/persistence/writer.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace rath;
using namespace rath::persistence;
namespace fs = std::filesystem;
using rath::test::read_file;
using rath::test::write_file;

namespace {

// Writes `s` with all its rows and closes it (or abandons it).
fs::path persist(const Session& s, bool close = true, std::optional<std::string> handle = std::nullopt) {
    SessionWriter w(s, {.sandbox_handle_id = handle});
    std::size_t i = 0;
    for (const auto& row : s.chunks()) w.write_chunk(i++, *row);
    if (close) {
        w.close();
        return w.path();
    }
    w.abandon();
    return w.partial_path();
}

std::string header_line(const std::string& id, const std::string& created_at, int version = 1) {
    return "{\"record_type\": \"header\", \"schema_version\": " + std::to_string(version) + ", \"id\": \"" + id +
           "\", \"created_at\": \"" + created_at + "\"}\n";
}

// A closed file of four rows — user, assistant calling c1, its tool_result, assistant
// — whose lines are: 1 header, 2-5 chunks 0-3, 6 trailer.
struct ToolFile {
    Session session;
    fs::path path;
    std::vector<std::string> lines;  // without their "\n"
};

ToolFile tool_file() {
    Session s = Session::from_user_message("list it");
    s.append_chunk(assistant_turn_chunk({{.id = "c1", .name = "run_shell_command", .arguments = "{}"}}, std::nullopt));
    s.append_chunk(tool_feedback_chunk("c1", "run_shell_command", "{\"exit_code\": 0}"));
    s.append_chunk(assistant_turn_chunk({}, std::string("done")));
    fs::path path = persist(s);
    std::vector<std::string> lines;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE(lines.size() == 6);
    return {s, path, lines};
}

std::string joined(const std::vector<std::string>& lines) {
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    return text;
}

// Writes `lines` over the file and checks the loader's error: "<path>:<line>: <msg>".
void expect_refused(const ToolFile& f, const std::vector<std::string>& lines, std::size_t line, const std::string& msg) {
    write_file(f.path, joined(lines));
    try {
        (void)load_session(f.session.id());
        FAIL("expected a PersistenceError");
    } catch (const PersistenceError& e) {
        CHECK(std::string(e.what()) == f.path.string() + ":" + std::to_string(line) + ": " + msg);
        CHECK(e.path() == f.path.string());
        CHECK(e.line() == line);
    }
}

// `line` with its chunk index replaced.
std::string with_index(std::string line, int from, int to) {
    std::string key = "\"index\": " + std::to_string(from) + ",";
    auto at = line.find(key);
    REQUIRE(at != std::string::npos);
    line.replace(at, key.size(), "\"index\": " + std::to_string(to) + ",");
    return line;
}

}  // namespace

TEST_SUITE("session/persistence/loader") {

TEST_CASE("a written session loads back equal in rows usage and lineage") {
    rath::test::TempHome home;
    Session root = create_user_session("root");
    Session s = root.fork();
    s.to("local", "/ws/project");
    s.append_chunk(system_text_chunk("be brief"));
    s.append_chunk(assistant_turn_chunk({{.id = "c1", .name = "run_shell_command", .arguments = "{\"command\": \"ls\"}"}},
                                        std::nullopt));
    s.append_chunk(tool_feedback_chunk("c1", "run_shell_command", "{\"exit_code\": 0, \"stdout\": \"a\\n\"}"));
    s.append_chunk(assistant_turn_chunk({}, std::string("done \xE2\x9C\x93")));
    s.add_lineage_extra("loop.truncated", true);
    s.add_lineage_extra("score", 0.5);
    s.set_usage(TokenUsage{.prompt_tokens = 100, .completion_tokens = 20, .total_tokens = 120});
    persist(s, true, "7d0c7f1e-1111-4222-8333-444455556666");

    PersistedSession p = load_session(s.id());
    CHECK(p.closed);
    CHECK(p.path == fs::canonical(session_file_path(s.id())));
    CHECK(p.header.schema_version == 1);
    CHECK(p.header.sandbox_backend == "local");
    CHECK(p.header.sandbox_spec->working_dir == "/ws/project");
    CHECK(p.header.sandbox_handle_id == "7d0c7f1e-1111-4222-8333-444455556666");
    CHECK(p.chunks[2]->payload().at("content").is_null());
    CHECK(p.chunks[4]->payload().at("tool_calls").is_null());

    Session back = p.to_session();
    CHECK(back.id() == s.id());
    CHECK(back.chunks() == s.chunks());
    CHECK(back.usage() == s.usage());
    CHECK(back.lineage() == s.lineage());
    CHECK(back.sandbox_backend() == s.sandbox_backend());
    CHECK(back.sandbox_spec() == s.sandbox_spec());
    CHECK(back.sandbox() == nullptr);
}

TEST_CASE("an abandoned session loads as not closed") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    persist(s, false);
    auto p = load_session(s.id());  // falls back to the partial file
    CHECK_FALSE(p.closed);
    CHECK_FALSE(p.usage.has_value());
    CHECK(p.chunks.size() == 1);
}

TEST_CASE("an unterminated last line is dropped") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    auto path = persist(s, false);
    std::ofstream(path, std::ios::app) << "{\"record_type\": \"chunk\", \"index\": 1, \"kind\": \"us";
    auto p = load_session(s.id());
    CHECK(p.chunks.size() == 1);
}

TEST_CASE("a truncated file without a complete header is reported") {
    rath::test::TempHome home;
    auto path = home.sessions() / "3d9f1f8e-0000-4000-8000-00000000000a.jsonl";
    write_file(path, "{\"record_type\": \"header\", \"sche");
    CHECK_THROWS_WITH_AS(load_session_file(path), (path.string() + ": no header record found").c_str(), PersistenceError);
}

TEST_CASE("a corrupt line is reported with the file and line number") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("hi");
    auto path = persist(s);
    auto text = read_file(path);
    auto second = text.find('\n') + 1;
    text.insert(second, "{\"record_type\": \"chunk\", oops}\n");
    write_file(path, text);
    try {
        (void)load_session(s.id());
        FAIL("expected a PersistenceError");
    } catch (const PersistenceError& e) {
        std::string what = e.what();
        CHECK(what.starts_with(path.string() + ":2: invalid JSON (col 26): "));
        CHECK(e.path() == path.string());
        CHECK(e.line() == 2);
    }
}

TEST_CASE("structurally wrong records are reported by kind") {
    rath::test::TempHome home;
    std::string id = "3d9f1f8e-0000-4000-8000-00000000000b";
    auto path = home.path() / "bad.jsonl";
    std::string head = header_line(id, "2024-01-02T03:04:05+00:00");
    auto expect = [&](const std::string& text, const std::string& msg) {
        write_file(path, text);
        CHECK_THROWS_WITH_AS(load_session_file(path), (path.string() + ":" + msg).c_str(), PersistenceError);
    };
    expect(head + "[1, 2]\n", "2: record must be a JSON object, got list");
    expect(head + head, "2: duplicate header record");
    expect("{\"record_type\": \"chunk\", \"kind\": \"user\", \"payload\": {}}\n", "1: chunk record before header");
    expect(head + "{\"record_type\": \"chunk\", \"index\": 0, \"kind\": \"robot\", \"payload\": {}}\n",
           "2: invalid chunk kind: robot");
    expect(head + "{\"record_type\": \"chunk\", \"index\": 0, \"kind\": \"user\", \"payload\": []}\n",
           "2: chunk payload must be a JSON object");
    expect(head + "{\"record_type\": \"comment\"}\n", "2: unknown record_type='comment'");
    expect("{\"record_type\": \"header\", \"schema_version\": 1, \"created_at\": \"2024-01-01T00:00:00\"}\n",
           "1: malformed header record: missing or non-string 'id'");
}

TEST_CASE("the four-row tool file the corruption tests start from loads") {
    rath::test::TempHome home;
    auto f = tool_file();
    auto p = load_session(f.session.id());
    CHECK(p.closed);
    CHECK(p.chunks == f.session.chunks());
}

TEST_CASE("a duplicated chunk index is refused naming both lines") {
    rath::test::TempHome home;
    auto f = tool_file();
    auto lines = f.lines;
    lines.insert(lines.begin() + 3, lines[2]);  // chunk 1 twice
    expect_refused(f, lines, 4, "duplicate chunk index 1 (first at line 3)");
}

TEST_CASE("a missing chunk index is refused") {
    rath::test::TempHome home;
    auto f = tool_file();
    auto lines = f.lines;
    lines.erase(lines.begin() + 1);  // chunk 0 gone
    expect_refused(f, lines, 2, "chunk index 1 where 0 was expected: chunks are missing or out of order");
}

TEST_CASE("reordered chunk indices are refused") {
    rath::test::TempHome home;
    auto f = tool_file();
    auto lines = f.lines;
    std::swap(lines[3], lines[4]);  // chunk 3 before chunk 2
    expect_refused(f, lines, 4, "chunk index 3 where 2 was expected: chunks are missing or out of order");
    lines = f.lines;
    lines[2] = with_index(lines[2], 1, -1);
    expect_refused(f, lines, 3, "chunk index -1 where 1 was expected: chunks are missing or out of order");
    lines = f.lines;
    lines[2].replace(lines[2].find("\"index\": 1"), 10, "\"index\": \"1\"");
    expect_refused(f, lines, 3, "chunk record needs an integer 'index', got str");
}

TEST_CASE("a chunk after the trailer is refused and so is a second trailer") {
    rath::test::TempHome home;
    auto f = tool_file();
    auto lines = f.lines;
    lines.push_back(with_index(f.lines[1], 0, 4));
    expect_refused(f, lines, 7, "chunk record after the trailer (line 6)");
    lines = f.lines;
    lines.push_back(f.lines[5]);
    expect_refused(f, lines, 7, "record after the trailer (line 6)");
}

TEST_CASE("a trailer whose final count is not the number of chunks is refused") {
    rath::test::TempHome home;
    auto f = tool_file();
    auto lines = f.lines;
    auto at = lines[5].find("\"final_chunk_count\": 4");
    REQUIRE(at != std::string::npos);
    lines[5].replace(at, 22, "\"final_chunk_count\": 5");
    expect_refused(f, lines, 6, "trailer says final_chunk_count=5 but the file has 4 chunks");
    lines[5].replace(at, 22, "\"final_chunk_count\": null");
    expect_refused(f, lines, 6, "trailer needs an integer 'final_chunk_count', got NoneType");
}

TEST_CASE("a header id that differs from the file name is refused") {
    rath::test::TempHome home;
    auto f = tool_file();
    Session other;
    auto renamed = session_file_path(other.id());
    fs::rename(f.path, renamed);
    CHECK_THROWS_WITH_AS(load_session(other.id()),
                         (renamed.string() + ":1: header id " + f.session.id() + " does not match the file name " +
                          renamed.filename().string())
                             .c_str(),
                         PersistenceError);
    // The partial is named by the id too.
    auto partial = session_partial_path(other.id());
    fs::rename(renamed, partial);
    CHECK_THROWS_WITH_AS(load_session_file(partial), doctest::Contains((":1: header id " + f.session.id() + " does not match").c_str()),
                         PersistenceError);
    // Any other name is the caller's choice; the id asked for must still be the header's.
    auto custom = home.path() / "kept.jsonl";
    fs::rename(partial, custom);
    CHECK(load_session_file(custom).header.id == f.session.id());
    CHECK(load_session(f.session.id(), custom).header.id == f.session.id());
    CHECK_THROWS_WITH_AS(load_session(other.id(), custom),
                         (custom.string() + ":1: header id " + f.session.id() + " is not the requested session " +
                          other.id())
                             .c_str(),
                         PersistenceError);
}

TEST_CASE("a payload of the wrong type for its kind is refused") {
    rath::test::TempHome home;
    auto f = tool_file();
    auto refuse = [&](std::size_t line, const std::string& chunk, const std::string& msg) {
        auto lines = f.lines;
        lines[line - 1] = chunk;
        expect_refused(f, lines, line, msg);
    };
    auto rec = [](int index, const char* kind, const std::string& payload) {
        return "{\"record_type\": \"chunk\", \"index\": " + std::to_string(index) + ", \"kind\": \"" + kind +
               "\", \"payload\": " + payload + "}";
    };
    refuse(2, rec(0, "user", "{\"content\": 7}"), "malformed user payload: 'content' must be a string, got int");
    refuse(2, rec(0, "user", "{}"), "malformed user payload: 'content' must be a string, got missing");
    refuse(2, rec(0, "system", "{\"content\": [1]}"),
           "malformed system payload: 'content' must be a string or null, got list");
    refuse(3, rec(1, "assistant", "{\"content\": null, \"tool_calls\": {}}"),
           "malformed assistant payload: 'tool_calls' must be a non-empty list or null, got dict");
    refuse(3, rec(1, "assistant", "{\"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"function\": {\"name\": 1}}]}"),
           "malformed assistant payload: each of 'tool_calls' must be {\"id\": str, \"function\": {\"name\": str, "
           "\"arguments\": str}}");
    refuse(4, rec(2, "tool_result", "{\"tool_call_id\": \"c1\", \"name\": \"run_shell_command\", \"content\": {}}"),
           "malformed tool_result payload: 'content' must be a string, got dict");
    refuse(4, rec(2, "tool_result", "{\"name\": \"run_shell_command\", \"content\": \"x\"}"),
           "malformed tool_result payload: 'tool_call_id' must be a string, got missing");
}

TEST_CASE("a tool result before its tool call is refused at load") {
    rath::test::TempHome home;
    auto f = tool_file();
    auto lines = f.lines;
    std::swap(lines[2], lines[3]);  // the result first, then the call, indices fixed up
    lines[2] = with_index(lines[2], 2, 1);
    lines[3] = with_index(lines[3], 1, 2);
    expect_refused(f, lines, 3, "tool_result for call 'c1' comes before (or without) its tool call");
    lines = f.lines;
    lines.insert(lines.begin() + 4, with_index(f.lines[3], 2, 3));  // answered twice
    lines[5] = with_index(lines[5], 3, 4);
    lines[6].replace(lines[6].find("\"final_chunk_count\": 4"), 22, "\"final_chunk_count\": 5");
    expect_refused(f, lines, 5, "tool_result for call 'c1' answers it a second time");
}

TEST_CASE("resuming rows whose tool result precedes its call is refused") {
    rath::test::TempHome home;
    auto f = tool_file();
    auto p = load_session(f.session.id());
    // PersistedSession is a plain value: rows edited after loading are checked again.
    p.chunks = ChunkTable(std::vector<ChunkRowPtr>{p.chunks[0], p.chunks[2], p.chunks[1], p.chunks[3]});
    CHECK_THROWS_WITH_AS((void)p.to_resumable_pair(), "row 1: tool_result for call 'c1' comes before (or without) its tool call",
                         PersistenceError);
    CHECK_THROWS_WITH_AS((void)p.to_session(), "row 1: tool_result for call 'c1' comes before (or without) its tool call",
                         PersistenceError);
    CHECK_NOTHROW(check_tool_order(f.session.chunks()));
}

TEST_CASE("a partial file cut mid-write loads up to its last complete row") {
    rath::test::TempHome home;
    auto f = tool_file();
    // A crash while writing chunk 3: no trailer, the record cut anywhere inside.
    for (std::size_t cut : {std::size_t{1}, f.lines[4].size() / 2, f.lines[4].size()}) {
        auto partial = session_partial_path(f.session.id());
        fs::remove(f.path);
        write_file(partial, joined({f.lines.begin(), f.lines.begin() + 4}) + f.lines[4].substr(0, cut));
        auto p = load_session(f.session.id());
        CHECK_FALSE(p.closed);
        REQUIRE(p.chunks.size() == 3);
        CHECK(*p.chunks[2] == *f.session.chunks()[2]);
        auto [user, agent] = p.to_resumable_pair();
        CHECK(user.chunks().size() == 3);
    }
}

TEST_CASE("a missing file is reported") {
    rath::test::TempHome home;
    Session s;
    CHECK_THROWS_WITH_AS(load_session(s.id()),
                         ("persisted session file not found: " + session_file_path(s.id()).string()).c_str(),
                         PersistenceError);
}

TEST_CASE("blank lines are tolerated and the trailer gives usage and closed state") {
    rath::test::TempHome home;
    std::string id = "3d9f1f8e-0000-4000-8000-00000000000c";
    auto path = home.path() / "x.jsonl";
    write_file(path, header_line(id, "2024-01-02T03:04:05") + "\n   \n" +
                   "{\"record_type\": \"chunk\", \"index\": 0, \"kind\": \"user\", \"payload\": {\"content\": \"hi\"}}\n" +
                   "\n{\"record_type\": \"trailer\", \"final_chunk_count\": 1, \"cumulative_usage\": {\"total_tokens\": 9}}\n");
    auto p = load_session_file(path);
    CHECK(p.closed);
    CHECK(p.chunks.size() == 1);
    CHECK(p.usage->total_tokens == 9);
    CHECK(p.usage->prompt_tokens == 0);
    CHECK(p.header.lineage_operator == "implicit");
}

TEST_CASE("a file from a newer schema is refused") {
    rath::test::TempHome home;
    auto path = home.path() / "new.jsonl";
    write_file(path, header_line("3d9f1f8e-0000-4000-8000-00000000000d", "2024-01-02T03:04:05", 99));
    CHECK_THROWS_WITH_AS(load_session_file(path),
                         (path.string() +
                          ":1: persisted file declares schema_version=99 which is newer than CURRENT_SCHEMA_VERSION=1; "
                          "refusing to downgrade")
                             .c_str(),
                         PersistenceError);
}

TEST_CASE("an old schema needs a registered migration") {
    rath::test::TempHome home;
    auto path = home.path() / "old.jsonl";
    // Version 0 (no schema_version key) named the operator "op" and chunk text "text".
    write_file(path,
         "{\"record_type\": \"header\", \"id\": \"3d9f1f8e-0000-4000-8000-00000000000e\", \"created_at\": "
         "\"2024-01-02T03:04:05\", \"op\": \"legacy\"}\n"
         "{\"record_type\": \"chunk\", \"index\": 0, \"kind\": \"user\", \"payload\": {\"text\": \"hi\"}}\n");
    CHECK_THROWS_WITH_AS(load_session_file(path),
                         (path.string() +
                          ":1: no header migrator registered for schema_version=0; file may be from a newer OpenRath "
                          "release")
                             .c_str(),
                         PersistenceError);
    CHECK_THROWS_WITH_AS(register_header_migration(1, [](boost::json::object o) { return o; }),
                         "refusing to register migration from version 1 >= CURRENT_SCHEMA_VERSION=1", SessionError);
    register_header_migration(0, [](boost::json::object h) {
        h["lineage_operator"] = h["op"];
        h["schema_version"] = 1;
        return h;
    });
    register_chunk_migration(0, [](boost::json::object c) {
        auto& p = c["payload"].as_object();
        p["content"] = p["text"];
        p.erase("text");
        return c;
    });
    auto p = load_session_file(path);
    testing::clear_migrations();
    CHECK(p.header.schema_version == 0);
    CHECK(p.header.lineage_operator == "legacy");
    CHECK(p.chunks[0]->payload().at("content") == "hi");
}

TEST_CASE("listing sorts by creation time and reports chunk counts and closed state") {
    rath::test::TempHome home;
    CHECK(list_persisted_sessions().empty());  // no directory yet
    std::string a = "3d9f1f8e-0000-4000-8000-0000000000a1", b = "3d9f1f8e-0000-4000-8000-0000000000b2";
    write_file(home.sessions() / (a + ".jsonl"),
         header_line(a, "2024-05-01T00:00:00+00:00") +
             "{\"record_type\": \"chunk\", \"index\": 0, \"kind\": \"user\", \"payload\": {\"content\": \"x\"}}\n"
             "{\"record_type\": \"trailer\", \"final_chunk_count\": 1}\n");
    write_file(home.sessions() / (b + ".jsonl.__partial__"), header_line(b, "2023-01-01T00:00:00.5+00:00"));
    write_file(home.sessions() / "notes.txt", "not a session");
    auto list = list_persisted_sessions();
    REQUIRE(list.size() == 2);
    CHECK(list[0].id == b);
    CHECK_FALSE(list[0].closed);
    CHECK(list[0].chunk_count == 0);
    CHECK(list[1].id == a);
    CHECK(list[1].closed);
    CHECK(list[1].chunk_count == 1);
}

TEST_CASE("listing skips foreign and corrupt session files with a warning naming them") {
    rath::test::TempHome home;
    rath::test::LogCapture log;
    Session good = Session::from_user_message("ok");
    persist(good);
    write_file(home.sessions() / "garbage.jsonl", "hello there\n");
    write_file(home.sessions() / "array.jsonl", "[]\n");
    // Loads of JSON, wrong structure: a chunk index missing.
    Session gap = Session::from_user_message("gap");
    gap.append_chunk(user_text_chunk("more"));
    auto gap_text = read_file(persist(gap));
    gap_text.erase(gap_text.find('\n') + 1, gap_text.find('\n', gap_text.find('\n') + 1) - gap_text.find('\n'));
    write_file(session_file_path(gap.id()), gap_text);
    std::vector<PersistenceError> skipped;
    auto list = list_persisted_sessions({.skipped = &skipped});
    REQUIRE(list.size() == 1);
    CHECK(list[0].id == good.id());
    REQUIRE(skipped.size() == 3);
    // In file name order; the gap file's name is a random UUID.
    auto of = [&](const std::string& name) -> const PersistenceError& {
        auto it = std::find_if(skipped.begin(), skipped.end(),
                               [&](const PersistenceError& e) { return e.path() == (home.sessions() / name).string(); });
        REQUIRE(it != skipped.end());
        return *it;
    };
    CHECK(std::string(of("array.jsonl").what()).find("array.jsonl:1: record must be a JSON object, got list") !=
          std::string::npos);
    CHECK(std::string(of("garbage.jsonl").what()).find("garbage.jsonl:1: invalid JSON") != std::string::npos);
    CHECK(std::string(of(gap.id() + ".jsonl").what()).find(gap.id() + ".jsonl:2: chunk index 1 where 0 was expected") !=
          std::string::npos);
    CHECK(log.messages("rath.session.persistence").size() == 3);
}

TEST_CASE("resumable pairs keep rows and target and pick the agent prompt") {
    rath::test::TempHome home;
    Session s = Session::from_agent_prompt("you are terse");
    s.to("local", "/ws");
    s.append_chunk(user_text_chunk("hi"));
    persist(s);
    auto p = load_session(s.id());
    auto [user, agent] = p.to_resumable_pair();
    CHECK(user.id() != s.id());
    CHECK(user.chunks() == s.chunks());
    CHECK(user.sandbox_backend() == "local");
    CHECK(user.sandbox_spec()->working_dir == "/ws");
    CHECK(user.lineage_kind() == LineageKind::unknown);
    REQUIRE(agent.chunks().size() == 1);
    CHECK(agent.chunks()[0]->payload().at("content") == "you are terse");
    auto [u2, a2] = p.to_resumable_pair("override");
    CHECK(a2.chunks()[0]->payload().at("content") == "override");
    Session nosys = Session::from_user_message("x");
    persist(nosys);
    CHECK(load_session(nosys.id()).to_resumable_pair().second.chunks().empty());
}

TEST_CASE("delete removes the final and partial files") {
    rath::test::TempHome home;
    Session s = Session::from_user_message("x");
    persist(s);
    CHECK(delete_session(s.id()));
    CHECK_FALSE(delete_session(s.id()));
    Session t = Session::from_user_message("y");
    persist(t, false);
    CHECK(delete_session(t.id()));
    CHECK_FALSE(fs::exists(session_partial_path(t.id())));
}

TEST_CASE("prune deletes sessions older than the cutoff and never unreadable files") {
    rath::test::TempHome home;
    rath::test::LogCapture log;
    auto iso_days_ago = [](int days) { return iso_utc(std::chrono::system_clock::now() - std::chrono::hours(24 * days)); };
    std::string old_id = "3d9f1f8e-0000-4000-8000-000000000400", mid_id = "3d9f1f8e-0000-4000-8000-000000000030";
    write_file(home.sessions() / (old_id + ".jsonl"), header_line(old_id, iso_days_ago(400)));
    write_file(home.sessions() / (mid_id + ".jsonl"), header_line(mid_id, iso_days_ago(30)));
    write_file(home.sessions() / "junk.jsonl", "{{{\n");
    CHECK(prune_sessions(std::chrono::hours(24 * 365)) == std::vector<std::string>{old_id});
    CHECK(prune_sessions(std::chrono::hours(24 * 365)).empty());
    CHECK(prune_sessions(std::chrono::hours(24 * 7)) == std::vector<std::string>{mid_id});
    CHECK(prune_sessions(std::chrono::hours(24)).empty());
    CHECK(fs::exists(home.sessions() / "junk.jsonl"));
}

TEST_CASE("ISO timestamps follow Python isoformat") {
    using namespace std::chrono;
    auto t = sys_days{year{2024} / 2 / 29} + hours{13} + minutes{5} + seconds{9};
    CHECK(iso_utc(t) == "2024-02-29T13:05:09+00:00");
    CHECK(iso_utc(t + microseconds{1500}) == "2024-02-29T13:05:09.001500+00:00");
    CHECK(parse_iso_datetime("2024-02-29T13:05:09.001500+00:00") == t + microseconds{1500});
    CHECK(parse_iso_datetime("2024-02-29T15:05:09+02:00") == t);
    CHECK(parse_iso_datetime("2024-02-29T13:05:09") == t);
    CHECK_FALSE(parse_iso_datetime("yesterday").has_value());
    CHECK_FALSE(parse_iso_datetime("2023-02-29T00:00:00").has_value());
}

}  // TEST_SUITE
