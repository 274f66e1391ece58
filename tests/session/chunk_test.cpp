#include <rath/session/chunk.hpp>
#include <rath/session/chunk_table.hpp>
#include <rath/session/error.hpp>
#include <rath/session/format.hpp>
#include <rath/session/messages.hpp>

#include "lib/text/pyjson.hpp"

#include <doctest/doctest.h>

#include <thread>

#include <vector>

using namespace rath;

namespace {
std::string keys_of(const boost::json::object& o) {
    std::string out;
    for (auto& kv : o) {
        if (!out.empty()) out += ",";
        out += kv.key();
    }
    return out;
}
}  // namespace

TEST_SUITE("session/chunk") {

TEST_CASE("chunk kinds use the spec wire values") {
    CHECK(to_string(ChunkKind::system) == "system");
    CHECK(to_string(ChunkKind::user) == "user");
    CHECK(to_string(ChunkKind::assistant) == "assistant");
    CHECK(to_string(ChunkKind::tool_result) == "tool_result");
    CHECK(chunk_kind_from_string("tool_result") == ChunkKind::tool_result);
    CHECK_FALSE(chunk_kind_from_string("tool").has_value());
}

TEST_CASE("row builders produce the exact payload keys in order") {
    CHECK(keys_of(user_text_chunk("hi")->payload()) == "content");
    CHECK(keys_of(system_text_chunk("sys")->payload()) == "content");
    auto a = assistant_turn_chunk({{.id = "c1", .name = "run", .arguments = "{\"x\": 1}"}}, std::string("ok"));
    CHECK(keys_of(a->payload()) == "content,tool_calls");
    CHECK(detail::pyjson_utf8(a->payload()) ==
          R"({"content": "ok", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{\"x\": 1}"}}]})");
    auto t = tool_feedback_chunk("c1", "run", "body");
    CHECK(keys_of(t->payload()) == "tool_call_id,name,content");
}

TEST_CASE("an assistant turn with no tool calls stores null for both absent fields") {
    auto a = assistant_turn_chunk({}, std::nullopt);
    CHECK(detail::pyjson_utf8(a->payload()) == R"({"content": null, "tool_calls": null})");
}

