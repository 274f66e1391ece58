#pragma once
// The abstract MCP transport the client core drives (basic/transports.mdx, 2025-11-25):
// it moves JSON-RPC message texts, one message (or one batch) per text, between the
// client and one server. It knows nothing of ids, methods or the lifecycle; the stdio
// transport (child process, one message per line) and the Streamable HTTP transport
// (POST + SSE) implement it.
//
// Thread safety and call discipline: the client calls these from its own strand, and
// never calls async_send twice at once nor async_receive twice at once; async_send and
// async_receive do run at the same time (one reader loop, senders between). async_close
// may be called at any time, from any thread, also while a send or a receive is
// pending, and more than once: it makes pending and later calls finish (receive with
// nullopt, send with TransportError). set_protocol_version is called between sends.
//
// Cancellation: each awaitable honours the awaiting coroutine's cancellation slot;
// a cancelled receive or send leaves the transport usable only for async_close.
//
// Errors: TransportError (below) for a failure of the channel itself (cannot start
// the server, a write to a dead peer, a message over the transport's size cap). A
// message that is not valid JSON is still delivered: judging it is the client's job.
#include <rath/error.hpp>

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

namespace rath::mcp {

class TransportError : public rath::Error {
public:
    using rath::Error::Error;
};

class Transport {
public:
    virtual ~Transport() = default;
    Transport() = default;
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    // Opens the channel (spawns the server, or prepares the HTTP client). Called once,
    // before anything else. Throws TransportError.
    [[nodiscard]] virtual boost::asio::awaitable<void> async_start() = 0;

    // Sends one JSON-RPC message text (a single object or a batch array, no framing;
    // the transport adds its own). Completes when the transport has taken the message
    // (written to the pipe, or accepted by the server for HTTP), not when it is answered.
    [[nodiscard]] virtual boost::asio::awaitable<void> async_send(std::string message) = 0;

    // The next message text from the server, in arrival order; nullopt once the channel
    // has ended (EOF, closed, the server process exited). After nullopt, close_reason()
    // says why in plain words.
    [[nodiscard]] virtual boost::asio::awaitable<std::optional<std::string>> async_receive() = 0;

    // Ends the channel and releases what it holds (for stdio: close stdin, wait, SIGTERM,
    // SIGKILL, reap; for HTTP: DELETE the session). Idempotent; never throws.
    [[nodiscard]] virtual boost::asio::awaitable<void> async_close() = 0;

    // The protocol revision initialize settled on (an HTTP transport sends it as the
    // MCP-Protocol-Version header on every later request). Default: ignored.
    virtual void set_protocol_version(const std::string& version) { (void)version; }

    // Why the channel ended, once async_receive returned nullopt ("" before that).
    [[nodiscard]] virtual std::string close_reason() const { return {}; }

    // A short description for messages and logs ("stdio: npx -y server-everything").
    [[nodiscard]] virtual std::string describe() const = 0;
};

}  // namespace rath::mcp
