// The client under test for @modelcontextprotocol/conformance: the runner starts it
// with the scenario's server URL as the last argument, MCP_CONFORMANCE_SCENARIO set,
// and for some scenarios MCP_CONFORMANCE_CONTEXT (JSON: pre-registered credentials).
// It does what each client scenario expects with rath's client, Streamable HTTP
// transport and OAuth provider, and exits 0 when the session went as the scenario
// intends (the runner judges the wire).
#include <rath/async.hpp>
#include <rath/log.hpp>
#include <rath/mcp/client.hpp>
#include <rath/mcp/http_transport.hpp>
#include <rath/mcp/oauth.hpp>
#include <rath/net/http_client.hpp>

#include "lib/text/json_parse.hpp"

#include <boost/json.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

namespace {

using namespace rath;
namespace json = boost::json;

// The client-id metadata document URL the suite accepts (auth/basic-cimd).
constexpr const char* cimd_url = "https://conformance-test.local/client-metadata.json";
constexpr const char* redirect_uri = "http://localhost:3000/callback";

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

json::object context() {
    const std::string raw = env("MCP_CONFORMANCE_CONTEXT");
    if (raw.empty()) return {};
    auto v = rath::detail::parse_json(raw);
    if (!v || !v->is_object()) throw std::runtime_error("MCP_CONFORMANCE_CONTEXT is not a JSON object");
    return v->as_object();
}

std::string ctx_string(const json::object& ctx, const char* key) {
    auto it = ctx.find(key);
    if (it == ctx.end() || !it->value().is_string()) throw std::runtime_error(std::string("context lacks ") + key);
    return std::string(it->value().as_string());
}

boost::asio::awaitable<void> run(std::string scenario, std::string url) {
    net::HttpClient http;
    mcp::StreamableHttpClientOptions topt;
    topt.url = url;

    mcp::ClientOptions copt;
    copt.client_info.name = "rath-conformance-client";
    copt.client_info.version = "0.1.0";
    copt.request_timeout = std::chrono::seconds(20);

    const bool auth = scenario.rfind("auth/", 0) == 0;
    if (auth) {
        mcp::oauth::OAuthOptions o;
        o.client_name = "rath-conformance-client";
        o.redirect_uri = redirect_uri;
        o.client_metadata_url = cimd_url;
        o.redirect_handler = mcp::oauth::headless_redirect_handler(http);
        o.token_dir = std::filesystem::path();  // memory only
        if (scenario == "auth/pre-registration") {
            const auto ctx = context();
            mcp::oauth::ClientIdentity id;
            id.client_id = ctx_string(ctx, "client_id");
            id.client_secret = ctx_string(ctx, "client_secret");
            o.client = id;
        } else if (scenario == "auth/client-credentials-basic") {
            const auto ctx = context();
            o.grant = mcp::oauth::Grant::client_credentials;
            mcp::oauth::ClientIdentity id;
            id.client_id = ctx_string(ctx, "client_id");
            id.client_secret = ctx_string(ctx, "client_secret");
            id.token_endpoint_auth_method = "client_secret_basic";
            o.client = id;
        }
        topt.auth = std::make_shared<mcp::oauth::OAuthProvider>(http, url, std::move(o));
    }
    if (scenario == "elicitation-sep1034-client-defaults") {
        // Accept with nothing filled in: the client applies the schema's defaults.
        copt.elicitation = [](mcp::ElicitationRequest) -> boost::asio::awaitable<mcp::ElicitationResult> {
            mcp::ElicitationResult r;
            r.action = "accept";
            co_return r;
        };
    }

    mcp::Client client(std::make_unique<mcp::StreamableHttpTransport>(http, std::move(topt)), std::move(copt));
    co_await client.async_connect();
    const auto tools = co_await client.async_list_tools();

    if (scenario == "tools_call") {
        json::object args;
        args["a"] = 5;
        args["b"] = 3;
        co_await client.async_call_tool("add_numbers", std::move(args));
    } else if (scenario == "elicitation-sep1034-client-defaults") {
        co_await client.async_call_tool("test_client_elicitation_defaults", {});
    } else if (scenario == "sse-retry") {
        auto r = co_await client.async_call_tool("test_reconnection", {});
        if (r.is_error) throw std::runtime_error("test_reconnection reported an error");
    } else if (auth) {
        for (const auto& t : tools)
            if (t.name == "test-tool") co_await client.async_call_tool("test-tool", {});
    }
    co_await client.async_close();
}

}  // namespace

int main(int argc, char** argv) {
    const std::string scenario = env("MCP_CONFORMANCE_SCENARIO");
    if (argc < 2 || scenario.empty()) {
        std::cerr << "usage: MCP_CONFORMANCE_SCENARIO=<scenario> " << argv[0] << " <server-url>\n";
        return 2;
    }
    set_log_level(LogLevel::debug);
    try {
        async::block_on(run(scenario, argv[argc - 1]));
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "conformance client (" << scenario << "): " << e.what() << "\n";
        return 1;
    }
}