TEST_CASE("rows larger than their first block keep every byte") {
    const std::string big(100'000, 'x');
    auto t = tool_feedback_chunk(std::string(40, 'i'), std::string(30, 'n'), big);
    CHECK(t->payload().at("content").as_string() == big);
    CHECK(t->payload().at("tool_call_id").as_string() == std::string(40, 'i'));
    std::vector<ToolCallFields> calls;
    std::vector<std::string> ids;
    for (int i = 0; i < 50; ++i) ids.push_back("call_" + std::to_string(i) + std::string(20, 'z'));
    for (int i = 0; i < 50; ++i) calls.push_back({ids[i], "tool_name_long_enough", R"({"path": "/some/where/long"})"});
    auto a = assistant_turn_chunk_from(calls, std::string_view(big));
    const auto& list = a->payload().at("tool_calls").as_array();
    REQUIRE(list.size() == 50);
    CHECK(list[49].at("id").as_string() == ids[49]);
    CHECK(list[49].at("function").at("arguments").as_string() == R"({"path": "/some/where/long"})");
    CHECK(a->payload().at("content").as_string() == big);
}

TEST_CASE("a copy of a row's payload is independent of the row and outlives it") {
    boost::json::object copy;
    boost::json::value copied_call;
    {
        auto a = assistant_turn_chunk_from(std::vector<ToolCallFields>{{"call_0123456789abcdef", "run", "{\"x\": 1}"}},
                                           std::string_view("a long enough content string"));
        copy = a->payload();  // assignment: the copy's own storage
        copied_call = a->payload().at("tool_calls").as_array()[0];  // copy construction: the row's storage
        copied_call.as_object()["extra"] = std::string(1000, 'e');  // allocated after the row was sealed
        CHECK(a->payload().at("tool_calls").as_array()[0].as_object().size() == 3);
    }
    // The row is gone: both copies still read and grow (ASan would catch a dangling block).
    copy["more"] = std::string(500, 'm');
    copied_call.as_object()["more"] = std::string(500, 'm');
    CHECK(copy.at("content").as_string() == "a long enough content string");
    CHECK(copied_call.at("id").as_string() == "call_0123456789abcdef");
    CHECK(copied_call.at("extra").as_string().size() == 1000);
}

TEST_CASE("the borrowed-field builder writes the same row as the owning one") {
    auto owned = assistant_turn_chunk({{.id = "c1", .name = "run", .arguments = "{}", .type = "function"}}, std::string("hi"));
    auto borrowed = assistant_turn_chunk_from(std::vector<ToolCallFields>{{"c1", "run", "{}"}}, std::string_view("hi"));
    CHECK(*owned == *borrowed);
    CHECK(*assistant_turn_chunk({}, std::nullopt) == *assistant_turn_chunk_from({}, std::nullopt));
    CHECK(*assistant_turn_chunk({}, std::nullopt) == *assistant_turn_chunk_wire({}, std::nullopt));
}

TEST_CASE("rows shared across threads are copied concurrently") {
    auto row = tool_feedback_chunk("call_shared_between_threads", "run", std::string(300, 'b'));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([row] {
            for (int i = 0; i < 200; ++i) {
                boost::json::object c(row->payload());
                c["n"] = std::string(64, 'n');
                CHECK(c.at("content").as_string().size() == 300);
            }
        });
    for (auto& th : threads) th.join();
}

TEST_CASE("an assistant row's tool calls become message objects that outlive the row") {
    std::vector<rath::llm::Message> kept;
    {
        std::vector<std::string> ids = {"call_aaaaaaaaaaaaaaaaaaaa", "call_bbbbbbbbbbbbbbbbbbbb"};
        auto row = assistant_turn_chunk_from(
            std::vector<ToolCallFields>{{ids[0], "word_count", R"({"text": "one two three four"})"},
                                        {ids[1], "a_rather_long_tool_name", "{}"}},
            std::nullopt);
        kept.push_back(chunk_row_to_message(*row));
        REQUIRE(kept[0].tool_calls);
        REQUIRE(kept[0].tool_calls->size() == 2);
        CHECK(boost::json::value((*kept[0].tool_calls)[0]) == row->payload().at("tool_calls").as_array()[0]);
        CHECK(boost::json::value((*kept[0].tool_calls)[1]) == row->payload().at("tool_calls").as_array()[1]);
    }
    // The row is gone; the message's objects still read, grow and copy.
    auto& call = (*kept[0].tool_calls)[1];
    call["added"] = std::string(2000, 'a');
    boost::json::object copy = call;
    CHECK(copy.at("id").as_string() == "call_bbbbbbbbbbbbbbbbbbbb");
    CHECK(copy.at("added").as_string().size() == 2000);
    CHECK((*kept[0].tool_calls)[0].at("function").at("name").as_string() == "word_count");
    CHECK(kept[0].role == "assistant");
    CHECK_FALSE(kept[0].content.has_value());
}

TEST_CASE("rows compare by kind and deep payload") {
    CHECK(*user_text_chunk("a") == *user_text_chunk("a"));
    CHECK_FALSE(*user_text_chunk("a") == *system_text_chunk("a"));
    CHECK_FALSE(*user_text_chunk("a") == *user_text_chunk("b"));
}

TEST_CASE("extending a table returns a new table and leaves the original untouched") {
    ChunkTable a{user_text_chunk("one")};
    ChunkTable b = a.append(user_text_chunk("two"));
    CHECK(a.size() == 1);
    CHECK(b.size() == 2);
    CHECK(b[0] == a[0]);  // the same row object is shared
    CHECK_FALSE(a.same_as(b));
    ChunkTable c = a;
    CHECK(c.same_as(a));
}

TEST_CASE("large tables keep every row in order across many blocks") {
    std::vector<ChunkRowPtr> rows;
    for (int i = 0; i < 5000; ++i) rows.push_back(user_text_chunk(std::to_string(i)));
    ChunkTable bulk(rows);
    ChunkTable incremental;
    for (auto& r : rows) incremental = incremental.append(r);
    REQUIRE(bulk.size() == 5000);
    REQUIRE(incremental.size() == 5000);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        CHECK(bulk[i] == rows[i]);
        CHECK(incremental[i] == rows[i]);
    }
    std::size_t i = 0;
    for (const auto& r : incremental) CHECK(r == rows[i++]);
    CHECK(i == 5000);
    CHECK(bulk == incremental);
}

TEST_CASE("branches of a shared prefix do not see each other's rows") {
    std::vector<ChunkRowPtr> rows;
    for (int i = 0; i < 1100; ++i) rows.push_back(user_text_chunk(std::to_string(i)));
    ChunkTable base(rows);
    ChunkTable left = base.append(user_text_chunk("left"));
    ChunkTable right = base.extend(ChunkTable{user_text_chunk("right"), user_text_chunk("right2")});
    CHECK(base.size() == 1100);
    CHECK(left.size() == 1101);
    CHECK(right.size() == 1102);
    CHECK(left[1100]->payload().at("content") == "left");
    CHECK(right[1100]->payload().at("content") == "right");
    CHECK(right[1101]->payload().at("content") == "right2");
    for (std::size_t i = 0; i < 1100; ++i) CHECK(left[i] == right[i]);
}

TEST_CASE("two appends to the same version at every tail position keep their own rows") {
    // The first append claims the shared tail's next slot in place; the second must copy.
    ChunkTable base;
    for (int n = 0; n < 70; ++n) {
        ChunkTable first = base.append(user_text_chunk("first"));
        ChunkTable second = base.append(user_text_chunk("second"));
        ChunkTable first2 = first.append(user_text_chunk("first2"));
        ChunkTable second2 = second.append(user_text_chunk("second2"));
        REQUIRE(base.size() == static_cast<std::size_t>(n));
        CHECK(first[n]->payload().at("content") == "first");
        CHECK(second[n]->payload().at("content") == "second");
        CHECK(first2[n]->payload().at("content") == "first");
        CHECK(first2[n + 1]->payload().at("content") == "first2");
        CHECK(second2[n]->payload().at("content") == "second");
        CHECK(second2[n + 1]->payload().at("content") == "second2");
        for (int i = 0; i < n; ++i) {
            CHECK(first[i] == base[i]);
            CHECK(second2[i] == base[i]);
        }
        base = base.append(user_text_chunk(std::to_string(n)));
    }
}

