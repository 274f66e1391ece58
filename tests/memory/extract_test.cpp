#include <rath/memory.hpp>
#include <rath/testing/scripted_client.hpp>

#include <doctest/doctest.h>

#include "lib/memory/extract.hpp"
#include "tests/memory/memory_support.hpp"

#include <fstream>
#include <iterator>

using namespace rath::memory;
using rath::test::expect;
namespace fs = std::filesystem;

TEST_CASE("the extraction answer parses from fenced, bare or embedded JSON and keeps memory URIs only") {
    using detail::parse_extracted;
    auto fenced = parse_extracted("```json\n[{\"uri\": \"viking://user/memories/extracted/a\", \"content\": \"A.\"}]\n```");
    REQUIRE(fenced.size() == 1);
    CHECK(fenced[0].first == "memory://user/memories/extracted/a");
    CHECK(parse_extracted("Sure! [{\"uri\": \"memory://user/x\", \"content\": \"X.\"}] done").size() == 1);
    CHECK(parse_extracted("[{\"uri\": \"http://x\", \"content\": \"no\"}, {\"uri\": 3, \"content\": \"no\"}, 7]").empty());
    CHECK(parse_extracted("not json").empty());
}

TEST_CASE("the extraction prompt renders the transcript as the spec writes it") {
    std::vector<boost::json::object> msgs{{{"role", "user"}, {"content", "I like tea"}},
                                          {{"role", "assistant"}, {"content", nullptr}, {"parts", {"a", 1}}},
                                          {{"content", "no role"}}};
    CHECK(detail::extraction_user_prompt(msgs) ==
          "Conversation:\n[user] I like tea\n[assistant] a 1\n[user] no role\n\nReturn the JSON array now.");
    CHECK(detail::extraction_system_prompt().starts_with("You are a memory extractor."));
    CHECK(detail::extraction_system_prompt().ends_with("If no durable facts are present, return [].\n"));
}

TEST_CASE("a waited commit with a chat client writes the extracted memos and counts the files written") {
    rath::test::TempDir dir;
    auto chat = std::make_shared<rath::testing::ScriptedChatClient>();
    chat->push(rath::testing::ScriptedReply::text(
        "```json\n[{\"uri\": \"memory://user/memories/extracted/tea\", \"content\": \"The user likes tea.\"},"
        " {\"uri\": \"memory://bogus/x\", \"content\": \"skipped\"}]\n```"));
    auto spec = rath::test::spec_at(dir.path());
    spec.chat = chat;
    auto backend = make_local_memory_backend();
    auto store = backend->open(spec);
    OpCommit op{"s1"};
    op.messages.push_back({{"role", "user"}, {"content", "I like tea"}});
    op.wait = true;
    auto c = expect<CommitResult>(store->dispatch(op));
    CHECK(c.extracted_count == 1);
    CHECK(c.archived_uri.has_value());
    auto reqs = chat->requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].sampling.temperature == std::optional<double>(0.0));
    CHECK(reqs[0].messages.size() == 2);
    auto r = expect<ReadResult>(store->dispatch(OpRead{"memory://user/memories/extracted/tea"}));
    CHECK(std::get<std::string>(r.data) == "The user likes tea.");
    // A failing model yields zero memos, the archive still written.
    chat->push(rath::testing::ScriptedReply::text("garbage"));
    auto c2 = expect<CommitResult>(store->dispatch(op));
    CHECK(c2.extracted_count == 0);
    backend->close(store);
}
