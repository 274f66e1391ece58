// 02_session_lineage: sessions as values. Fork, detach and merge a transcript, walk the
// lineage graph, export it as JSONL and Graphviz DOT, and persist one session as
// append-only JSONL and load it back. No API key, no network.
//
//   02_session_lineage [output-dir]     (default: ./session_lineage_out)
//   dot -Tsvg session_lineage_out/lineage.dot -o lineage.svg
#include <rath/session.hpp>
#include <rath/session/graph.hpp>
#include <rath/session/lineage_recorder.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/writer.hpp>

#include <filesystem>
#include <iostream>

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    fs::path out = argc > 1 ? fs::path(argv[1]) : fs::path("session_lineage_out");
    fs::create_directories(out);

    // Every stamped session is recorded in this journal, in creation order.
    rath::lineage::JournalTracking tracking;

    rath::Session question = rath::create_user_session("What is the capital of France?");
    rath::Session prompt = rath::create_system_session("You answer in one word.");

    // Two branches explore the same question; forks share the transcript (O(1)).
    rath::Session branch_a = question.fork();
    branch_a.append_chunk(rath::assistant_turn_chunk({}, std::string("Paris")));
    branch_a.set_usage(rath::TokenUsage{.prompt_tokens = 12, .completion_tokens = 1, .total_tokens = 13});

    rath::Session branch_b = question.fork();
    branch_b.append_chunk(rath::assistant_turn_chunk(
        {{.id = "call_1", .name = "lookup", .arguments = R"({"country": "France"})"}}, std::nullopt));
    branch_b.append_chunk(rath::tool_feedback_chunk("call_1", "lookup", R"({"capital": "Paris"})"));
    branch_b.append_chunk(rath::assistant_turn_chunk({}, std::string("Paris, per the lookup tool.")));
    branch_b.set_usage(rath::TokenUsage{.prompt_tokens = 30, .completion_tokens = 9, .total_tokens = 39});

    // A detached copy starts a new root with the same rows; a merge joins the branches.
    rath::Session scratch = branch_a.detach();
    rath::Session merged = branch_a.merge(branch_b);

    std::cout << "merged session:\n" << merged << "\n\n";
    std::cout << "merged text: " << merged.text().value_or("(none)") << "\n";
    auto usage = merged.usage();
    std::cout << "merged usage: " << (usage ? usage->total_tokens : 0) << " tokens (sum of both branches)\n\n";

    rath::lineage::SessionGraph graph{question, prompt, branch_a, branch_b, scratch, merged};
    rath::lineage::validate_acyclic(graph);
    std::cout << "ancestors of merged (nearest first):\n";
    for (const auto& id : rath::lineage::ancestors_bfs(graph, merged.id())) std::cout << "  " << id << "\n";
    std::cout << "descendants of the question:\n";
    for (const auto& id : rath::lineage::descendants_dfs_preorder(graph, question.id())) std::cout << "  " << id << "\n";
    std::cout << "journal recorded " << tracking.journal()->size() << " stamped sessions\n\n";

    rath::lineage::export_jsonl(graph, out / "lineage.jsonl");
    rath::lineage::export_dot(graph, out / "lineage.dot");
    std::cout << "wrote " << (out / "lineage.jsonl").string() << " and " << (out / "lineage.dot").string() << "\n";

    // Persist branch_b as append-only JSONL, then resume it.
    fs::path file = out / (branch_b.id() + ".jsonl");
    {
        rath::persistence::SessionWriter writer(branch_b, {.path = file});
        std::size_t i = 0;
        for (const auto& row : branch_b.chunks()) writer.write_chunk(i++, *row);
        writer.close();
    }
    auto loaded = rath::persistence::load_session(branch_b.id(), file);
    rath::Session resumed = loaded.to_session();
    std::cout << "persisted " << loaded.chunks.size() << " rows to " << file.string()
              << (loaded.closed ? " (closed)" : " (open)") << "; resumed session equals the original: "
              << std::boolalpha
              << (resumed.chunks() == branch_b.chunks() && resumed.usage() == branch_b.usage() &&
                  resumed.lineage() == branch_b.lineage())
              << "\n";
    return 0;
}
