#pragma once
// An in-process chat client that replays canned replies: no sockets, deterministic.
// For unit tests of anything built on ChatClient. Registered as kinds "scripted"
// and "fake"; the registry hands out ScriptedChatClient::named(provider.model).
#include <rath/llm/chat_client.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace rath::llm {

struct ScriptedReply {
    // Match conditions on the request's last message (all that are set must hold).
    std::optional<std::string> when_last_contains{};
    std::optional<std::string> when_last_role{};
    // What to answer. complete(): `response`, else `deltas` folded. stream(): `deltas`,
    // else deltas derived from `response`. `error` (if set) is thrown instead, after
    // the deltas of a stream were delivered.
    std::optional<ChatResponse> response{};
    std::vector<StreamDelta> deltas{};
    std::exception_ptr error{};

    static ScriptedReply text(std::string text);
    static ScriptedReply tool_call(std::string id, std::string name, std::string arguments);
};

class ScriptedChatClient final : public ChatClient {
public:
    explicit ScriptedChatClient(Provider provider = {}, ChatClientOptions options = {});

    // The process-wide instance called `name` (created on first use).
    static std::shared_ptr<ScriptedChatClient> named(const std::string& name);

    // Queue entries are used once: the first entry whose conditions match.
    ScriptedChatClient& push(ScriptedReply reply);
    // Rules stay: tried (in order) when no queue entry matches.
    ScriptedChatClient& rule(ScriptedReply reply);
    void reset();

    std::vector<ChatRequest> requests() const;  // every request received, in order
    std::size_t pending() const;                 // queue entries not used yet

    const Provider& provider() const noexcept override { return provider_; }
    std::string_view kind() const noexcept override { return "scripted"; }
    bool supports_streaming() const noexcept override { return true; }

private:
    boost::asio::awaitable<void> do_complete(const ChatRequest& request, ChatResponse& out,
                                             const DeltaCallback* on_delta) override;
    ScriptedReply take(const ChatRequest& request);
    Provider provider_{};
    mutable std::mutex mu_;
    std::deque<ScriptedReply> queue_{};
    std::vector<ScriptedReply> rules_{};
    std::vector<ChatRequest> requests_{};
};

}  // namespace rath::llm
