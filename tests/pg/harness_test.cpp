// tests/support/postgres.hpp: the private server the pg suites run against.
#include "pg/pg_support.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace {

bool port_accepts(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

}  // namespace

TEST_SUITE("pg/harness") {

TEST_CASE("a private server listens on its TCP port and socket directory, and is gone with its files after teardown") {
    if (!RATH_REQUIRE_POSTGRES()) return;
    std::filesystem::path dir;
    int port = 0;
    {
        rath::test::PostgresServer server;
        dir = server.socket_dir();
        port = server.port();
        CHECK(port_accepts(port));
        CHECK(std::filesystem::exists(dir / (".s.PGSQL." + std::to_string(port))));
        CHECK(std::filesystem::exists(dir / "data" / "postmaster.pid"));
    }
    CHECK_FALSE(std::filesystem::exists(dir));
    CHECK_FALSE(port_accepts(port));
}

TEST_CASE("a test process that dies leaves no server behind: the guardian stops it and removes the directory") {
    if (!RATH_REQUIRE_POSTGRES()) return;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The child starts a server, reports where, and dies without any teardown.
        ::close(fds[0]);
        try {
            auto* server = new rath::test::PostgresServer();
            std::string line = server->socket_dir().string() + " " + std::to_string(server->port()) + "\n";
            (void)!::write(fds[1], line.data(), line.size());
        } catch (...) {
        }
        ::_exit(9);  // no destructors, no atexit
    }
    ::close(fds[1]);
    std::string got;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(got.find(' ') != std::string::npos);
    std::filesystem::path dir = got.substr(0, got.find(' '));
    int port = std::stoi(got.substr(got.find(' ') + 1));
    // The guardian works asynchronously after the child's death.
    for (int i = 0; i < 500 && std::filesystem::exists(dir); ++i) ::usleep(20000);
    CHECK_FALSE(std::filesystem::exists(dir));
    CHECK_FALSE(port_accepts(port));
}

}  // TEST_SUITE
