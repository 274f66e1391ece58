#pragma once
// HttpClient: HTTP/1.1 over TCP and TLS with a keep-alive connection pool per
// (scheme, host, port, proxy), a cap on open connections per host (excess requests
// queue), connect / read-gap / total deadlines, HTTP(S)_PROXY with CONNECT
// tunnelling, and streaming body delivery. The handle is cheap to copy and
// thread-safe; copies share one pool.
#include <rath/async/runtime.hpp>
#include <rath/net/http_error.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::net {

struct HttpHeader {
    std::string name{};
    std::string value{};
};

// Header fields validated and serialized once, then sent by many requests: a client's
// constant Content-Type / Accept / Authorization lines cost each request a pointer
// copy instead of a vector of strings. Content-Length and Transfer-Encoding are
// dropped (the client computes the length). Throws HttpError(invalid_request) for a
// bad name or a value with CR, LF or NUL.
class HeaderBlock {
public:
    explicit HeaderBlock(std::vector<HttpHeader> headers);

    const std::vector<HttpHeader>& headers() const noexcept { return headers_; }
    // "Name: value\r\n" per field, in order.
    const std::string& wire() const noexcept { return wire_; }
    // Case-insensitive.
    bool contains(std::string_view name) const noexcept;
    // The fields with each of `overrides` replacing the field of the same name
    // (case-insensitive) or appended: a request's own list when it must differ.
    std::vector<HttpHeader> merged(const std::vector<HttpHeader>& overrides) const;

private:
    std::vector<HttpHeader> headers_;
    std::string wire_;
};

struct HttpRequest {
    std::string method = "POST";
    std::string url;  // http:// or https://, optional port, IPv6 literals in brackets
    std::vector<HttpHeader> headers{};  // Host, User-Agent and Content-Length are added unless given
    // Sent before `headers`; a name should appear in only one of the two.
    std::shared_ptr<const HeaderBlock> preset_headers{};
    std::string body{};
    // Sent after `body`, in order, without being copied: shared immutable pieces such
    // as a constant JSON tail that thousands of requests carry. Content-Length covers
    // body and parts.
    std::vector<std::shared_ptr<const std::string>> body_parts{};

    std::size_t body_size() const noexcept;
    // body followed by every part (for logs and tests).
    std::string full_body() const;
};

// A response's header fields in received order, packed into one buffer: a response
// costs one allocation for all its fields instead of one per name and value.
class HttpHeaders {
public:
    struct Field {
        std::string_view name;
        std::string_view value;
    };

    class const_iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = Field;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = Field;

        const_iterator() = default;
        Field operator*() const noexcept;
        const_iterator& operator++() noexcept;
        const_iterator operator++(int) noexcept {
            auto old = *this;
            ++*this;
            return old;
        }
        bool operator==(const const_iterator& o) const noexcept { return p_ == o.p_; }

    private:
        friend class HttpHeaders;
        explicit const_iterator(const char* p) noexcept : p_(p) {}
        const char* p_ = nullptr;
    };

    HttpHeaders() = default;
    HttpHeaders(std::initializer_list<HttpHeader> fields);

    void add(std::string_view name, std::string_view value);
    void clear() noexcept {
        text_.clear();
        count_ = 0;
    }
    // Room for `fields` fields of `bytes` name and value bytes in all.
    void reserve(std::size_t fields, std::size_t bytes) { text_.reserve(text_.size() + fields * 8 + bytes); }

    std::size_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0; }
    const_iterator begin() const noexcept { return const_iterator(text_.data()); }
    const_iterator end() const noexcept { return const_iterator(text_.data() + text_.size()); }
    // The first field with this name, compared case-insensitively.
    std::optional<std::string_view> find(std::string_view name) const noexcept;

private:
    // Per field: name length and value length (4 bytes each, native order), then the bytes.
    std::string text_;
    std::size_t count_ = 0;
};

struct HttpResponse {
    int status = 0;
    HttpHeaders headers{};
    std::string body{};

    // First header with this name, compared case-insensitively.
    std::optional<std::string_view> header(std::string_view name) const;
};

struct HttpClientOptions {
    std::chrono::milliseconds connect_timeout{10'000};  // DNS + TCP connect + proxy CONNECT + TLS handshake
    std::chrono::milliseconds read_timeout{60'000};     // max gap between bytes (and for each write)
    std::chrono::milliseconds total_timeout{600'000};   // whole exchange, including waiting for a pooled connection
    std::size_t max_connections_per_host = 256;         // open connections per pool key; more requests queue
    std::string ca_file{};                              // extra trusted CA bundle (PEM), besides the system store
    bool verify_peer = true;                            // certificate chain and hostname verification
    std::optional<std::string> proxy{};                 // proxy URL for every request ("" = none); default: env
    std::optional<std::string> no_proxy{};              // NO_PROXY-style list; default: env NO_PROXY / no_proxy
    std::string user_agent = "rath/0.1";                // sent unless the request sets User-Agent
    std::chrono::milliseconds idle_timeout{30'000};     // idle pooled connections older than this are closed
};

// Counters of one client (all pools), for tests and benchmarks.
struct HttpClientStats {
    std::uint64_t connections_opened = 0;  // TCP connections established (to the target or the proxy)
    std::uint64_t connections_reused = 0;  // requests served on an idle pooled connection
    std::uint64_t stale_retries = 0;       // requests re-sent because a reused connection was dead
    std::uint64_t requests_started = 0;    // async_request / async_stream calls so far
    std::uint64_t requests_in_flight = 0;  // started and not finished, including those queued for a connection
    std::uint64_t connections_open = 0;    // connections currently open (in use or idle in a pool)
};

class HttpClient {
public:
    explicit HttpClient(HttpClientOptions options = {});  // uses Runtime::default_runtime()
    HttpClient(rath::async::Runtime& runtime, HttpClientOptions options = {});

    // Sends the request and reads the whole response. Non-2xx statuses are returned,
    // not thrown; transport failures throw HttpError.
    boost::asio::awaitable<HttpResponse> async_request(HttpRequest request);

    // Streaming: for a 2xx status the body bytes are passed to on_body as they arrive
    // and the returned response has an empty body; for any other status the whole
    // body is read into response.body and on_body is never called. on_body may throw
    // to abort the stream (the exception propagates; the connection is discarded).
    boost::asio::awaitable<HttpResponse> async_stream(HttpRequest request,
                                                      std::function<void(std::string_view)> on_body);

    // The same operations on a borrowed request, filling a borrowed response: `request`,
    // `on_body` and `response` must outlive the awaited operation (co_await it at once).
    // Retry loops use these to keep one request for every attempt, and a caller that
    // keeps its own response slot holds no second one while the request is in flight.
    // `response` is overwritten; after a failure its contents are unspecified.
    boost::asio::awaitable<void> async_request_into(const HttpRequest& request, HttpResponse& response);
    boost::asio::awaitable<void> async_stream_into(const HttpRequest& request,
                                                   const std::function<void(std::string_view)>& on_body,
                                                   HttpResponse& response);

    // Sync facade (block_on on the client's runtime); not callable from a runtime thread.
    HttpResponse request(HttpRequest request);

    HttpClientStats stats() const;
    const HttpClientOptions& options() const noexcept;

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace rath::net
