#pragma once
// The retry policy (llm.md §6.1 and the transport-level Retry-After rules of §4.1): the
// one policy type of rath, its backoff schedule, Retry-After / retry-after-ms parsing
// and the retryable HTTP statuses. Pure functions; the loop that applies them to
// provider calls is the LLM layer's (its one retry loop).
#include <rath/net/http.hpp>
#include <rath/net/http_error.hpp>

#include <chrono>
#include <optional>
#include <string_view>

namespace rath::net {

using Seconds = std::chrono::duration<double>;

struct RetryPolicy {
    int max_attempts = 4;                      // total attempts; values < 1 count as 1
    std::chrono::duration<double> base{0.5};   // first delay
    std::chrono::duration<double> cap{30};     // bound of the exponential part (and of Retry-After)
    bool jitter = true;                        // add U[0, base) to every delay
    // A server-mandated delay (Retry-After) up to this long replaces the schedule; a
    // longer one falls back to the schedule.
    std::chrono::duration<double> max_retry_after{60};
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
// (spec §6.1 "Connection" and "Timeout"). TLS verification, protocol,
// invalid-request and size-cap (body_too_large, header_too_large) errors are not: the
// same answer would fail the same way.
[[nodiscard]] bool is_retryable(const HttpError& error) noexcept;

}  // namespace rath::net
