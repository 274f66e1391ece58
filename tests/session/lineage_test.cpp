// Lineage recording, traversal and export (session.md §4).
#include "support/files.hpp"
#include "support/temp_dir.hpp"

#include <rath/session/graph.hpp>
#include <rath/session/lineage_recorder.hpp>
#include <rath/session/registry.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

using namespace rath;
using namespace rath::lineage;
using rath::test::read_file;

namespace {

Session node(std::vector<std::string> parents, std::string id) {
    SessionOptions o;
    o.id = std::move(id);
    o.lineage.parent_session_ids = std::move(parents);
    return Session(ChunkTable{}, std::move(o));
}

}  // namespace

TEST_SUITE("session/lineage") {

TEST_CASE("validate_acyclic reports a missing parent") {
    SessionGraph g{node({}, "a"), node({"ghost"}, "b")};
    CHECK_THROWS_WITH_AS(validate_acyclic(g), "b references missing parent ghost", LineageConsistencyError);
}

TEST_CASE("validate_acyclic reports a self cycle and a longer cycle") {
    CHECK_THROWS_WITH_AS(validate_acyclic({node({"a"}, "a")}), "cycle involving session a", LineageConsistencyError);
    SessionGraph g{node({"c"}, "a"), node({"a"}, "b"), node({"b"}, "c")};
    CHECK_THROWS_AS(validate_acyclic(g), LineageConsistencyError);
    CHECK_NOTHROW(validate_acyclic({node({}, "a"), node({"a"}, "b"), node({"a", "b"}, "c")}));
}

TEST_CASE("validate_acyclic handles a very deep chain without recursion") {
    SessionGraph g{node({}, "n0")};
    for (int i = 1; i < 50000; ++i) g.push_back(node({"n" + std::to_string(i - 1)}, "n" + std::to_string(i)));
    CHECK_NOTHROW(validate_acyclic(g));
}

TEST_CASE("ancestors come nearest first") {
    SessionGraph g{node({}, "a"), node({"a"}, "b"), node({"b"}, "c")};
    CHECK(ancestors_bfs(g, "c") == std::vector<std::string>{"b", "a"});
    CHECK(ancestors_bfs(g, "a").empty());
    CHECK_THROWS_WITH_AS(ancestors_bfs(g, "z"), "unknown session id in graph: z", LineageConsistencyError);
    SessionGraph broken{node({"x"}, "b")};
    CHECK_THROWS_WITH_AS(ancestors_bfs(broken, "b"), "parent x not in registry for descendant chain from b",
                         LineageConsistencyError);
}

TEST_CASE("ancestors of a merge visit both parents breadth first") {
    SessionGraph g{node({}, "r"), node({"r"}, "p1"), node({}, "p2"), node({"p1", "p2"}, "m")};
    CHECK(ancestors_bfs(g, "m") == std::vector<std::string>{"p1", "p2", "r"});
}

TEST_CASE("descendants follow the spec preorder") {
    // root -> c1, c2 ; c1 -> g1, g2
    SessionGraph g{node({}, "root"), node({"root"}, "c1"), node({"root"}, "c2"), node({"c1"}, "g1"),
                   node({"c1"}, "g2")};
    CHECK(descendants_dfs_preorder(g, "root") == std::vector<std::string>{"c2", "c1", "g1", "g2"});
    CHECK_THROWS_WITH_AS(descendants_dfs_preorder(g, "nope"), "unknown root session id: nope", LineageConsistencyError);
}

TEST_CASE("edge pairs list parent child in graph and parent order") {
    SessionGraph g{node({}, "a"), node({}, "b"), node({"a", "b"}, "m"), node({"m"}, "f")};
    auto e = edge_pairs(g);
    REQUIRE(e.size() == 3);
    CHECK(e[0] == std::pair<std::string, std::string>{"a", "m"});
    CHECK(e[1] == std::pair<std::string, std::string>{"b", "m"});
    CHECK(e[2] == std::pair<std::string, std::string>{"m", "f"});
}

TEST_CASE("the recorder stamps when on and does nothing when off") {
    Session s;
    {
        GraphModeOverride off(false);
        stamp_new_session(s, {"p"}, "op", LineageKind::op_fork);
        CHECK(s.lineage_operator() == "implicit");
        {
            GraphModeOverride on(true);
            CHECK(graph_mode());
        }
        CHECK_FALSE(graph_mode());
    }
    CHECK(graph_mode());
    stamp_new_session(s, {"p"}, "op", LineageKind::op_fork, {{"k", 1}});
    CHECK(s.lineage_operator() == "op");
    CHECK(s.parent_session_ids() == std::vector<std::string>{"p"});
    CHECK(s.lineage_extras().size() == 1);
}

TEST_CASE("a journal records stamped sessions and stays readable after the scope") {
    JournalPtr j;
    Session a = create_user_session("a");
    std::string f_id, d_id;
    {
        JournalTracking tracking;
        j = tracking.journal();
        f_id = a.fork().id();
        d_id = a.detach().id();
        {
            GraphModeOverride off(false);
            (void)a.fork();  // not stamped, not journaled
        }
    }
    CHECK(j->visit_order() == std::vector<std::string>{f_id, d_id});
    CHECK(current_journal() == nullptr);
    Session after = a.fork();
    CHECK(j->size() == 2);
}

TEST_CASE("an external journal is filled in place and inner tracking shadows outer") {
    auto outer = std::make_shared<Journal>();
    auto inner = std::make_shared<Journal>();
    Session a = create_user_session("a");
    {
        JournalTracking t1(outer);
        (void)a.fork();
        {
            JournalTracking t2(inner);
            (void)a.fork();
        }
        (void)a.fork();
    }
    CHECK(outer->size() == 2);
    CHECK(inner->size() == 1);
}

TEST_CASE("a captured lineage context carries the mode and the journal to another thread") {
    auto j = std::make_shared<Journal>();
    JournalTracking t(j);
    GraphModeOverride off(false);
    LineageContext ctx = capture_lineage_context();
    bool mode_there = true;
    std::thread th([&] {
        LineageContextScope scope(ctx);
        mode_there = graph_mode();
        GraphModeOverride on(true);
        (void)create_user_session("x");
    });
    th.join();
    CHECK_FALSE(mode_there);
    CHECK(j->size() == 1);
}

TEST_CASE("a JSONL row has the spec keys and values") {
    Session a = create_user_session("a");
    Session f = a.fork();
    f.add_lineage_extra("trace", "demo");
    f.set_usage(TokenUsage{.prompt_tokens = 1, .completion_tokens = 2, .total_tokens = 3});
    std::string line = export_jsonl_string({f});
    CHECK(line == "{\"id\": \"" + f.id() + "\", \"parent_session_ids\": [\"" + a.id() +
                      "\"], \"lineage_operator\": \"Session.fork\", \"lineage_kind\": \"op_fork\", \"lineage_extras\": "
                      "[[\"trace\", \"demo\"]], \"chunk_count\": 1, \"cumulative_usage\": {\"prompt_tokens\": 1, "
                      "\"completion_tokens\": 2, \"total_tokens\": 3}}\n");
    CHECK(export_jsonl_string({}).empty());
    std::string two = export_jsonl_string({a, f});
    CHECK(std::count(two.begin(), two.end(), '\n') == 2);
    CHECK(two.back() == '\n');
}

TEST_CASE("export_jsonl creates parent directories") {
    rath::test::TempDir tmp;
    auto path = tmp.path() / "deep" / "er" / "graph.jsonl";
    Session a = create_user_session("a");
    Session f = a.fork();
    export_jsonl({a, f}, path);
    CHECK(read_file(path) == export_jsonl_string({a, f}));
}

TEST_CASE("journal export resolves ids through the registry in order and skips unknown ones") {
    rath::test::TempDir tmp;
    auto& reg = session_registry();
    reg.clear();
    Journal j;
    Session a = create_user_session("a");
    Session b = create_user_session("b");
    reg.register_session(a);
    reg.register_session(b);
    j.record(b.id());
    j.record("not-registered");
    j.record(a.id());
    export_journal_jsonl(j, tmp.path() / "j.jsonl");
    CHECK(read_file(tmp.path() / "j.jsonl") == export_jsonl_string({b, a}));
    CHECK_THROWS_WITH_AS(export_journal_jsonl(j, tmp.path() / "k.jsonl", false), "session not-registered not in registry",
                         LineageConsistencyError);
    Journal empty;
    export_journal_jsonl(empty, tmp.path() / "empty.jsonl");
    CHECK(read_file(tmp.path() / "empty.jsonl").empty());
    reg.clear();
}

TEST_CASE("the DOT export has one node per session and one edge per parent link") {
    Session a = create_user_session("a");
    Session f = a.fork();
    Session d = a.detach();
    Session m = f.merge(d);
    std::string dot = export_dot_string({a, f, d, m});
    CHECK(dot.starts_with("digraph \"lineage\" {"));
    CHECK(dot.find("\"" + a.id() + "\" -> \"" + f.id() + "\"") != std::string::npos);
    CHECK(dot.find("\"" + f.id() + "\" -> \"" + m.id() + "\"") != std::string::npos);
    CHECK(dot.find("\"" + d.id() + "\" -> \"" + m.id() + "\"") != std::string::npos);
    CHECK(std::count(dot.begin(), dot.end(), '>') == 3);
    CHECK(dot.find("Session.merge\\nop_merge") != std::string::npos);
    std::string partial = export_dot_string({m});  // parents outside the graph are dashed
    CHECK(partial.find("(outside graph)") != std::string::npos);
}

TEST_CASE("graphviz renders the DOT export to SVG") {
    if (std::system("command -v dot >/dev/null 2>&1") != 0) {
        MESSAGE("graphviz is not installed; skipping the render check");
        return;
    }
    rath::test::TempDir tmp;
    Session a = create_user_session("quote \" and \\ backslash");
    Session f = a.fork();
    Session m = f.merge(a.detach());
    export_dot({a, f, m}, tmp.path() / "g.dot", {.graph_name = "odd \"name\""});
    std::string cmd = "dot -Tsvg '" + (tmp.path() / "g.dot").string() + "' -o '" + (tmp.path() / "g.svg").string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::string svg = read_file(tmp.path() / "g.svg");
    CHECK(svg.find("<svg") != std::string::npos);
    CHECK(svg.find("Session.merge") != std::string::npos);
}

TEST_CASE("lineage_view freezes the lineage fields") {
    Session a = create_user_session("a");
    Session f = a.fork();
    LineageView v = lineage_view(f);
    CHECK(v.session_id == f.id());
    CHECK(v.parent_session_ids == std::vector<std::string>{a.id()});
    CHECK(v.lineage_operator == "Session.fork");
    CHECK(v.lineage_kind == "op_fork");
}

}  // TEST_SUITE

TEST_CASE("a journal keeps what it recorded exportable after the handles are gone") {
    rath::test::TempDir tmp;
    auto j = std::make_shared<Journal>();
    std::string expected;
    {
        JournalTracking t(j);
        Session a = create_user_session("a");
        Session f = a.fork();
        expected = export_jsonl_string({a, f});
    }
    REQUIRE(j->size() == 2);
    CHECK(j->find(j->visit_order()[0]).has_value());
    export_journal_jsonl(*j, tmp.path() / "j.jsonl", false);
    std::ifstream in(tmp.path() / "j.jsonl");
    std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(got == expected);
}
