// Speed of the local memory store: ingest rate, find latency (p50/p99) at a corpus
// size, bytes per document, the latency of a find right after one file was edited out
// of band, and beside it OpenRath's approach (walk, re-read and re-tokenise every file
// per query, then BM25), implemented here in C++ for the baseline.
//   memory_speed [--docs N] [--queries N] [--corpus FILE] [--queries-file FILE]
// N larger than the corpus repeats it with new ids. One JSON line per measurement.
#include <rath/async/runtime.hpp>
#include <rath/memory.hpp>

#include "common/report.hpp"
#include "common/scifact.hpp"
#include "lib/memory/analyzer.hpp"
#include "lib/memory/lexical_index.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <unordered_map>

namespace fs = std::filesystem;
using namespace rath::memory;
namespace sf = rath::bench::scifact;

namespace {

double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    auto i = static_cast<std::size_t>(std::ceil(p * double(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
}

std::uintmax_t tree_bytes(const fs::path& p, std::string_view ext) {
    std::uintmax_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ext) n += e.file_size();
    return n;
}

// OpenRath's find: walk the scope, re-read and re-tokenise every body, BM25, top k.
std::vector<std::pair<std::string, double>> baseline_find(const fs::path& scope, std::string_view query, int k) {
    using rath::memory::detail::analyze;
    using rath::memory::detail::AnalyzerKind;
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(scope))
        if (e.is_regular_file() && e.path().extension() == ".md") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<std::unordered_map<std::string, int>> tfs(files.size());
    std::vector<double> lens(files.size());
    std::unordered_map<std::string, int> df;
    double total = 0;
    for (std::size_t i = 0; i < files.size(); ++i) {
        std::ifstream in(files[i], std::ios::binary);
        std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto toks = analyze(body, AnalyzerKind::spec);
        for (const auto& t : toks) ++tfs[i][t];
        for (const auto& [t, _] : tfs[i]) ++df[t];
        lens[i] = double(toks.size());
        total += lens[i];
    }
    auto q = analyze(query, AnalyzerKind::spec);
    double N = double(files.size()), avgdl = N ? total / N : 0;
    std::vector<std::pair<std::string, double>> scored;
    for (std::size_t i = 0; i < files.size(); ++i) {
        double s = 0;
        for (const auto& t : q) {
            auto it = tfs[i].find(t);
            if (it == tfs[i].end()) continue;
            double d = df[t];
            double idf = std::log(1.0 + (N - d + 0.5) / (d + 0.5));
            s += rath::memory::detail::bm25_term(idf, it->second, lens[i], avgdl, 1.5, 0.75);
        }
        scored.emplace_back(files[i].string(), s);
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (scored.size() > static_cast<std::size_t>(k)) scored.resize(static_cast<std::size_t>(k));
    return scored;
}

}  // namespace

int main(int argc, char** argv) {
    std::string dir = sf::default_dir();
    std::string corpus = dir + "/corpus.jsonl", queries = dir + "/queries.jsonl";
    long n_docs = 5183;
    long n_queries = 300;
    long baseline_queries = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--docs") n_docs = std::stol(argv[i + 1]);
        else if (a == "--queries") n_queries = std::stol(argv[i + 1]);
        else if (a == "--baseline-queries") baseline_queries = std::stol(argv[i + 1]);
        else if (a == "--corpus") corpus = argv[i + 1];
        else if (a == "--queries-file") queries = argv[i + 1];
        else {
            std::cerr << "unknown option " << a << "\n";
            return 2;
        }
    }
    auto docs = sf::load_corpus(corpus);
    auto qs = sf::load_queries(queries);
    if (docs.empty() || qs.empty()) return 1;

