// Retry helpers: spec/llm.md §6.1 schedule, Retry-After parsing, retryable statuses,
// and async_retry's attempt / rethrow semantics.
#include "net/run_catching.hpp"

#include <rath/async.hpp>
#include <rath/net/retry.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>

using namespace rath::net;
using namespace std::chrono;

namespace {

system_clock::time_point at(int y, unsigned m, unsigned d, int hh, int mm, int ss) {
    return sys_days(year{y} / month{m} / day{d}) + hours(hh) + minutes(mm) + seconds(ss);
}

}  // namespace

TEST_CASE("the backoff schedule doubles from the base and caps the exponential part") {
    RetryPolicy p{.max_attempts = 6, .base = Seconds(0.1), .cap = Seconds(0.3), .jitter = false};
    CHECK(backoff_delay(p, 0).count() == doctest::Approx(0.1));
    CHECK(backoff_delay(p, 1).count() == doctest::Approx(0.2));
    CHECK(backoff_delay(p, 2).count() == doctest::Approx(0.3));
    CHECK(backoff_delay(p, 50).count() == doctest::Approx(0.3));
    RetryPolicy d{};
    d.jitter = false;
    CHECK(backoff_delay(d, 0).count() == doctest::Approx(0.5));
    CHECK(backoff_delay(d, 5).count() == doctest::Approx(16.0));
    CHECK(backoff_delay(d, 6).count() == doctest::Approx(30.0));
}

TEST_CASE("jitter adds a uniform fraction of the base on top of the capped delay") {
    RetryPolicy p{.base = Seconds(0.5), .cap = Seconds(1.0), .jitter = true};
    CHECK(backoff_delay(p, 0, std::nullopt, 0.0).count() == doctest::Approx(0.5));
    CHECK(backoff_delay(p, 0, std::nullopt, 0.5).count() == doctest::Approx(0.75));
    CHECK(backoff_delay(p, 3, std::nullopt, 0.5).count() == doctest::Approx(1.25));
    for (int i = 0; i < 100; ++i) {
        const double v = backoff_delay(p, 1).count();
        CHECK(v >= 1.0);
        CHECK(v < 1.5);
    }
}

TEST_CASE("a Retry-After value replaces the schedule and is capped") {
    RetryPolicy p{.base = Seconds(0.5), .cap = Seconds(30), .jitter = true};
    CHECK(backoff_delay(p, 0, Seconds(7), 0.9).count() == doctest::Approx(7.0));
    CHECK(backoff_delay(p, 0, Seconds(120), 0.9).count() == doctest::Approx(30.0));
    CHECK(backoff_delay(p, 0, Seconds(-3), 0.9).count() == doctest::Approx(0.0));
}

TEST_CASE("Retry-After accepts delta seconds including fractions") {
    CHECK(parse_retry_after("120")->count() == doctest::Approx(120.0));
    CHECK(parse_retry_after(" 0 ")->count() == doctest::Approx(0.0));
    CHECK(parse_retry_after("1.5")->count() == doctest::Approx(1.5));
    CHECK(!parse_retry_after("-1"));
    CHECK(!parse_retry_after("soon"));
    CHECK(!parse_retry_after(""));
    CHECK(!parse_retry_after("1.2.3"));
    CHECK(!parse_retry_after("1e3"));
}

TEST_CASE("Retry-After accepts the three HTTP date formats") {
    const auto now = at(1994, 11, 6, 8, 49, 7);
    CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now)->count() == doctest::Approx(30.0));
    CHECK(parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now)->count() == doctest::Approx(30.0));
    CHECK(parse_retry_after("Sun Nov  6 08:49:37 1994", now)->count() == doctest::Approx(30.0));
    // A date in the past means "now".
    CHECK(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now)->count() == doctest::Approx(0.0));
    CHECK(!parse_retry_after("Sun, 31 Feb 1994 08:49:37 GMT", now));
    CHECK(!parse_retry_after("Sun, 06 Nov 1994 08:49:37 PST", now));
    CHECK(!parse_retry_after("Sun, 06 Foo 1994 08:49:37 GMT", now));
    CHECK(!parse_retry_after("Sun, 06 Nov 1994 25:49:37 GMT", now));
}

TEST_CASE("a two digit RFC 850 year more than fifty years ahead is in the past century") {
    const auto now = at(2030, 1, 1, 0, 0, 0);
    // "99" would be 2099 (69 years ahead), so it is 1999: in the past.
    CHECK(parse_retry_after("Friday, 31-Dec-99 23:59:59 GMT", now)->count() == doctest::Approx(0.0));
    CHECK(parse_retry_after("Tuesday, 01-Jan-30 00:00:10 GMT", now)->count() == doctest::Approx(10.0));
}

