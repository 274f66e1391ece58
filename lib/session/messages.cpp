#include <rath/session/error.hpp>
#include <rath/session/messages.hpp>

#include "lib/session/row_storage.hpp"
#include "lib/text/pystr.hpp"

namespace rath {

namespace {

const boost::json::value& required(const ChunkRow& row, std::size_t index, std::string_view key) {
    auto it = row.payload().find(key);
    if (it == row.payload().end())
        throw SessionError("chunk row " + std::to_string(index) + " (" + std::string(to_string(row.kind())) +
                           ") has no '" + std::string(key) + "' key");
    return it->value();
}

}  // namespace

llm::Message chunk_row_to_message(const ChunkRow& row, std::size_t index) {
    llm::Message m;
    switch (row.kind()) {
        case ChunkKind::system:
            m.role = llm::role::system;
            m.content = detail::py_str(required(row, index, "content"));
            break;
        case ChunkKind::user:
            m.role = llm::role::user;
            m.content = detail::py_str(required(row, index, "content"));
            break;
        case ChunkKind::assistant: {
            m.role = llm::role::assistant;
            auto c = row.payload().find("content");
            if (c != row.payload().end() && !c->value().is_null()) m.content = detail::py_str(c->value());
            auto tc = row.payload().find("tool_calls");
            if (tc != row.payload().end() && tc->value().is_array() && !tc->value().get_array().empty()) {
                // The copies share one block (a tool call is a dozen keys and strings).
                const auto& list = tc->value().get_array();
                std::size_t bytes = 0;
                for (const auto& call : list) bytes += detail::footprint::of(call);
                detail::RowStorage storage(bytes);
                std::vector<boost::json::object> calls;
                calls.reserve(list.size());
                for (const auto& call : list)
                    if (call.is_object()) calls.emplace_back(call.get_object(), storage.get());
                storage.seal();
                m.tool_calls = std::move(calls);
            }
            break;
        }
        case ChunkKind::tool_result:
            m.role = llm::role::tool;
            m.content = detail::py_str(required(row, index, "content"));
            m.tool_call_id = detail::py_str(required(row, index, "tool_call_id"));
            break;
    }
    return m;
}

std::vector<llm::Message> chunk_table_to_messages(const ChunkTable& table) {
    std::vector<llm::Message> out;
    out.reserve(table.size());
    std::size_t i = 0;
    for (const auto& row : table) out.push_back(chunk_row_to_message(*row, i++));
    return out;
}

}  // namespace rath
