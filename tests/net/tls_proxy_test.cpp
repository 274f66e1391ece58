// TLS (certificates made with the openssl CLI at run time) and proxies (a loopback
// CONNECT / absolute-form proxy) for HttpClient.
#include "net/run_catching.hpp"
#include "net/test_server.hpp"
#include "support/env.hpp"
#include "support/temp_dir.hpp"

#include <rath/async.hpp>
#include <rath/net/http_client.hpp>

#include <doctest/doctest.h>

#include <cstdlib>

using namespace rath::test;
using rath::net::HttpClient;
using rath::net::HttpError;
using rath::net::HttpErrorKind;
using rath::net::HttpRequest;
using rath::net::HttpResponse;

namespace {

rath::async::Runtime& runtime() {
    static rath::async::Runtime rt({.threads = 2, .name = "net-tls-test"});
    return rt;
}

void run(const std::string& cmd) {
    const int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
    REQUIRE_MESSAGE(rc == 0, "command failed: " << cmd);
}

// A throwaway CA, a server certificate for 127.0.0.1 + localhost signed by it, one
// for another name signed by it, and a self-signed one nobody trusts.
struct Pki {
    TempDir dir;
    std::string p(const char* name) const { return (dir.path() / name).string(); }
    Pki() {
        const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        run("openssl req -x509 " + ec + " -keyout " + p("ca.key") + " -out " + p("ca.pem") +
            " -days 2 -subj /CN=rath-test-ca -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign");
        issue("server", "subjectAltName=IP:127.0.0.1,DNS:localhost");
        issue("wrong", "subjectAltName=DNS:wrong.example");
        run("openssl req -x509 " + ec + " -keyout " + p("self.key") + " -out " + p("self.pem") +
            " -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1");
    }
    void issue(const std::string& name, const std::string& san) {
        std::ofstream(p((name + ".ext").c_str())) << san << "\n";
        run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + p((name + ".key").c_str()) +
            " -out " + p((name + ".csr").c_str()) + " -subj /CN=" + name);
        run("openssl x509 -req -in " + p((name + ".csr").c_str()) + " -CA " + p("ca.pem") + " -CAkey " + p("ca.key") +
            " -CAcreateserial -days 2 -out " + p((name + ".pem").c_str()) + " -extfile " + p((name + ".ext").c_str()));
    }
    std::unique_ptr<asio::ssl::context> server_context(const std::string& name) const {
        auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
        ctx->use_certificate_chain_file(p((name + ".pem").c_str()));
        ctx->use_private_key_file(p((name + ".key").c_str()), asio::ssl::context::pem);
        return ctx;
    }
};

const Pki& pki() {
    static Pki instance;
    return instance;
}

asio::awaitable<bool> hello(ServerConnection& c, const Request& req) {
    co_return co_await c.write(response(200, "hello over " + std::string(req.target())));
}

Caught expect_error(HttpClient& client, const HttpRequest& req) {
    HttpResponse out;
    auto e = run_catching<HttpError>(runtime(), client.async_request(req, out));
    REQUIRE_MESSAGE(e.thrown, "expected an HttpError");
    return e;
}

}  // namespace

TEST_CASE("a TLS server is trusted through the extra CA file") {
    auto ctx = pki().server_context("server");
    TestServer server(hello, ctx.get());
    HttpClient client(runtime(), {.ca_file = pki().p("ca.pem")});
    auto r = client.request({.method = "GET", .url = server.url("/ip")});
    CHECK(r.status == 200);
    CHECK(r.body == "hello over /ip");
    auto r2 = client.request({.method = "GET", .url = "https://localhost:" + std::to_string(server.port()) + "/name"});
    CHECK(r2.body == "hello over /name");
    // Keep-alive works over TLS too: one connection per pool key (IP and name).
    CHECK(client.request({.method = "GET", .url = server.url("/again")}).body == "hello over /again");
    CHECK(server.accepted == 2);
}

TEST_CASE("a certificate from an unknown CA is rejected with a tls error") {
    auto ctx = pki().server_context("server");
    TestServer server(hello, ctx.get());
    HttpClient client(runtime());
    auto e = expect_error(client, {.method = "GET", .url = server.url()});
    CHECK(e.kind() == HttpErrorKind::tls);
    CHECK(std::string(e.what()).find("certificate verification failed") != std::string::npos);

    auto self = pki().server_context("self");
    TestServer self_server(hello, self.get());
    HttpClient trusting_ca(runtime(), {.ca_file = pki().p("ca.pem")});
    CHECK(expect_error(trusting_ca, {.method = "GET", .url = self_server.url()}).kind() == HttpErrorKind::tls);
}

