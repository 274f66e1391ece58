// sse_parse: throughput of SSE framing, and of SSE framing plus simdjson on-demand
// parsing of every `data:` payload touching the delta fields a provider client reads.
// Input: every .sse fixture concatenated and repeated to >= 64 MB, fed in 16 KiB
// pieces (like socket reads) and as one buffer.
//
// usage: sse_parse [fixtures_dir] [min_mb]   (dir also from RATH_FIXTURES_DIR;
//        default ../shared/fixtures relative to the working directory)
#include <rath/net/sse.hpp>

#include <simdjson.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

double peak_rss_mb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

std::string load_corpus(const std::filesystem::path& dir, std::size_t min_bytes, std::size_t& files) {
    std::vector<std::filesystem::path> paths;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".sse") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    files = paths.size();
    std::string one;
    for (const auto& p : paths) {
        std::ifstream in(p, std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        one += ss.str();
        one += "\n\n";  // files may end without a blank line; keep events apart
    }
    if (one.empty()) return one;
    std::string all;
    all.reserve(min_bytes + one.size());
    while (all.size() < min_bytes) all += one;
    return all;
}

struct Totals {
    std::size_t events = 0;
    std::size_t delta_bytes = 0;  // text / arguments / reasoning bytes seen (keeps the work observable)
    std::size_t json_errors = 0;
};

// Touches what a chat client reads: OpenAI choices[0].delta.{content, reasoning_content,
// tool_calls[].function.arguments}, Anthropic delta.{text, partial_json, thinking}.
void touch_deltas(simdjson::ondemand::parser& parser, std::vector<char>& scratch, std::string_view data, Totals& t) {
    if (data == "[DONE]") return;
    if (scratch.size() < data.size() + simdjson::SIMDJSON_PADDING) scratch.resize(data.size() + simdjson::SIMDJSON_PADDING);
    std::memcpy(scratch.data(), data.data(), data.size());
    auto doc = parser.iterate(scratch.data(), data.size(), scratch.size());
    if (doc.error()) {
        ++t.json_errors;
        return;
    }
    simdjson::ondemand::object obj;
    if (doc.get_object().get(obj)) {
        ++t.json_errors;
        return;
    }
    auto add_string = [&](simdjson::ondemand::object& o, const char* key) {
        std::string_view s;
        if (!o.find_field_unordered(key).get_string().get(s)) t.delta_bytes += s.size();
    };
    simdjson::ondemand::array choices;
    if (!obj.find_field_unordered("choices").get_array().get(choices)) {
        for (auto choice : choices) {
            simdjson::ondemand::object c;
            if (choice.get_object().get(c)) break;
            simdjson::ondemand::object delta;
            if (!c.find_field_unordered("delta").get_object().get(delta)) {
                add_string(delta, "content");
                add_string(delta, "reasoning_content");
                simdjson::ondemand::array calls;
                if (!delta.find_field_unordered("tool_calls").get_array().get(calls)) {
                    for (auto call : calls) {
                        simdjson::ondemand::object fn;
                        if (!call.find_field_unordered("function").get_object().get(fn)) add_string(fn, "arguments");
                    }
                }
            }
            break;  // index 0 only
        }
        return;
    }
    simdjson::ondemand::object delta;
    if (!obj.find_field_unordered("delta").get_object().get(delta)) {
        add_string(delta, "text");
        add_string(delta, "partial_json");
        add_string(delta, "thinking");
    }
}

template <class OnEvent>
double run(const std::string& corpus, std::size_t piece, OnEvent&& on_event) {
    rath::net::SseParser parser;
    const auto t0 = std::chrono::steady_clock::now();
    std::string_view all(corpus);
    for (std::size_t pos = 0; pos < all.size(); pos += piece) parser.feed(all.substr(pos, piece), on_event);
    parser.finish(on_event);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    std::filesystem::path dir = "../shared/fixtures";
    if (argc > 1) dir = argv[1];
    else if (const char* env = std::getenv("RATH_FIXTURES_DIR")) dir = env;
    const std::size_t min_mb = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64;
    if (!std::filesystem::exists(dir / "wire")) {
        std::fprintf(stderr, "sse_parse: no fixtures at %s (pass the fixtures dir or set RATH_FIXTURES_DIR)\n",
                     dir.string().c_str());
        return 2;
    }
    std::size_t files = 0;
    const std::string corpus = load_corpus(dir / "wire", min_mb << 20, files);
    const double mb = static_cast<double>(corpus.size()) / (1 << 20);

    for (std::size_t piece : {std::size_t{16384}, corpus.size()}) {
        const char* feed = piece == corpus.size() ? "whole" : "16KiB";
        Totals sse;
        const double wall = run(corpus, piece, [&](rath::net::SseEvent& e) {
            ++sse.events;
            sse.delta_bytes += e.data.size();
        });
        std::printf("{\"bench\":\"sse_parse\",\"mode\":\"sse\",\"feed\":\"%s\",\"files\":%zu,\"mb\":%.1f,\"events\":%zu,"
                    "\"wall_s\":%.4f,\"mb_per_s\":%.1f,\"peak_rss_mb\":%.1f}\n",
                    feed, files, mb, sse.events, wall, mb / wall, peak_rss_mb());

        simdjson::ondemand::parser json;
        std::vector<char> scratch;
        Totals full;
        const double wall2 = run(corpus, piece, [&](rath::net::SseEvent& e) {
            ++full.events;
            touch_deltas(json, scratch, e.data, full);
        });
        std::printf("{\"bench\":\"sse_parse\",\"mode\":\"sse+json\",\"feed\":\"%s\",\"files\":%zu,\"mb\":%.1f,\"events\":%zu,"
                    "\"delta_bytes\":%zu,\"json_errors\":%zu,\"wall_s\":%.4f,\"mb_per_s\":%.1f,\"peak_rss_mb\":%.1f}\n",
                    feed, files, mb, full.events, full.delta_bytes, full.json_errors, wall2, mb / wall2, peak_rss_mb());
        std::fflush(stdout);
    }
    return 0;
}
