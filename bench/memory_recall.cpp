// Retrieval quality of the local memory store's lexical find on a BEIR split:
//   memory_recall [--corpus FILE] [--queries FILE] [--qrels FILE] [--analyzer spec|stem]
// loads the corpus into a fresh local store (one note per document) in a temp dir, runs
// each query that appears in the qrels (its `text` only) as a find with top_k 100, and
// prints one JSON line: ndcg_at_10, recall_at_100, queries, analyzer. Ties are broken
// by document id, descending, as trec_eval orders a run.
#include <rath/memory.hpp>

#include "common/report.hpp"
#include "common/scifact.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;
using namespace rath::memory;
namespace sf = rath::bench::scifact;

int main(int argc, char** argv) {
    std::string dir = sf::default_dir();
    std::string corpus = dir + "/corpus.jsonl", queries = dir + "/queries.jsonl", qrels = dir + "/qrels/train.tsv";
    std::string analyzer = "spec";
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--corpus") corpus = argv[i + 1];
        else if (a == "--queries") queries = argv[i + 1];
        else if (a == "--qrels") qrels = argv[i + 1];
        else if (a == "--analyzer") analyzer = argv[i + 1];
        else {
            std::cerr << "unknown option " << a << "\n";
            return 2;
        }
    }
    if (argc % 2 == 0) {
        std::cerr << "usage: memory_recall [--corpus FILE] [--queries FILE] [--qrels FILE] [--analyzer spec|stem]\n";
        return 2;
    }
    auto docs = sf::load_corpus(corpus);
    auto qs = sf::load_queries(queries);
    auto rel = sf::load_qrels(qrels);

    std::string tmpl = (fs::temp_directory_path() / "rath-memory-recall-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return 1;
    fs::path root = tmpl;
    MemoryStoreSpec spec;
    spec.options = boost::json::object{{"path", root.string()}, {"analyzer", analyzer}};
    auto backend = make_local_memory_backend();
    auto store = backend->open(spec);
    for (const auto& d : docs) {
        auto r = store->dispatch(OpWrite{"memory://resources/corpus/" + d.id, d.text});
        if (is_failure(r)) {
            std::cerr << "write failed: " << std::get<ExecutionFailure>(r).message << "\n";
            return 1;
        }
    }

    double ndcg_sum = 0, recall_sum = 0;
    long n = 0;
    const std::string prefix = "memory://resources/corpus/";
    for (const auto& q : qs) {
        auto it = rel.find(q.id);
        if (it == rel.end()) continue;
        auto r = store->dispatch(OpFind{q.text, std::nullopt, 100});
        if (!std::holds_alternative<FindResult>(r)) {
            std::cerr << "find failed\n";
            return 1;
        }
        std::vector<std::pair<double, std::string>> run;
        for (const auto& h : std::get<FindResult>(r).hits) run.emplace_back(h.score, h.uri.substr(prefix.size()));
        std::stable_sort(run.begin(), run.end(), [](const auto& a, const auto& b) {
            return a.first > b.first || (a.first == b.first && a.second > b.second);
        });
        const auto& judged = it->second;
        double dcg = 0, idcg = 0;
        for (std::size_t i = 0; i < run.size() && i < 10; ++i) {
            auto g = judged.find(run[i].second);
            if (g != judged.end()) dcg += g->second / std::log2(double(i) + 2.0);
        }
        std::vector<int> gains;
        for (const auto& [_, g] : judged) gains.push_back(g);
        std::sort(gains.rbegin(), gains.rend());
        for (std::size_t i = 0; i < gains.size() && i < 10; ++i) idcg += gains[i] / std::log2(double(i) + 2.0);
        int relevant = 0, found = 0;
        for (const auto& [did, g] : judged)
            if (g > 0) ++relevant;
        for (std::size_t i = 0; i < run.size() && i < 100; ++i) {
            auto g = judged.find(run[i].second);
            if (g != judged.end() && g->second > 0) ++found;
        }
        ndcg_sum += idcg > 0 ? dcg / idcg : 0;
        recall_sum += relevant > 0 ? double(found) / relevant : 0;
        ++n;
    }
    backend->close(store);
    std::error_code ec;
    fs::remove_all(root, ec);
    rath::bench::Line line("memory_recall");
    line.add("ndcg_at_10", n ? ndcg_sum / double(n) : 0.0)
        .add("recall_at_100", n ? recall_sum / double(n) : 0.0)
        .add("queries", static_cast<long long>(n))
        .add_str("analyzer", analyzer)
        .add("documents", static_cast<long long>(docs.size()));
    line.print();
    return 0;
}
