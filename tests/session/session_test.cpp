#include <rath/session.hpp>
#include <rath/session/lineage_recorder.hpp>
#include <rath/session/registry.hpp>

#include <doctest/doctest.h>

#include <thread>

#include <sstream>

using namespace rath;

namespace {
TokenUsage usage(std::int64_t p, std::int64_t c) { return TokenUsage{.prompt_tokens = p, .completion_tokens = c, .total_tokens = p + c}; }
}  // namespace

TEST_SUITE("session/session") {

TEST_CASE("a session id is a lowercase random v4 uuid") {
    Session a, b;
    CHECK(a.id().size() == 36);
    CHECK(a.id()[14] == '4');
    CHECK(a.id() != b.id());
    for (char c : a.id()) CHECK(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-'));
}

TEST_CASE("copies of a session handle are the same session") {
    Session a = Session::from_user_message("hi");
    Session b = a;
    CHECK(a == b);
    CHECK(b.id() == a.id());
    b.append_chunk(user_text_chunk("more"));
    CHECK(a.chunks().size() == 2);
}

TEST_CASE("from_user_message and from_agent_prompt make one row and no lineage stamp") {
    Session u = Session::from_user_message("hello");
    Session s = Session::from_agent_prompt("be brief");
    CHECK(u.chunks().size() == 1);
    CHECK(u.chunks()[0]->kind() == ChunkKind::user);
    CHECK(s.chunks()[0]->kind() == ChunkKind::system);
    CHECK(u.lineage_operator() == "implicit");
    CHECK(u.lineage_kind() == LineageKind::unknown);
    CHECK(u.parent_session_ids().empty());
    CHECK_FALSE(u.usage().has_value());
    CHECK_FALSE(u.sandbox_backend().has_value());
}

TEST_CASE("create stamps leaves and rejects unknown kinds") {
    Session u = Session::create("user", "hi");
    CHECK(u.lineage_kind() == LineageKind::leaf_user);
    CHECK(u.lineage_operator() == "Session.create");
    REQUIRE(u.lineage_extras().size() == 1);
    CHECK(u.lineage_extras()[0].first == "source");
    CHECK(u.lineage_extras()[0].second == "Session.create");
    Session s = Session::create("system", "sys");
    CHECK(s.lineage_kind() == LineageKind::leaf_system);
    CHECK(s.chunks()[0]->kind() == ChunkKind::system);
    Session e = Session::create("empty", "ignored");
    CHECK(e.chunks().empty());
    CHECK(e.lineage_kind() == LineageKind::unknown);
    CHECK_FALSE(u.sandbox_backend().has_value());
    CHECK_THROWS_WITH_AS(Session::create("agent"),
                         "Session.create: unknown kind 'agent'; expected one of 'user', 'system', 'empty'", SessionError);
}

TEST_CASE("create_user_session stamps a leaf with its own operator") {
    Session u = create_user_session("hi");
    CHECK(u.lineage_kind() == LineageKind::leaf_user);
    CHECK(u.lineage_operator() == "create_user_session");
    CHECK(u.lineage_extras()[0].second == "create_user_session");
    Session s = create_system_session("p");
    CHECK(s.lineage_kind() == LineageKind::leaf_system);
    CHECK(s.lineage_operator() == "create_system_session");
}

TEST_CASE("fork shares the rows and records its parent") {
    Session a = create_user_session("hi");
    a.set_usage(usage(1, 2));
    Session f = a.fork();
    CHECK(f.id() != a.id());
    CHECK(f.chunks().same_as(a.chunks()));
    CHECK(f.parent_session_ids() == std::vector<std::string>{a.id()});
    CHECK(f.lineage_operator() == "Session.fork");
    CHECK(f.lineage_kind() == LineageKind::op_fork);
    CHECK(f.lineage_extras().empty());
    CHECK_FALSE(f.usage().has_value());  // usage is not copied
    CHECK_FALSE(f.legacy_lineage().has_value());
    CHECK(fork_session(a).lineage_kind() == LineageKind::op_fork);
}

TEST_CASE("detach copies the rows without parents") {
    Session a = create_user_session("hi");
    Session d = detach_session(a);
    CHECK(d.parent_session_ids().empty());
    CHECK(d.lineage_operator() == "Session.detach");
    CHECK(d.lineage_kind() == LineageKind::op_detach);
    CHECK(d.chunks() == a.chunks());
}

TEST_CASE("appending to a fork leaves the parent unchanged") {
    Session a = create_user_session("hi");
    Session f = a.fork();
    f.append_chunk(assistant_turn_chunk({}, std::string("hello")));
    CHECK(a.chunks().size() == 1);
    CHECK(f.chunks().size() == 2);
    CHECK(f.text() == "hello");
    CHECK_FALSE(a.text().has_value());
}

TEST_CASE("merge concatenates rows sums usage and records both parents") {
    Session a = create_user_session("a");
    Session b = create_user_session("b");
    a.set_usage(usage(10, 5));
    b.set_usage(usage(1, 1));
    Session m = a.merge(b);
    REQUIRE(m.chunks().size() == 2);
    CHECK(m.chunks()[0]->payload().at("content") == "a");
    CHECK(m.chunks()[1]->payload().at("content") == "b");
    REQUIRE(m.usage().has_value());
    CHECK(m.usage()->prompt_tokens == 11);
    CHECK(m.usage()->completion_tokens == 6);
    CHECK(m.usage()->total_tokens == 17);
    CHECK(m.parent_session_ids() == std::vector<std::string>{a.id(), b.id()});
    CHECK(m.lineage_operator() == "Session.merge");
    CHECK(m.lineage_kind() == LineageKind::op_merge);
}

TEST_CASE("merge usage is null safe") {
    Session a = create_user_session("a");
    Session b = create_user_session("b");
    CHECK_FALSE(a.merge(b).usage().has_value());
    b.set_usage(usage(3, 4));
    CHECK(a.merge(b).usage() == b.usage());
    CHECK(b.merge(a).usage() == b.usage());
}

TEST_CASE("merging unbound sessions on different backends is refused") {
    Session a = create_user_session("a");
    Session b = create_user_session("b");
    a.to("local");
    b.to("opensandbox");
    CHECK_THROWS_WITH_AS(a.merge(b),
                         "cannot merge unbound sessions targeting different backends: 'local' vs 'opensandbox'",
                         SessionError);
    Session c = create_user_session("c");
    CHECK_THROWS_WITH_AS(a.merge(c), "cannot merge unbound sessions targeting different backends: 'local' vs None",
                         SessionError);
    Session d = create_user_session("d");
    d.to("local");
    CHECK(a.merge(d).sandbox_backend() == "local");
}

TEST_CASE("with graph mode off operators do not stamp") {
    Session a = create_user_session("a");
    lineage::GraphModeOverride off(false);
    CHECK_FALSE(lineage::graph_mode());
    Session f = a.fork();
    CHECK(f.lineage_operator() == "implicit");
    CHECK(f.lineage_kind() == LineageKind::unknown);
    CHECK(f.parent_session_ids().empty());
    Session c = Session::create("user", "x");
    CHECK(c.lineage_kind() == LineageKind::unknown);
}

TEST_CASE("text returns the last assistant row with non blank content") {
    Session s = Session::from_user_message("q");
    CHECK_FALSE(s.text().has_value());
    s.append_chunk(assistant_turn_chunk({}, std::string("first")));
    s.append_chunk(assistant_turn_chunk({{.id = "1", .name = "t", .arguments = "{}"}}, std::string("  \n")));
    s.append_chunk(tool_feedback_chunk("1", "t", "r"));
    CHECK(s.text() == "first");
}

TEST_CASE("repr shows every row of a short transcript") {
    Session s = Session::from_user_message("hi");
    s.append_chunk(assistant_turn_chunk({}, std::string("hello\nthere")));
    std::ostringstream os;
    os << s;
    CHECK(os.str() ==
          "Session(\n  chunks=[\n    [0] user: 'hi',\n    [1] assistant: text='hello\\\\nthere'\n  ],\n  operator='implicit',\n)");
    CHECK(Session().repr() == "Session(\n  chunks=[],\n  operator='implicit',\n)");
}

TEST_CASE("repr elides the middle of a long transcript with real indices") {
    Session s;
    for (int i = 0; i < 12; ++i) s.append_chunk(user_text_chunk("m" + std::to_string(i)));
    std::string r = s.repr();
    CHECK(r.find("[3] user: 'm3',\n    ... (4 chunks omitted) ...,\n    [8] user: 'm8'") != std::string::npos);
    CHECK(r.find("[4] user") == std::string::npos);
    CHECK(r.find("[11] user: 'm11'\n  ]") != std::string::npos);
}

TEST_CASE("a long user text is previewed to 256 characters") {
    Session s = Session::from_user_message(std::string(300, 'x') + "END");
    std::string r = s.repr();
    CHECK(r.find(std::string(125, 'x') + " ... " + std::string(122, 'x') + "END'") != std::string::npos);
}

TEST_CASE("the registry keeps sessions by id and the active one") {
    auto& reg = session_registry();
    reg.clear();
    Session a = create_user_session("a");
    Session b = a.fork();
    reg.register_session(a);
    reg.register_session(b);
    reg.register_session(a);
    CHECK(reg.size() == 2);
    CHECK(reg.get(b.id()) == b);
    CHECK_FALSE(reg.get("nope").has_value());
    CHECK_FALSE(reg.active_id().has_value());
    reg.set_active(b);
    CHECK(reg.active_id() == b.id());
    reg.set_active(std::nullopt);
    CHECK_FALSE(reg.active_id().has_value());
    auto all = reg.sessions();
    REQUIRE(all.size() == 2);
    CHECK(all[0] == a);  // re-registering keeps the first position
    CHECK(all[1] == b);
    reg.clear();
}

TEST_CASE("the registry does not keep a session alive and a destroyed session leaves it") {
    auto& reg = session_registry();
    reg.clear();
    Session kept = create_user_session("kept");
    reg.register_session(kept);
    std::string gone_id;
    {
        Session gone = create_user_session("gone");
        gone_id = gone.id();
        reg.register_session(gone);
        CHECK(reg.get(gone_id).has_value());
    }
    CHECK_FALSE(reg.get(gone_id).has_value());
    CHECK(reg.size() == 1);
    // Many short-lived sessions: the registry stays small and the live one stays.
    for (int i = 0; i < 5000; ++i) reg.register_session(create_user_session("t"));
    CHECK(reg.get(kept.id()) == kept);
    CHECK(reg.sessions().size() == 1);
    // Order survives the prunes: the first live session stays first.
    Session later = create_user_session("later");
    reg.register_session(later);
    reg.register_session(kept);
    auto all = reg.sessions();
    REQUIRE(all.size() == 2);
    CHECK(all[0] == kept);
    CHECK(all[1] == later);
    reg.clear();
}

TEST_CASE("a second session with a registered id takes its place, and the first one's end does not remove it") {
    auto& reg = session_registry();
    reg.clear();
    Session first_other = create_user_session("other");
    reg.register_session(first_other);
    std::optional<Session> first = Session(ChunkTable{}, SessionOptions{.id = std::string("shared-id")});
    reg.register_session(*first);
    Session second(ChunkTable{}, SessionOptions{.id = std::string("shared-id")});
    reg.register_session(second);
    CHECK(reg.size() == 2);
    CHECK(reg.get("shared-id") == second);
    first.reset();  // the replaced session goes: the entry is the second's now
    CHECK(reg.get("shared-id") == second);
    // Registering a replaced session again puts it back in the entry (a dict assignment).
    Session third(ChunkTable{}, SessionOptions{.id = std::string("shared-id")});
    reg.register_session(third);
    CHECK(reg.get("shared-id") == third);
    reg.register_session(second);
    CHECK(reg.get("shared-id") == second);
    reg.register_session(second);  // already in: no change
    CHECK(reg.get("shared-id") == second);
    CHECK(reg.size() == 2);
    auto all = reg.sessions();
    REQUIRE(all.size() == 2);
    CHECK(all[0] == first_other);
    CHECK(all[1] == second);  // in the first one's place
    reg.clear();
    // A session registered before a clear still leaves cleanly, and can be registered again.
    std::optional<Session> cleared = create_user_session("c");
    reg.register_session(*cleared);
    reg.clear();
    CHECK_FALSE(reg.get(cleared->id()).has_value());
    reg.register_session(*cleared);
    CHECK(reg.get(cleared->id()) == *cleared);
    cleared.reset();
    CHECK(reg.size() == 0);
}

TEST_CASE("sessions registered and destroyed on several threads at once leave the registry consistent") {
    auto& reg = session_registry();
    reg.clear();
    Session kept = create_user_session("kept");
    reg.register_session(kept);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&reg] {
            for (int i = 0; i < 2000; ++i) {
                Session s = create_user_session("t");
                reg.register_session(s);
                if (i % 7 == 0) (void)reg.sessions();
                if (i % 11 == 0) (void)reg.get(s.id());
            }
        });
    for (auto& th : threads) th.join();
    CHECK(reg.size() == 1);
    CHECK(reg.get(kept.id()) == kept);
    reg.clear();
}

