#pragma once
// Retry policy helpers (spec/llm.md §6.1 and the transport-level Retry-After rules of
// §4.1): the backoff schedule, Retry-After / retry-after-ms parsing, the retryable
// HTTP statuses, and a generic async_retry coroutine. Pure functions except
// async_retry, which only adds an async sleep between attempts. Everything here is
// stateless (backoff_delay's own generator is per thread), so it may be called from
// any thread.
#include <rath/async/deadline.hpp>
#include <rath/net/http.hpp>
#include <rath/net/http_error.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace rath::net {

using Seconds = std::chrono::duration<double>;

struct RetryPolicy {
    int max_attempts = 4;                      // total attempts; values < 1 count as 1
    std::chrono::duration<double> base{0.5};   // first delay
    std::chrono::duration<double> cap{30};     // bound of the exponential part (and of Retry-After)
    bool jitter = true;                        // add U[0, base) to every delay
};

// Delay before retry number `attempt_index` (0 = the retry after the first failed
// attempt): min(cap, base * 2^attempt_index) plus, with jitter, `unit_random * base`
// where unit_random is in [0, 1). A present `retry_after` replaces the schedule
// (clamped to [0, cap]; no jitter is added to a server-mandated delay).
[[nodiscard]] Seconds backoff_delay(const RetryPolicy& policy, int attempt_index, std::optional<Seconds> retry_after,
                                    double unit_random);
// Same, drawing unit_random from a thread-local generator.
[[nodiscard]] Seconds backoff_delay(const RetryPolicy& policy, int attempt_index,
                                    std::optional<Seconds> retry_after = std::nullopt);

// Parses a Retry-After header value: delta-seconds (fractions accepted, e.g. "1.5")
// or an HTTP-date (IMF-fixdate, obsolete RFC 850 and asctime forms). A date in the
// past gives zero. Anything else (negative, garbage, out-of-range) gives nullopt.
[[nodiscard]] std::optional<Seconds> parse_retry_after(
    std::string_view header_value, std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// `retry-after-ms` (milliseconds, fractional allowed) when present and valid,
// otherwise `retry-after`; nullopt when neither is usable.
[[nodiscard]] std::optional<Seconds> retry_after_from_headers(
    const HttpResponse& response, std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// Statuses the transport layer retries (spec §4.1: 408, 409, 429 and every 5xx,
// which includes Anthropic's 529).
[[nodiscard]] bool is_retryable_status(int status) noexcept;

// Transport failures worth another attempt: connect, proxy, timeout and closed
// (spec §6.1 "Connection" and "Timeout"). TLS verification, protocol and
// invalid-request errors are not.
[[nodiscard]] bool is_retryable(const HttpError& error) noexcept;

// What async_retry's classifier returns for a failed attempt.
struct RetryVerdict {
    bool retry = false;
    std::optional<Seconds> retry_after;  // server-mandated delay, if any
};

// Runs `factory()` (which returns a fresh awaitable<T> each call) up to
// policy.max_attempts times. After a failure, `classify(std::exception_ptr)` decides;
// a non-retryable failure propagates at once, and after the last attempt the last
// failure is rethrown unchanged. Waits backoff_delay(...) between attempts.
// `factory` and `classify` are moved into the coroutine frame.
// Cancellation reaches the attempt in flight (its failure goes to `classify` like any
// other) or the sleep between attempts; with Asio's default throw_if_cancelled, no
// attempt starts after it: the loop ends with the attempt's failure or with
// boost::system::system_error(operation_aborted) from the next co_await.
template <class Factory, class Classify>
[[nodiscard]] auto async_retry(RetryPolicy policy, Factory factory, Classify classify)
    -> std::invoke_result_t<Factory&> {
    using Awaitable = std::invoke_result_t<Factory&>;
    using T = typename Awaitable::value_type;
    const int attempts = policy.max_attempts < 1 ? 1 : policy.max_attempts;
    for (int k = 1;; ++k) {
        std::exception_ptr failure;
        std::optional<Seconds> retry_after;
        try {
            if constexpr (std::is_void_v<T>) {
                co_await factory();
                co_return;
            } else {
                co_return co_await factory();
            }
        } catch (...) {
            failure = std::current_exception();
        }
        RetryVerdict verdict = classify(failure);
        if (!verdict.retry || k >= attempts) std::rethrow_exception(failure);
        const Seconds delay = backoff_delay(policy, k - 1, verdict.retry_after);
        co_await rath::async::async_sleep(std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay));
    }
}

}  // namespace rath::net
