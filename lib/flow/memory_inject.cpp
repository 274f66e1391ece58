#include <rath/flow/memory_inject.hpp>

#include <rath/log.hpp>
#include <rath/memory/store.hpp>

#include "lib/text/pyrepr.hpp"
#include "lib/text/pystr.hpp"

#include <boost/json/value.hpp>

#include <exception>

namespace rath::flow {

namespace json = boost::json;

namespace {

void log_warning(const std::string& msg) { rath::log(LogLevel::warning, "rath.flow", msg); }

const json::string* content_string(const ChunkRow& row) {
    const json::value* c = row.payload().if_contains("content");
    return c ? c->if_string() : nullptr;
}

}  // namespace

MemoryInjectionPolicy::~MemoryInjectionPolicy() = default;

std::optional<std::string> recall_query(const ChunkTable& transcript) {
    for (std::size_t i = transcript.size(); i-- > 0;) {
        const ChunkRow& row = *transcript[i];
        if (row.kind() != ChunkKind::user) continue;
        const json::string* c = content_string(row);
        if (c && !detail::py_strip(*c).empty()) return std::string(*c);
    }
    return std::nullopt;
}

std::vector<ChunkRowPtr> memory_rows(const std::vector<memory::MemoryHit>& hits) {
    std::vector<ChunkRowPtr> rows;
    rows.reserve(hits.size());
    for (const auto& hit : hits) {
        std::string snippet = hit.snippet ? detail::py_strip(*hit.snippet) : std::string();
        std::string text = "[untrusted memory:" + hit.uri + "]";
        if (!snippet.empty()) text += " " + snippet;
        rows.push_back(user_text_chunk(std::move(text)));
    }
    return rows;
}

std::vector<json::object> commit_messages(const ChunkTable& transcript) {
    std::vector<json::object> out;
    out.reserve(transcript.size());
    for (const auto& row : transcript) {
        const json::value* c = row->payload().if_contains("content");
        json::object m;
        switch (row->kind()) {
            case ChunkKind::system:
            case ChunkKind::user:
                m["role"] = row->kind() == ChunkKind::system ? "system" : "user";
                m["content"] = c ? *c : json::value(json::string());
                break;
            case ChunkKind::assistant:
                m["role"] = "assistant";
                m["content"] = c ? *c : json::value(nullptr);
                break;
            case ChunkKind::tool_result:
                continue;
        }
        out.push_back(std::move(m));
    }
    return out;
}

boost::asio::awaitable<std::vector<ChunkRowPtr>> DefaultRecallInjection::async_inject(
    ChunkTable transcript, memory::MemoryStorePtr store) const {
    if (!store || store->closed()) {
        log_warning("memory injection skipped: store is closed (" + (store ? detail::pyrepr(store->handle()) : "None") +
                    ")");
        co_return std::vector<ChunkRowPtr>{};
    }
    std::optional<std::string> query = recall_query(transcript);
    if (!query) co_return std::vector<ChunkRowPtr>{};
    memory::MemoryResult result;
    try {
        // Named, not a temporary inside the co_await expression (GCC 12 destroys
        // aggregate temporaries there twice).
        memory::MemoryOp find = memory::OpFind{*query, target_uri_, top_k_};
        result = co_await store->async_dispatch(std::move(find));
    } catch (const std::exception& e) {
        log_warning(std::string("memory injection dispatch failed: ") + e.what());
        co_return std::vector<ChunkRowPtr>{};
    }
    const auto* found = std::get_if<memory::FindResult>(&result);
    if (!found) co_return std::vector<ChunkRowPtr>{};
    co_return memory_rows(found->hits);
}

}  // namespace rath::flow
