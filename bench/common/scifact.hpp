#pragma once
// The BEIR-format retrieval data the memory benches read (../shared/data/scifact by
// default): corpus.jsonl, queries.jsonl and a qrels TSV (CRLF tolerated).
#include <boost/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lib/text/json_parse.hpp"

namespace rath::bench::scifact {

struct Doc {
    std::string id;
    std::string text;  // title + " " + text
};
struct Query {
    std::string id;
    std::string text;
};
using Qrels = std::map<std::string, std::map<std::string, int>>;

inline std::string default_dir() { return std::string(RATH_SOURCE_DIR) + "/../shared/data/scifact"; }

inline std::string str_field(const boost::json::object& o, const char* key) {
    const auto* v = o.if_contains(key);
    if (!v) return {};
    if (v->is_string()) return std::string(v->as_string());
    return boost::json::serialize(*v);
}

template <class F>
void for_each_json_line(const std::string& path, F&& f) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        auto v = rath::detail::parse_json(line);
        if (!v || !v->is_object()) throw std::runtime_error("bad JSON line in " + path);
        f(v->as_object());
    }
}

inline std::vector<Doc> load_corpus(const std::string& path) {
    std::vector<Doc> out;
    for_each_json_line(path, [&](const boost::json::object& o) {
        std::string title = str_field(o, "title"), text = str_field(o, "text");
        out.push_back({str_field(o, "_id"), title.empty() ? text : title + " " + text});
    });
    return out;
}

inline std::vector<Query> load_queries(const std::string& path) {
    std::vector<Query> out;
    for_each_json_line(path, [&](const boost::json::object& o) { out.push_back({str_field(o, "_id"), str_field(o, "text")}); });
    return out;
}

inline Qrels load_qrels(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    Qrels q;
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        auto t1 = line.find('\t'), t2 = line.find('\t', t1 == std::string::npos ? t1 : t1 + 1);
        if (t1 == std::string::npos || t2 == std::string::npos) continue;
        std::string qid = line.substr(0, t1), did = line.substr(t1 + 1, t2 - t1 - 1), score = line.substr(t2 + 1);
        if (first && qid == "query-id") {
            first = false;
            continue;
        }
        first = false;
        q[qid][did] = std::stoi(score);
    }
    return q;
}

}  // namespace rath::bench::scifact
