// tests/support/postgres.hpp: the private server the pg suites run against.
#include "pg/pg_support.hpp"
#include "support/env.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
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
    const std::string helper = std::string(RATH_BINARY_DIR) + "/bin/pg_server_child";
    FILE* p = ::popen(helper.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[512] = {};
    std::string got = std::fgets(buf, sizeof buf, p) ? buf : "";
    int status = ::pclose(p);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 9);
    REQUIRE(got.find(' ') != std::string::npos);
    std::filesystem::path dir = got.substr(0, got.find(' '));
    int port = std::stoi(got.substr(got.find(' ') + 1));
    // The guardian works asynchronously after the process's death.
    for (int i = 0; i < 500 && std::filesystem::exists(dir); ++i) ::usleep(20000);
    CHECK_FALSE(std::filesystem::exists(dir));
    CHECK_FALSE(port_accepts(port));
}

TEST_CASE("without the server binaries the harness says which package to install") {
    rath::test::EnvGuard env{{"RATH_PG_BINDIR", "/nonexistent/rath-pg-bin"}};
    std::string why = rath::test::PostgresServer::unavailable_reason();
    CHECK(why.find("postgresql-15") != std::string::npos);
    CHECK(why.find("RATH_PG_BINDIR") != std::string::npos);
    CHECK_THROWS_AS(rath::test::PostgresServer(), std::runtime_error);
}

}  // TEST_SUITE
