#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"
#include "tests/net/test_server.hpp"

#include <fstream>
#include <iterator>

using namespace rath::memory;
using rath::test::expect;
using rath::test::expect_failure;
namespace fs = std::filesystem;

TEST_CASE("an http resource is fetched through redirects, stored once, and an error status is a transport failure") {
    rath::test::TestServer server([](rath::test::ServerConnection& c,
                                     const rath::test::Request& req) -> boost::asio::awaitable<bool> {
        std::string target(req.target());
        if (target == "/old") co_return co_await c.write(rath::test::response(302, "", "Location: /docs/paper.txt\r\n"));
        if (target == "/docs/paper.txt") co_return co_await c.write(rath::test::response(200, "fetched body"));
        co_return co_await c.write(rath::test::response(404, "nope"));
    });
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto store = backend->open(rath::test::spec_at(dir.path()));
    auto w = expect<WriteResult>(store->dispatch(OpResource{server.url("/old")}));
    CHECK(w.bytes_written == 12);
    std::string sha = w.uri.substr(std::string("memory://resources/").size());
    fs::path rdir = fs::path(store->handle()) / "resources" / sha;
    std::ifstream blob(rdir / "source.txt", std::ios::binary);
    CHECK(std::string((std::istreambuf_iterator<char>(blob)), std::istreambuf_iterator<char>()) == "fetched body");
    std::ifstream meta(rdir / "meta.md", std::ios::binary);
    std::string m((std::istreambuf_iterator<char>(meta)), std::istreambuf_iterator<char>());
    CHECK(m.find("- source: " + server.url("/old") + "\n") != std::string::npos);
    CHECK(m.find("- original_name: paper.txt\n") != std::string::npos);
    CHECK(expect<WriteResult>(store->dispatch(OpResource{server.url("/docs/paper.txt")})) == w);
    auto f = expect_failure(store->dispatch(OpResource{server.url("/missing")}), FailureKind::transport);
    CHECK(f.message == "failed to fetch resource: HTTP Error 404");
    // The destination is checked before anything is fetched.
    int before = server.requests.load();
    expect_failure(store->dispatch(OpResource{server.url("/old"), std::string("memory://nope")}),
                   FailureKind::invalid_uri);
    CHECK(server.requests.load() == before);
    backend->close(store);
}
