// rath mcp login NAME: runs the OAuth 2.1 authorization of a config url entry's MCP
// server now (mcp_oauth_config in rath/mcp/tools.hpp), so that programs built from the
// config (rath-worker, rath-mcp-serve, mcp_tools_from_config) find usable tokens.
//
// The authorization code grant is the native-app flow of RFC 8252: the command listens
// on the redirect URI's loopback address (port 0 there means any free port, written into
// the redirect URI it registers), prints the authorization URL for the user to open, and
// takes the code from the browser's redirect to it.
#include "cli.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/lazy.hpp>
#include <rath/async/runtime.hpp>
#include <rath/config/store.hpp>
#include <rath/mcp/oauth.hpp>
#include <rath/mcp/tools.hpp>
#include <rath/net/http_client.hpp>
#include <rath/net/http_server.hpp>

#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace rath::cli {

namespace {

struct LoginArgs {
    std::string name;
    double timeout_s = 300;
};

// The loopback listener of a redirect URI: "http://127.0.0.1:PORT/path" (or localhost,
// or [::1]). Anything else cannot be received by this command.
struct Redirect {
    std::string host;
    std::uint16_t port = 0;
    std::string path;
};

Redirect parse_redirect(const std::string& uri) {
    auto u = boost::urls::parse_absolute_uri(uri);
    if (!u || u->scheme() != "http")
        throw CommandError("redirect_uri '" + uri + "' is not an http:// URL on this machine's loopback address");
    std::string host = u->host();
    if (host == "localhost") host = "127.0.0.1";
    if (host != "127.0.0.1" && host != "[::1]" && host != "::1")
        throw CommandError("redirect_uri '" + uri + "' is not on a loopback address (127.0.0.1, localhost or [::1]): "
                           "rath mcp login receives the redirect itself");
    if (host == "[::1]") host = "::1";
    Redirect r;
    r.host = host;
    if (u->has_port()) {
        const auto port = u->port_number();
        if (port == 0 && u->port() != "0") throw CommandError("redirect_uri '" + uri + "' has a bad port");
        r.port = port;
    } else {
        r.port = 80;
    }
    r.path = u->path().empty() ? "/" : std::string(u->path());
    return r;
}

void run_login(Context& ctx, const LoginArgs& a) {
    auto store = std::make_shared<config::ConfigStore>(ctx.config_path());
    std::optional<mcp::McpOAuthConfig> cfg = mcp::mcp_oauth_config(a.name, store);
    if (!cfg)
        throw CommandError("MCP server '" + a.name + "' in " + store->path().string() +
                           " has no \"oauth\" key in a url entry: there is nothing to sign in to");
    auto& rt = async::Runtime::default_runtime();
    std::unique_ptr<net::HttpServer> listener;
    async::Lazy<std::string> redirected;
    if (cfg->options.grant == mcp::oauth::Grant::authorization_code) {
        const Redirect r = parse_redirect(cfg->options.redirect_uri);
        const std::string path = r.path;
        listener = std::make_unique<net::HttpServer>(
            rt,
            [redirected, path](net::ServerRequest& req, net::ServerExchange& ex) mutable -> boost::asio::awaitable<void> {
                if (req.path() != path) {
                    std::vector<net::HttpHeader> h{{"Content-Type", "text/plain"}};
                    co_await ex.respond(404, std::move(h), "not the redirect URI\n");
                    co_return;
                }
                // The whole redirect URI as the browser requested it: the provider checks
                // its state and takes its code (or its error).
                std::string target = req.target;
                (void)redirected.try_set_value(std::move(target));
                std::vector<net::HttpHeader> h{{"Content-Type", "text/plain; charset=utf-8"}};
                co_await ex.respond(200, std::move(h), "rath: the authorization reached the command line; you can close this page.\n");
            },
            net::HttpServerOptions{.host = r.host, .port = r.port});
        std::uint16_t port = 0;
        try {
            port = listener->start();
        } catch (const std::system_error& e) {
            throw CommandError("cannot listen on the redirect URI's address " + r.host + ":" + std::to_string(r.port) +
                               ": " + e.what());
        }
        const std::string host = r.host == "::1" ? "[::1]" : r.host;
        cfg->options.redirect_uri = "http://" + host + ":" + std::to_string(port) + path;
        const std::string base = "http://" + host + ":" + std::to_string(port);
        const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(a.timeout_s * 1000));
        const std::string name = a.name;
        cfg->options.redirect_handler = [redirected, base, timeout, name](std::string url) -> boost::asio::awaitable<std::string> {
            std::cout << "Open this URL in a browser to sign in to MCP server '" << name << "':\n  " << url << '\n'
                      << std::flush;
            async::Lazy<std::string> got = redirected;
            std::string target = co_await async::with_timeout(got.async_get(), timeout, "waiting for the browser");
            co_return base + target;
        };
    }
    mcp::oauth::OAuthProvider provider(net::HttpClient(rt), cfg->server_url, cfg->options);
    async::block_on(rt, provider.async_authorize());
    if (listener) listener->close();
    const std::string dir = cfg->options.token_dir.value_or(std::filesystem::path()).string();
    if (ctx.json) {
        boost::json::object o{{"server", a.name}, {"url", cfg->server_url}, {"token_dir", dir}};
        std::cout << boost::json::serialize(o) << '\n';
    } else {
        std::cout << "signed in to MCP server '" << a.name << "'; tokens in " << dir << '\n';
    }
}

}  // namespace

void add_mcp_login_command(CLI::App& mcp, Context& ctx) {
    auto args = std::make_shared<LoginArgs>();
    auto* cmd = mcp.add_subcommand("login", "Sign in to a config MCP server that uses OAuth, and keep its tokens");
    cmd->footer(
        "NAME is an mcpServers entry with \"url\" and \"oauth\" (see rath/mcp/tools.hpp). With the authorization code\n"
        "grant the command listens on the entry's redirect_uri (default http://127.0.0.1:33418/callback; port 0: any\n"
        "free port), prints the authorization URL to open in a browser, and waits for the redirect. With\n"
        "client_credentials it signs in at once. Tokens go to mcp-oauth/ beside the config file (mode 0600); programs\n"
        "built from the config then use and refresh them.");
    cmd->add_option("name", args->name, "MCP server entry")->required();
    cmd->add_option("--timeout", args->timeout_s, "Seconds to wait for the browser's redirect")
        ->check(CLI::Range(1.0, 86400.0))
        ->capture_default_str();
    cmd->callback([&ctx, args] { run_login(ctx, *args); });
}

}  // namespace rath::cli