TEST_CASE("the registry finds every live session among thousands registered and destroyed out of order") {
    auto& reg = session_registry();
    reg.clear();
    std::vector<std::optional<Session>> all;
    std::vector<std::string> ids;
    for (int i = 0; i < 6000; ++i) {
        all.emplace_back(create_user_session("s"));
        ids.push_back(all.back()->id());
        reg.register_session(*all.back());
    }
    // Every third one goes, then every other of the rest: runs of removed entries in
    // the middle of probe chains.
    for (std::size_t i = 0; i < all.size(); i += 3) all[i].reset();
    for (std::size_t i = 1; i < all.size(); i += 2) all[i].reset();
    std::size_t live = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        auto got = reg.get(ids[i]);
        if (all[i]) {
            ++live;
            REQUIRE(got.has_value());
            CHECK(*got == *all[i]);
        } else {
            CHECK_FALSE(got.has_value());
        }
    }
    CHECK(reg.size() == live);
    {
        auto listed = reg.sessions();  // registration order
        REQUIRE(listed.size() == live);
        std::size_t k = 0;
        for (auto& s : all)
            if (s) CHECK(listed[k++] == *s);
    }
    // All gone: the registry is empty and still takes new sessions.
    for (auto& s : all) s.reset();
    CHECK(reg.size() == 0);
    Session fresh = create_user_session("fresh");
    reg.register_session(fresh);
    CHECK(reg.get(fresh.id()) == fresh);
    CHECK(reg.sessions().size() == 1);
    reg.clear();
}

TEST_CASE("append_chunk returns the index of the new row") {
    Session s;
    CHECK(s.append_chunk(user_text_chunk("a")) == 0);
    CHECK(s.append_chunk(user_text_chunk("b")) == 1);
}

}  // TEST_SUITE
