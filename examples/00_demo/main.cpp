// The offline demo: 1,000 agent sessions fanned out from a plain loop, each on its own
// `local` sandbox, against rath's fake OpenAI server over real HTTP. Each session asks
// the model, the model calls the `word_count` tool, the tool writes its answer into
// the session's sandbox workspace, and the model reports it. Then: a summary, and the
// lineage graph exported to JSONL, to one HTML page to explore in a browser, and to
// Graphviz DOT (SVG when `dot` is installed).
#include <rath/fake_llm/server.hpp>
#include <rath/flow.hpp>
#include <rath/session/graph.hpp>
#include <rath/session/registry.hpp>
#include <rath/tool/session_calls.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;

struct WordCountArgs {
    std::string text;
};
BOOST_DESCRIBE_STRUCT(WordCountArgs, (), (text))

static rath::tool::FlowToolPtr word_count_tool() {
    return rath::tool::make_tool<WordCountArgs>(
        "word_count", "Count the whitespace-separated words in a text.",
        [](rath::Session session, WordCountArgs a) -> asio::awaitable<boost::json::value> {
            std::istringstream in(a.text);
            std::string w;
            long long n = 0;
            while (in >> w) ++n;
            // Keep a record in this session's own sandbox workspace (opened on first use).
            rath::backend::Payload record = rath::backend::FilesWrite{.path = "count.txt", .data = std::to_string(n) + "\n"};
            co_await rath::tool::async_flow_tool_dispatch(session, std::move(record));
            co_return boost::json::value(std::to_string(n));
        },
        // Touches only its own session's sandbox: calls serialize per sandbox, not globally.
        {.parallel_safe = true, .sandbox_scoped = true});
}

static void progress(std::size_t done, std::size_t total, bool tty) {
    if (!tty) return;
    int width = 40;
    int filled = static_cast<int>(width * done / (total ? total : 1));
    std::fprintf(stderr, "\r  [%.*s%*s] %zu/%zu sessions", filled, "########################################",
                 width - filled, "", done, total);
    std::fflush(stderr);
}

int main(int argc, char** argv) {
    std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000;
    std::filesystem::path out_dir = argc > 2 ? argv[2] : "rath-demo-out";
    bool tty = isatty(STDERR_FILENO);

    rath::fake_llm::Server server({.latency = std::chrono::milliseconds(20)});
    server.start();
    std::printf("rath demo: %zu agent sessions on local sandboxes, fake LLM at %s (20 ms latency)\n", n,
                server.base_url().c_str());

    rath::flow::Agent agent("You count words. Always call the word_count tool, then report its result.",
                            {.loop = {.provider = {.base_url = server.base_url(),
                                                   .api_key = "sk-fake-local",
                                                   .model = "fake-model"},
                                      .tools = {word_count_tool()}}});

    auto t0 = std::chrono::steady_clock::now();
    std::vector<rath::Session> outs;
    outs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        auto user = rath::Session::from_user_message("please count the words of session " + std::to_string(i));
        user.to("local");      // each session gets its own ephemeral workspace, opened lazily
        outs.push_back(agent(user));  // returns at once: the loop runs on the runtime
    }
    double submit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // Progress from the server's point of view: finished sessions = final replies.
    std::atomic<bool> stop{false};
    std::thread bar([&] {
        while (!stop) {
            progress(server.stats().final_replies, n, tty);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    });

    std::size_t rounds = 0, tool_calls = 0, errors = 0;
    long long tokens = 0;
    for (std::size_t i = 0; i < n; ++i) {
        try {
            auto rows = outs[i].chunks();  // waits for this session only
            for (auto& r : rows)
                if (r->kind() == rath::ChunkKind::assistant) ++rounds;
                else if (r->kind() == rath::ChunkKind::tool_result) ++tool_calls;
            if (auto u = outs[i].usage()) tokens += u->total_tokens;
            auto text = outs[i].text();
            if (!text || text->rfind("done: ", 0) != 0) ++errors;
        } catch (const std::exception& e) {
            if (errors++ == 0) std::fprintf(stderr, "\nfirst error: %s\n", e.what());
        }
        if (!tty && (i + 1) % (n / 10 ? n / 10 : 1) == 0) std::printf("  %zu/%zu sessions done\n", i + 1, n);
    }
    double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stop = true;
    bar.join();
    progress(n, n, tty);
    if (tty) std::fprintf(stderr, "\n");

    std::printf("\nsummary\n");
    std::printf("  sessions     %zu (%zu errors)\n", n, errors);
    std::printf("  LLM rounds   %zu\n", rounds);
    std::printf("  tool calls   %zu\n", tool_calls);
    std::printf("  tokens       %lld\n", tokens);
    std::printf("  wall time    %.3f s (all %zu submitted in %.3f s; %.0f sessions/s)\n", wall_s, n, submit_s,
                n / wall_s);
    auto stats = server.stats();
    std::printf("  HTTP         %llu requests, %llu connections opened\n",
                static_cast<unsigned long long>(stats.requests), static_cast<unsigned long long>(stats.connections_total));

    // Lineage: user -> loop output (plus the agent's prompt session as second parent).
    std::filesystem::create_directories(out_dir);
    auto graph = rath::session_registry().sessions();
    rath::lineage::export_jsonl(graph, out_dir / "lineage.jsonl");
    rath::lineage::export_html(graph, out_dir / "lineage.html", {.title = "rath demo lineage"});
    std::vector<rath::Session> sample(graph.begin(), graph.begin() + std::min<std::size_t>(graph.size(), 16));
    rath::lineage::export_dot(sample, out_dir / "lineage_sample.dot");
    std::printf("\nlineage: %zu sessions -> %s\n", graph.size(), (out_dir / "lineage.jsonl").c_str());
    std::printf("         viewer (open in a browser) -> %s\n", (out_dir / "lineage.html").c_str());
    std::printf("         first 16 as Graphviz -> %s\n", (out_dir / "lineage_sample.dot").c_str());
    std::string dot_cmd = "dot -Tsvg '" + (out_dir / "lineage_sample.dot").string() + "' -o '" +
                          (out_dir / "lineage_sample.svg").string() + "' 2>/dev/null";
    if (std::system("command -v dot >/dev/null 2>&1") == 0 && std::system(dot_cmd.c_str()) == 0)
        std::printf("         rendered -> %s\n", (out_dir / "lineage_sample.svg").c_str());
    return errors == 0 ? 0 : 1;
}
