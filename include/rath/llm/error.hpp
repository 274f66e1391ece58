#pragma once
// Errors raised by LLM providers and clients. They live in namespace rath (they are
// part of the root hierarchy) but are declared here, next to the component.
//
// No message ever contains an API key: clients scrub the key they hold from every
// text that reaches an exception.
#include <rath/error.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace rath {

namespace llm {
struct ChatResponse;
}

struct ProviderErrorInfo {
    std::string provider{};  // "openai", "anthropic", ... (the client kind)
    int status = 0;          // HTTP status; 200 for in-stream errors; 0 when no response
    std::string type{};        // error.type, else error.code as a string
    std::string code{};      // error.code as a string ("" when absent)
    std::string message{};     // the provider's own words
    std::string request_id{};  // x-request-id / request-id header when sent
    std::optional<std::chrono::duration<double>> retry_after{};  // from retry-after(-ms)
    std::optional<bool> should_retry{};                          // x-should-retry header
};

// Something a provider (or the way to it) reported. Carries the facts a caller needs.
class ProviderError : public Error {
public:
    explicit ProviderError(ProviderErrorInfo info);
    ProviderError(ProviderErrorInfo info, std::string what);

    [[nodiscard]] const ProviderErrorInfo& info() const noexcept { return info_; }
    [[nodiscard]] int status() const noexcept { return info_.status; }
    [[nodiscard]] const std::string& type() const noexcept { return info_.type; }
    [[nodiscard]] const std::string& provider_message() const noexcept { return info_.message; }
    [[nodiscard]] const std::string& request_id() const noexcept { return info_.request_id; }
    [[nodiscard]] const std::string& provider() const noexcept { return info_.provider; }
    [[nodiscard]] std::optional<std::chrono::duration<double>> retry_after() const noexcept {
        return info_.retry_after;
    }

    // Whether the retry layer may try again (429, 5xx, 408, connection, timeout),
    // overridden by an explicit x-should-retry header.
    [[nodiscard]] bool retryable() const noexcept;

    // What arrived before a stream failed (content, reasoning, usage, tool calls), with
    // finish reason `error`. Null when the failure happened before any delta.
    [[nodiscard]] std::shared_ptr<const llm::ChatResponse> partial() const noexcept { return partial_; }
    void set_partial(std::shared_ptr<const llm::ChatResponse> p) { partial_ = std::move(p); }

private:
    ProviderErrorInfo info_{};
    std::shared_ptr<const llm::ChatResponse> partial_{};
};

#define RATH_PROVIDER_ERROR(Name, Base)            \
    class Name : public Base {                     \
    public:                                        \
        using Base::Base;                          \
    }

RATH_PROVIDER_ERROR(BadRequestError, ProviderError);           // 400
RATH_PROVIDER_ERROR(AuthenticationError, ProviderError);       // 401
RATH_PROVIDER_ERROR(PermissionDeniedError, ProviderError);     // 403
RATH_PROVIDER_ERROR(NotFoundError, ProviderError);             // 404
RATH_PROVIDER_ERROR(ModelNotFoundError, NotFoundError);        // 404 about the model
RATH_PROVIDER_ERROR(ConflictError, ProviderError);             // 409
RATH_PROVIDER_ERROR(RequestTooLargeError, ProviderError);      // 413
RATH_PROVIDER_ERROR(UnprocessableEntityError, ProviderError);  // 422
RATH_PROVIDER_ERROR(RateLimitError, ProviderError);            // 429
RATH_PROVIDER_ERROR(InternalServerError, ProviderError);       // >= 500
RATH_PROVIDER_ERROR(OverloadedError, InternalServerError);     // 529 / overloaded_error
RATH_PROVIDER_ERROR(ProviderConnectionError, ProviderError);   // no usable response
RATH_PROVIDER_ERROR(ProviderTimeoutError, ProviderConnectionError);
RATH_PROVIDER_ERROR(StreamError, ProviderError);               // error event inside a 2xx stream
RATH_PROVIDER_ERROR(ResponseFormatError, ProviderError);       // unparseable 2xx body or chunk
// An answer beyond a memory cap of the client's HttpClientOptions: the body
// (type "body_too_large"), the header ("header_too_large"), or one SSE line or event of
// a stream ("sse_line_too_large" / "sse_event_too_large"). Never retried.
RATH_PROVIDER_ERROR(ResponseTooLargeError, ResponseFormatError);

#undef RATH_PROVIDER_ERROR

// Client-side misuse detected before any I/O: no API key, no model, unknown
// provider_kind, stream=true in a non-stream call. Never retried.
class ProviderConfigError : public Error {
public:
    using Error::Error;
};

// Exported for user budget callbacks (Provider::on_budget_exceeded); the library
// itself never throws it.
class BudgetExceededError : public Error {
public:
    using Error::Error;
};

namespace llm {
// ChatResponse::primary_choice() on a response without choices.
class IndexError : public Error {
public:
    using Error::Error;
};
}  // namespace llm

}  // namespace rath