    std::string tmpl = (fs::temp_directory_path() / "rath-memory-speed-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return 1;
    fs::path root = tmpl;
    MemoryStoreSpec spec;
    spec.options = boost::json::object{{"path", root.string()}};
    auto backend = make_local_memory_backend();
    auto store = backend->open(spec);
    auto& rt = rath::async::Runtime::default_runtime();

    // Ingest: writes pipelined through the store's queue, 256 in flight (queued writes
    // are written in batches, and indexed as they are written).
    auto uri_of = [&](long i) { return "memory://resources/corpus/d" + std::to_string(i); };
    long rss_before = rath::bench::rss_kb();
    double t0 = rath::bench::now_s();
    double c0 = rath::bench::cpu_s();
    {
        std::deque<rath::async::Lazy<MemoryResult>> inflight;
        for (long i = 0; i < n_docs; ++i) {
            const auto& d = docs[static_cast<std::size_t>(i) % docs.size()];
            inflight.push_back(rt.submit(store->async_dispatch(OpWrite{uri_of(i), d.text})));
            if (inflight.size() >= 256) {
                if (is_failure(inflight.front().get())) return 1;
                inflight.pop_front();
            }
        }
        for (auto& l : inflight)
            if (is_failure(l.get())) return 1;
    }
    double t_write = rath::bench::now_s() - t0;
    double c_write = rath::bench::cpu_s() - c0;
    t0 = rath::bench::now_s();
    c0 = rath::bench::cpu_s();
    (void)store->dispatch(OpFind{"warm up the index", std::nullopt, 8});
    double t_index = rath::bench::now_s() - t0;
    double c_index = rath::bench::cpu_s() - c0;
    long rss_after = rath::bench::rss_kb();

    rath::bench::Line("memory_speed_ingest")
        .add("docs", static_cast<long long>(n_docs))
        .add("write_docs_per_s", double(n_docs) / t_write)
        .add("index_build_s", t_index)
        .add("ingest_docs_per_s", double(n_docs) / (t_write + t_index))
        .add("write_cpu_s", c_write)
        .add("index_build_cpu_s", c_index)
        .add("ingest_docs_per_cpu_s", double(n_docs) / (c_write + c_index))
        .print();

    auto index_bytes = fs::file_size(root / "index.sqlite");
    rath::bench::Line("memory_speed_bytes")
        .add("docs", static_cast<long long>(n_docs))
        .add("body_bytes_per_doc", double(tree_bytes(root / "resources", ".md")) / double(n_docs))
        .add("index_bytes_per_doc", double(index_bytes) / double(n_docs))
        .add("rss_bytes_per_doc", double(rss_after - rss_before) * 1024.0 / double(n_docs))
        .print();

    std::vector<double> lat;
    double cpu0 = rath::bench::cpu_s();
    for (long i = 0; i < n_queries; ++i) {
        const auto& q = qs[static_cast<std::size_t>(i) % qs.size()];
        double s = rath::bench::now_s();
        auto r = store->dispatch(OpFind{q.text, std::nullopt, 8});
        lat.push_back((rath::bench::now_s() - s) * 1e3);
        if (!std::holds_alternative<FindResult>(r)) return 1;
    }
    rath::bench::Line("memory_speed_find")
        .add("docs", static_cast<long long>(n_docs))
        .add("queries", static_cast<long long>(lat.size()))
        .add("p50_ms", pct(lat, 0.5))
        .add("p99_ms", pct(lat, 0.99))
        .add("cpu_ms_per_query", (rath::bench::cpu_s() - cpu0) * 1e3 / double(lat.size()))
        .print();

    // One file edited out of band before each find.
    std::vector<double> edit_lat;
    for (int i = 0; i < 30; ++i) {
        fs::path victim = root / "resources/corpus" / ("d" + std::to_string((i * 7919) % n_docs) + ".md");
        {
            std::ofstream out(victim, std::ios::app);
            out << " edited out of band " << i;
        }
        const auto& q = qs[static_cast<std::size_t>(i) % qs.size()];
        double s = rath::bench::now_s();
        (void)store->dispatch(OpFind{q.text, std::nullopt, 8});
        edit_lat.push_back((rath::bench::now_s() - s) * 1e3);
    }
    rath::bench::Line("memory_speed_find_after_edit")
        .add("docs", static_cast<long long>(n_docs))
        .add("queries", static_cast<long long>(edit_lat.size()))
        .add("p50_ms", pct(edit_lat, 0.5))
        .add("p99_ms", pct(edit_lat, 0.99))
        .print();

    std::vector<double> base_lat;
    for (long i = 0; i < baseline_queries; ++i) {
        const auto& q = qs[static_cast<std::size_t>(i) % qs.size()];
        double s = rath::bench::now_s();
        auto hits = baseline_find(root / "resources", q.text, 8);
        base_lat.push_back((rath::bench::now_s() - s) * 1e3);
        if (hits.empty()) return 1;
    }
    rath::bench::Line("memory_speed_baseline_reread")
        .add("docs", static_cast<long long>(n_docs))
        .add("queries", static_cast<long long>(base_lat.size()))
        .add("p50_ms", pct(base_lat, 0.5))
        .add("p99_ms", pct(base_lat, 0.99))
        .print();

    backend->close(store);
    std::error_code ec;
    fs::remove_all(root, ec);
    return 0;
}
