// Writes a lineage viewer page (rath::lineage::export_html) of N sessions built through
// the library's graph operators: user sessions, forks that each add an assistant turn
// with a tool call and its result, and merges of two earlier sessions. The browser test
// loads it to check that the page stays fast at 10,000 sessions.
//
//   lineage_viewer_fixture OUT.html N
#include <rath/session.hpp>
#include <rath/session/graph.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: lineage_viewer_fixture OUT.html N\n");
        return 2;
    }
    const std::size_t n = std::strtoul(argv[2], nullptr, 10);
    try {
        std::vector<rath::Session> graph;
        graph.reserve(n);
        std::vector<std::size_t> rows;  // transcript length of each session, to keep merges small
        rows.reserve(n);
        std::uint64_t state = 0x9e3779b97f4a7c15ULL;  // fixed seed: the same graph every run
        auto next = [&state](std::size_t bound) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            return static_cast<std::size_t>((state >> 33) % bound);
        };
        for (std::size_t i = 0; i < n; ++i) {
            const std::string tag = "task " + std::to_string(i);
            if (i % 20 == 0 || graph.empty()) {
                graph.push_back(rath::Session::create("user", "Please look into " + tag + "."));
                rows.push_back(1);
                continue;
            }
            if (i % 7 == 0) {
                std::size_t a = next(graph.size()), b = next(graph.size());
                if (a != b && rows[a] + rows[b] <= 24) {
                    graph.push_back(graph[a].merge(graph[b]));
                    rows.push_back(rows[a] + rows[b]);
                    continue;
                }
            }
            // Forks mostly continue a recent session, so chains grow as well as fan out.
            const std::size_t parent = graph.size() > 50 && next(4) != 0 ? graph.size() - 1 - next(50) : next(graph.size());
            rath::Session child = graph[parent].fork();
            const std::string call_id = "call_" + std::to_string(i);
            child.append_chunk(rath::assistant_turn_chunk(
                {{.id = call_id, .name = "word_count", .arguments = "{\"text\": \"" + tag + "\"}"}}));
            child.append_chunk(rath::tool_feedback_chunk(call_id, "word_count", "2"));
            child.append_chunk(rath::assistant_turn_chunk({}, "Finished " + tag + ": 2 words."));
            child.set_usage(rath::TokenUsage{.prompt_tokens = 40, .completion_tokens = 12, .total_tokens = 52});
            child.add_lineage_extra("step", static_cast<std::int64_t>(i));
            graph.push_back(child);
            rows.push_back(rows[parent] + 3);
        }
        rath::lineage::export_html(graph, argv[1], {.title = "rath lineage fixture (" + std::to_string(n) + " sessions)"});
        std::printf("%s: %zu sessions\n", argv[1], graph.size());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lineage_viewer_fixture: %s\n", e.what());
        return 1;
    }
    return 0;
}
