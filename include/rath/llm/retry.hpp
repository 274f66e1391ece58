#pragma once
// Vendor-neutral retry with exponential backoff for coroutine operations.
// Attempt k (1-based) that fails retryably sleeps min(cap, base * 2^(k-1)) plus, with
// jitter, U[0, base); a Retry-After the provider sent (<= max_retry_after) replaces
// that delay. Non-retryable errors propagate at once; after the last attempt the
// last error is rethrown unchanged.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>

namespace rath::llm {

using SleepFn = std::function<boost::asio::awaitable<void>(std::chrono::duration<double>)>;

struct RetryOptions {
    int max_attempts = 4;  // clamped to >= 1
    double base_seconds = 0.5;
    double cap_seconds = 30.0;
    bool jitter = true;
    double max_retry_after_seconds = 60.0;  // longer Retry-After values fall back to backoff
    // Replaces the timer (tests record the delays). Unset: async_sleep.
    SleepFn sleep{};
    // Which errors to retry. Unset: rath::ProviderError with retryable() == true.
    std::function<bool(const std::exception_ptr&)> retryable{};
};

namespace detail {
// nullopt: do not retry this error. Otherwise the delay before attempt `attempt + 1`.
std::optional<std::chrono::duration<double>> retry_decision(const RetryOptions& o, int attempt,
                                                            const std::exception_ptr& e);
boost::asio::awaitable<void> retry_sleep(const RetryOptions& o, std::chrono::duration<double> d);
}  // namespace detail

template <class T>
boost::asio::awaitable<T> async_retry_with_backoff(std::function<boost::asio::awaitable<T>()> fn,
                                                   RetryOptions options = {}) {
    const int attempts = options.max_attempts < 1 ? 1 : options.max_attempts;
    for (int k = 1;; ++k) {
        std::exception_ptr err{};
        try {
            co_return co_await fn();
        } catch (...) {
            err = std::current_exception();
        }
        std::optional<std::chrono::duration<double>> delay{};
        if (k < attempts) delay = detail::retry_decision(options, k, err);
        if (!delay) std::rethrow_exception(err);
        co_await detail::retry_sleep(options, *delay);
    }
}

}  // namespace rath::llm
