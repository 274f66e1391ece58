#pragma once
// What every handler of the server shares: query parameters, JSON and ErrorResponse
// answers, SSE event lines (`data: {json}` plus a blank line, with a Unix-ms timestamp),
// and a UTF-8 chunker that turns process output into valid JSON text.
#include "model.hpp"

#include <rath/net/http_server.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::sandbox_server {

class Query {
public:
    explicit Query(std::string_view query);  // "a=1&b=x%20y" ('+' is a space, as form encoding)
    [[nodiscard]] std::optional<std::string> get(std::string_view name) const;
    [[nodiscard]] std::vector<std::string> all(std::string_view name) const;

private:
    std::vector<std::pair<std::string, std::string>> items_;
};

boost::asio::awaitable<void> respond_json(rath::net::ServerExchange& ex, int status, const boost::json::value& body);
boost::asio::awaitable<void> respond_empty(rath::net::ServerExchange& ex, int status);
boost::asio::awaitable<void> respond_error(rath::net::ServerExchange& ex, const ApiError& e);

// Starts an SSE answer (200, text/event-stream, no caching).
boost::asio::awaitable<void> begin_events(rath::net::ServerExchange& ex);
// "data: {...}\n\n" for an event of `type` with `fields`, stamped now.
[[nodiscard]] std::string event_line(std::string_view type, boost::json::object fields = {});

// Process output arrives in arbitrary chunks; JSON strings must be valid UTF-8. Holds
// back an incomplete sequence at the end of a chunk and replaces invalid bytes by
// U+FFFD (as a browser's TextDecoder would).
class Utf8Chunker {
public:
    [[nodiscard]] std::string feed(std::string_view bytes);
    [[nodiscard]] std::string flush();

private:
    std::string pending_;
};

[[nodiscard]] std::int64_t unix_ms();

}  // namespace rath::sandbox_server
