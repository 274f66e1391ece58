#pragma once
// The pg suite's server: one private PostgreSQL per test binary, started by the first
// case that asks for it and torn down at exit (or by its guardian if the binary dies).
#include "support/postgres.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>

#include <boost/asio/awaitable.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <string>

namespace rath::test {

inline PostgresServer& suite_postgres() {
    static PostgresServer server;
    return server;
}

// Null when PostgreSQL cannot run here (and the case was marked SKIP, or failed under
// RATH_CI).
inline PostgresServer* postgres_or_skip() {
    if (!RATH_REQUIRE_POSTGRES()) return nullptr;
    return &suite_postgres();
}

template <class T>
T run(boost::asio::awaitable<T> aw) {
    return async::block_on(async::Runtime::default_runtime(), std::move(aw));
}

}  // namespace rath::test
