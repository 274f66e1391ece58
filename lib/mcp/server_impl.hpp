#pragma once
// Server's state, shared by its sessions (lib/mcp/server*.cpp only).
#include <rath/mcp/server.hpp>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rath::mcp {

struct Server::Impl {
    ServerOptions options;
    // Definitions are shared_ptrs so that a running handler keeps its own alive.
    std::vector<std::shared_ptr<const ToolDefinition>> tools;
    std::map<std::string, std::size_t, std::less<>> tool_index;
    std::vector<std::shared_ptr<const ResourceDefinition>> resources;
    std::vector<std::shared_ptr<const ResourceTemplateDefinition>> templates;
    std::vector<std::shared_ptr<const PromptDefinition>> prompts;

    mutable std::mutex transcripts_mu;
    std::deque<TranscriptEntry> transcripts;

    // The open sessions, told when the resource list changes (a new transcript).
    std::mutex sessions_mu;
    std::vector<std::weak_ptr<ServerSession>> sessions;

    void add_transcript(TranscriptEntry entry);
    std::optional<TranscriptEntry> find_transcript(std::string_view uri) const;
};

namespace detail {
// RFC 6570 level-1 matching of `uri` against `tmpl`: the variables, or nullopt.
std::optional<boost::json::object> match_uri_template(std::string_view tmpl, std::string_view uri);
}  // namespace detail

}  // namespace rath::mcp
