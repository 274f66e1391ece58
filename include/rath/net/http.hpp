#pragma once
// HTTP/1.1 messages as HttpClient (rath/net/http_client.hpp) sends and receives them:
// a request, its header fields (HttpHeader, and HeaderBlock for fields shared by many
// requests), and a response with its fields packed in one buffer (HttpHeaders).
//
// Thread safety: plain values, like std::string: one object may be read from many
// threads at once, but not read and written. A HeaderBlock is immutable once built,
// so a shared_ptr<const HeaderBlock> (and a request's shared body parts) may be used
// by any number of requests on any threads.
#include <cstddef>
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
// dropped (the client computes the length).
class HeaderBlock {
public:
    // Throws HttpError(invalid_request) for a bad name or a value with CR, LF or NUL;
    // the message names the field, never its value.
    explicit HeaderBlock(std::vector<HttpHeader> headers);

    [[nodiscard]] const std::vector<HttpHeader>& headers() const noexcept { return headers_; }
    // "Name: value\r\n" per field, in order.
    [[nodiscard]] const std::string& wire() const noexcept { return wire_; }
    // Case-insensitive.
    [[nodiscard]] bool contains(std::string_view name) const noexcept;
    // The fields with each of `overrides` replacing the field of the same name
    // (case-insensitive) or appended: a request's own list when it must differ.
    [[nodiscard]] std::vector<HttpHeader> merged(const std::vector<HttpHeader>& overrides) const;

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

    [[nodiscard]] std::size_t body_size() const noexcept;
    // body followed by every part (for logs and tests).
    [[nodiscard]] std::string full_body() const;
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

    [[nodiscard]] std::size_t size() const noexcept { return count_; }
    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
    [[nodiscard]] const_iterator begin() const noexcept { return const_iterator(text_.data()); }
    [[nodiscard]] const_iterator end() const noexcept { return const_iterator(text_.data() + text_.size()); }
    // The first field with this name, compared case-insensitively.
    [[nodiscard]] std::optional<std::string_view> find(std::string_view name) const noexcept;

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
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
};

}  // namespace rath::net