TEST_CASE("appends racing from many threads on one version each see exactly their own row") {
    ChunkTable base;
    for (int i = 0; i < 3; ++i) base = base.append(user_text_chunk(std::to_string(i)));
    constexpr int kThreads = 8;
    std::vector<ChunkTable> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            ChunkTable mine = base;
            for (int k = 0; k < 40; ++k) mine = mine.append(user_text_chunk("t" + std::to_string(t) + "-" + std::to_string(k)));
            results[t] = mine;
        });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
        REQUIRE(results[t].size() == 43);
        for (int i = 0; i < 3; ++i) CHECK(results[t][i] == base[i]);
        for (int k = 0; k < 40; ++k)
            CHECK(results[t][3 + k]->payload().at("content").as_string() == ("t" + std::to_string(t) + "-" + std::to_string(k)).c_str());
    }
}

TEST_CASE("out of range access names the index and the size") {
    ChunkTable t{user_text_chunk("a")};
    CHECK_THROWS_WITH_AS((void)t.at(3), "chunk index 3 out of range for a table of 1 rows", SessionError);
}

TEST_CASE("rows map to provider messages in order with roles and tool fields") {
    ChunkTable t{system_text_chunk("sys"), user_text_chunk("hi"),
                 assistant_turn_chunk({{.id = "c1", .name = "run", .arguments = "{}"}}, std::nullopt),
                 tool_feedback_chunk("c1", "run", "{\"ok\": true}"), assistant_turn_chunk({}, std::string("done"))};
    auto m = chunk_table_to_messages(t);
    REQUIRE(m.size() == 5);
    CHECK(m[0].role == "system");
    CHECK(m[0].content == "sys");
    CHECK(m[1].role == "user");
    CHECK(m[2].role == "assistant");
    CHECK_FALSE(m[2].content.has_value());
    REQUIRE(m[2].tool_calls.has_value());
    CHECK(m[2].tool_calls->at(0).at("id") == "c1");
    CHECK(m[2].tool_calls->at(0).at("function").at("name") == "run");
    CHECK(m[3].role == "tool");
    CHECK(m[3].tool_call_id == "c1");
    CHECK(m[3].content == "{\"ok\": true}");
    CHECK_FALSE(m[3].name.has_value());  // the tool name is not forwarded
    CHECK(m[4].content == "done");
    CHECK_FALSE(m[4].tool_calls.has_value());
}

TEST_CASE("a row without content cannot become a message") {
    ChunkTable t{make_chunk_row(ChunkKind::user, boost::json::object{{"text", "x"}})};
    CHECK_THROWS_WITH_AS(chunk_table_to_messages(t), "chunk row 0 (user) has no 'content' key", SessionError);
}

TEST_CASE("the brief formatter unescapes JSON tool bodies and lists tool names") {
    auto t = tool_feedback_chunk("c1", "shell", "  {\"stdout\": \"\\u2500\\u2500 ok\", \"exit_code\": 0}  ");
    CHECK(format_chunk_row_brief(3, *t) == "[3] tool_result: name='shell' body={\"stdout\":\"\xE2\x94\x80\xE2\x94\x80 ok\",\"exit_code\":0}");
    auto plain = tool_feedback_chunk("c1", "shell", "not json");
    CHECK(format_chunk_row_brief(0, *plain) == "[0] tool_result: name='shell' body=not json");
    auto a = assistant_turn_chunk({{.id = "1", .name = "a", .arguments = "{}"}, {.id = "2", .name = "b", .arguments = "{}"}},
                                  std::string("thinking"));
    CHECK(format_chunk_row_brief(1, *a) == "[1] assistant: text='thinking', tools=[a, b]");
    CHECK(format_chunk_row_brief(2, *user_text_chunk("line1\nline2")) == "[2] user: 'line1\\\\nline2'");
}

TEST_CASE("the repr row lines follow the spec format") {
    auto a = assistant_turn_chunk({{.id = "1", .name = "run", .arguments = "{\"cmd\": \"ls\"}"}}, std::string("  "));
    CHECK(format_chunk_row_repr(1, *a) == "[1] assistant: tools=[run('{\"cmd\": \"ls\"}')]");
    CHECK(format_chunk_row_repr(0, *assistant_turn_chunk({}, std::nullopt)) == "[0] assistant: (empty)");
    CHECK(format_chunk_row_repr(2, *tool_feedback_chunk("id9", "t", "it's")) ==
          "[2] tool_result: name='t', id='id9', body=\"it's\"");
    CHECK(format_chunk_row_repr(0, *system_text_chunk("s")) == "[0] system: 's'");
}

}  // TEST_SUITE