TEST_CASE("a certificate for another host name is rejected with a tls error") {
    auto ctx = pki().server_context("wrong");
    TestServer server(hello, ctx.get());
    HttpClient client(runtime(), {.ca_file = pki().p("ca.pem")});
    auto e = expect_error(client, {.method = "GET", .url = server.url()});
    CHECK(e.kind() == HttpErrorKind::tls);
    CHECK(std::string(e.what()).find("mismatch") != std::string::npos);
    auto e2 = expect_error(client, {.method = "GET", .url = "https://localhost:" + std::to_string(server.port()) + "/"});
    CHECK(e2.kind() == HttpErrorKind::tls);
    CHECK(std::string(e2.what()).find("mismatch") != std::string::npos);
}

TEST_CASE("verification can be switched off explicitly") {
    auto ctx = pki().server_context("self");
    TestServer server(hello, ctx.get());
    HttpClient client(runtime(), {.verify_peer = false});
    CHECK(client.request({.method = "GET", .url = server.url()}).status == 200);
}

TEST_CASE("a missing CA file fails at construction") {
    CHECK_THROWS_AS(HttpClient(runtime(), {.ca_file = "/nonexistent/ca.pem"}), HttpError);
}

TEST_CASE("https through a proxy uses one CONNECT tunnel per pooled connection") {
    auto ctx = pki().server_context("server");
    TestServer server(hello, ctx.get());
    TestProxy proxy;
    HttpClient client(runtime(), {.ca_file = pki().p("ca.pem"), .proxy = proxy.url(), .no_proxy = ""});
    for (int i = 0; i < 3; ++i) CHECK(client.request({.method = "GET", .url = server.url("/t")}).body == "hello over /t");
    CHECK(proxy.tunnels == 1);
    CHECK(server.accepted == 1);
}

TEST_CASE("plain http through a proxy sends the absolute URL") {
    TestServer server([](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        co_return co_await c.write(response(200, std::string(req.target())));
    });
    TestProxy proxy;
    HttpClient client(runtime(), {.proxy = proxy.url(), .no_proxy = ""});
    auto r = client.request({.method = "GET", .url = server.url("/abs?q=1")});
    CHECK(r.body == server.url("/abs?q=1"));
    CHECK(proxy.forwarded == 1);
}

TEST_CASE("NO_PROXY entries bypass the proxy") {
    TestServer server(hello);
    TestProxy proxy;
    HttpClient client(runtime(), {.proxy = proxy.url(), .no_proxy = "example.com, 127.0.0.1"});
    CHECK(client.request({.method = "GET", .url = server.url()}).status == 200);
    CHECK(proxy.forwarded == 0);
    CHECK(proxy.tunnels == 0);
}

TEST_CASE("a proxy that refuses CONNECT is a proxy error") {
    auto ctx = pki().server_context("server");
    TestServer server(hello, ctx.get());
    TestProxy proxy(/*refuse=*/true);
    HttpClient client(runtime(), {.ca_file = pki().p("ca.pem"), .proxy = proxy.url(), .no_proxy = ""});
    auto e = expect_error(client, {.method = "GET", .url = server.url()});
    CHECK(e.kind() == HttpErrorKind::proxy);
    CHECK(std::string(e.what()).find("403") != std::string::npos);
}

TEST_CASE("a proxy answering CONNECT with a header over the cap is header_too_large") {
    // A proxy that accepts one connection and answers its CONNECT with a 70 KiB header.
    asio::io_context io;
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    const auto port = acceptor.local_endpoint().port();
    std::thread proxy([&] {
        boost::system::error_code ec;
        tcp::socket s(io);
        acceptor.accept(s, ec);
        if (ec) return;
        char buf[1024];
        s.read_some(asio::buffer(buf), ec);
        const std::string answer = "HTTP/1.1 200 Connection established\r\nX-Pad: " + std::string(70 * 1024, 'p') + "\r\n\r\n";
        asio::write(s, asio::buffer(answer), ec);
        s.read_some(asio::buffer(buf), ec);  // until the client gives up
    });
    HttpClient client(runtime(), {.proxy = "http://127.0.0.1:" + std::to_string(port), .no_proxy = ""});
    auto e = expect_error(client, {.method = "GET", .url = "https://127.0.0.1:9/"});
    proxy.join();
    CHECK(e.kind() == HttpErrorKind::header_too_large);
}

TEST_CASE("HTTPS_PROXY and NO_PROXY are read from the environment") {
    auto ctx = pki().server_context("server");
    TestServer server(hello, ctx.get());
    TestProxy proxy;
    {
        EnvGuard env;
        env.set("HTTPS_PROXY", proxy.url().c_str());
        env.set("NO_PROXY", "");
        env.set("no_proxy", "");
        HttpClient client(runtime(), {.ca_file = pki().p("ca.pem")});
        CHECK(client.request({.method = "GET", .url = server.url()}).status == 200);
        CHECK(proxy.tunnels == 1);
    }
    {
        EnvGuard env;
        env.set("https_proxy", proxy.url().c_str());
        env.set("no_proxy", "localhost,127.0.0.1");
        HttpClient client(runtime(), {.ca_file = pki().p("ca.pem")});
        CHECK(client.request({.method = "GET", .url = server.url()}).status == 200);
        CHECK(proxy.tunnels == 1);
    }
}
