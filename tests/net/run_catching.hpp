#pragma once
// Runs an awaitable on a runtime and reports the exception of type E it threw, caught
// and flattened into plain strings on the runtime thread that threw it. Tests use this
// rather than letting block_on rethrow on the test thread: libstdc++ shares exception
// objects (exception_ptr) and exception messages (std::runtime_error's copy-on-write
// string) through reference counts inside the uninstrumented libstdc++.so, which
// ThreadSanitizer reports as (false) data races when they cross threads.
#include <rath/async/block_on.hpp>
#include <rath/net/http_client.hpp>
#include <rath/net/http_error.hpp>

#include <boost/asio/awaitable.hpp>

#include <doctest/doctest.h>

#include <string>
#include <type_traits>

namespace rath::test {

// `thrown` rather than std::optional: GCC 12 under ASan warns (maybe-uninitialized)
// about strings inside an optional returned from a coroutine.
struct Caught {
    bool thrown = false;
    std::string message;
    rath::net::HttpErrorKind error_kind{};
    std::string error_url;

    const char* what() const noexcept { return message.c_str(); }
    rath::net::HttpErrorKind kind() const noexcept { return error_kind; }
    const std::string& url() const noexcept { return error_url; }
};

template <class E, class T>
boost::asio::awaitable<Caught> catching(boost::asio::awaitable<T> op) {
    Caught caught;
    try {
        co_await std::move(op);
    } catch (const E& e) {
        caught.thrown = true;
        caught.message = std::string(e.what());  // a deep copy, not a shared buffer
        if constexpr (std::is_base_of_v<rath::net::HttpError, E>) {
            caught.error_kind = e.kind();
            caught.error_url = std::string(e.url().data(), e.url().size());
        }
    }
    co_return caught;
}

template <class E, class T>
Caught run_catching(rath::async::Runtime& rt, boost::asio::awaitable<T> op) {
    return rath::async::block_on(rt, catching<E>(std::move(op)));
}

// The HttpError that `req` ends with; the test fails when the request succeeds.
inline Caught expect_http_error(rath::async::Runtime& rt, rath::net::HttpClient& client, rath::net::HttpRequest req) {
    auto exchange = [](rath::net::HttpClient& c, rath::net::HttpRequest r) -> boost::asio::awaitable<void> {
        rath::net::HttpResponse response;
        co_await c.async_request(r, response);
    };
    auto e = run_catching<rath::net::HttpError>(rt, exchange(client, std::move(req)));
    REQUIRE_MESSAGE(e.thrown, "expected an HttpError");
    return e;
}

}  // namespace rath::test
