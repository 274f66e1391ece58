#pragma once
// An in-process chat client that replays canned replies: no sockets, deterministic.
// For unit tests of anything built on ChatClient: create one, queue replies, and pass
// it where a client is taken (LoopOptions::client, flow::AgentOptions::client, ...).
// Part of rath::testing, not of the library proper.
//
// Thread safety: scripting (push, rule, reset) and calls may run from any thread at
// once. A call completes without suspending, so there is nothing to cancel. Errors: a
// reply's `error`; ProviderConfigError when no queued reply or rule matches.
#include <rath/llm/chat_client.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace rath::testing {

struct ScriptedReply {
    // Match conditions on the request's last message (all that are set must hold).
    std::optional<std::string> when_last_contains{};
    std::optional<std::string> when_last_role{};
    // What to answer. complete(): `response`, else `deltas` folded. stream(): `deltas`,
    // else deltas derived from `response`. `error` (if set) is thrown instead, after
    // the deltas of a stream were delivered.
    std::optional<llm::ChatResponse> response{};
    std::vector<llm::StreamDelta> deltas{};
    std::exception_ptr error{};

    static ScriptedReply text(std::string text);
    static ScriptedReply tool_call(std::string id, std::string name, std::string arguments);
};

class ScriptedChatClient final : public llm::ChatClient {
public:
    explicit ScriptedChatClient(llm::Provider provider = {}, llm::ChatClientOptions options = {});

    // Queue entries are used once: the first entry whose conditions match.
    ScriptedChatClient& push(ScriptedReply reply);
    // Rules stay: tried (in order) when no queue entry matches.
    ScriptedChatClient& rule(ScriptedReply reply);
    void reset();

    [[nodiscard]] std::vector<llm::ChatRequest> requests() const;  // every request received, in order
    [[nodiscard]] std::size_t pending() const;                      // queue entries not used yet

    [[nodiscard]] const llm::Provider& provider() const noexcept override { return provider_; }
    [[nodiscard]] std::string_view kind() const noexcept override { return "scripted"; }
    [[nodiscard]] bool supports_streaming() const noexcept override { return true; }

private:
    boost::asio::awaitable<void> do_complete(const llm::ChatRequest& request, llm::ChatResponse& out,
                                             const llm::DeltaCallback* on_delta) override;
    ScriptedReply take(const llm::ChatRequest& request);
    llm::Provider provider_{};
    mutable std::mutex mu_;
    std::deque<ScriptedReply> queue_{};
    std::vector<ScriptedReply> rules_{};
    std::vector<llm::ChatRequest> requests_{};
};

}  // namespace rath::testing
