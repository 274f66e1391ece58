// A process that starts a private PostgreSQL (tests/support/postgres.hpp), prints
// "<dir> <port>" and dies without any teardown: the guardian must clean up.
#include "tests/support/postgres.hpp"

#include <unistd.h>

#include <cstdio>
#include <exception>

int main() {
    try {
        auto* server = new rath::test::PostgresServer();  // never destroyed, on purpose
        std::printf("%s %d\n", server->socket_dir().c_str(), server->port());
        std::fflush(stdout);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pg_server_child: %s\n", e.what());
        return 2;
    }
    ::_exit(9);  // no destructors, no atexit handlers
}
