#pragma once
// run_session_compress (session.md §3): one LLM call that rewrites a transcript into a
// single USER row. Like the loop it returns a pending session at once (the Python
// original blocks the caller; chaining here stays non-blocking) — reading the output
// waits, and a validation failure surfaces there (std::runtime_error with the spec's
// messages). Thread safety, cancellation: as run_session_loop.
#include <rath/loop/executor.hpp>
#include <rath/loop/options.hpp>
#include <rath/session.hpp>

#include <boost/asio/awaitable.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace rath {

// The instruction used when none is given (verbatim from OpenRath).
extern const char* const default_compress_instruction;

struct CompressOptions {
    llm::Provider provider{};  // unset: the user session's, as LoopOptions::provider
    std::shared_ptr<LoopExecutor> executor{};  // only async_complete is used
    std::shared_ptr<llm::ChatClient> client{};  // chat client (default: chat_client_for(provider))
    std::optional<std::string> compress_instruction{};
    bool register_sessions = true;
    StreamCallback on_event{};
    bool persist = false;
    std::optional<std::filesystem::path> persist_path{};  // as LoopOptions::persist_path
    std::optional<std::string> sandbox_handle_id{};
    async::Runtime* runtime = nullptr;
};

Session run_session_compress(const Session& user, const Session& agent, CompressOptions options = {});
[[nodiscard]] boost::asio::awaitable<Session> async_run_session_compress(Session user, Session agent, CompressOptions options = {});

}  // namespace rath