TEST_CASE("retry-after-ms takes precedence over Retry-After") {
    HttpResponse r;
    r.status = 429;
    r.headers = {{"Retry-After", "20"}, {"retry-after-ms", "1500"}};
    CHECK(retry_after_from_headers(r)->count() == doctest::Approx(1.5));
    r.headers = {{"Retry-After", "20"}, {"retry-after-ms", "junk"}};
    CHECK(retry_after_from_headers(r)->count() == doctest::Approx(20.0));
    r.headers = {{"RETRY-AFTER-MS", "250.5"}};
    CHECK(retry_after_from_headers(r)->count() == doctest::Approx(0.2505));
    r.headers = {{"x-other", "1"}};
    CHECK(!retry_after_from_headers(r));
}

TEST_CASE("the retryable statuses are 408 409 429 and every 5xx") {
    for (int s : {408, 409, 429, 500, 502, 503, 504, 529, 599}) CHECK(is_retryable_status(s));
    for (int s : {200, 201, 301, 400, 401, 403, 404, 422, 425, 600}) CHECK_FALSE(is_retryable_status(s));
}

TEST_CASE("transport errors are retryable only for connect proxy timeout and closed") {
    CHECK(is_retryable(HttpError(HttpErrorKind::connect, "u", "x")));
    CHECK(is_retryable(HttpError(HttpErrorKind::proxy, "u", "x")));
    CHECK(is_retryable(HttpError(HttpErrorKind::timeout, "u", "x")));
    CHECK(is_retryable(HttpError(HttpErrorKind::closed, "u", "x")));
    CHECK_FALSE(is_retryable(HttpError(HttpErrorKind::tls, "u", "x")));
    CHECK_FALSE(is_retryable(HttpError(HttpErrorKind::protocol, "u", "x")));
    CHECK_FALSE(is_retryable(HttpError(HttpErrorKind::invalid_request, "u", "x")));
}

namespace {

struct Flaky : std::runtime_error {
    using std::runtime_error::runtime_error;
};

RetryVerdict only_flaky(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const Flaky&) {
        return {true, std::nullopt};
    } catch (...) {
        return {false, std::nullopt};
    }
}

}  // namespace

TEST_CASE("async_retry retries until success") {
    int calls = 0;
    auto factory = [&]() -> boost::asio::awaitable<int> {
        if (++calls < 3) throw Flaky("again");
        co_return 42;
    };
    RetryPolicy p{.max_attempts = 4, .base = Seconds(0.001), .jitter = false};
    CHECK(rath::async::block_on(async_retry(p, factory, only_flaky)) == 42);
    CHECK(calls == 3);
}

TEST_CASE("async_retry rethrows the last retryable error after the last attempt") {
    int calls = 0;
    auto factory = [&]() -> boost::asio::awaitable<void> {
        ++calls;
        throw Flaky("attempt " + std::to_string(calls));
        co_return;
    };
    RetryPolicy p{.max_attempts = 3, .base = Seconds(0.001), .jitter = false};
    auto e = rath::test::run_catching<Flaky>(rath::async::Runtime::default_runtime(), async_retry(p, factory, only_flaky));
    REQUIRE(e.thrown);
    CHECK(std::string(e.what()) == "attempt 3");
    CHECK(calls == 3);
}

TEST_CASE("async_retry does not retry a non retryable error") {
    int calls = 0;
    auto factory = [&]() -> boost::asio::awaitable<int> {
        ++calls;
        throw std::logic_error("bad request");
        co_return 0;
    };
    RetryPolicy p{.max_attempts = 5, .base = Seconds(0.001), .jitter = false};
    CHECK(rath::test::run_catching<std::logic_error>(rath::async::Runtime::default_runtime(),
                                                    async_retry(p, factory, only_flaky)).thrown);
    CHECK(calls == 1);
}

TEST_CASE("async_retry clamps zero attempts to one") {
    int calls = 0;
    auto factory = [&]() -> boost::asio::awaitable<int> {
        ++calls;
        throw Flaky("x");
        co_return 0;
    };
    RetryPolicy p{.max_attempts = 0, .base = Seconds(0.001), .jitter = false};
    CHECK(rath::test::run_catching<Flaky>(rath::async::Runtime::default_runtime(), async_retry(p, factory, only_flaky)).thrown);
    CHECK(calls == 1);
}
