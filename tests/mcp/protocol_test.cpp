// The client's pure protocol state machine: ids, the pending table, classification.
#include "lib/mcp/protocol.hpp"

#include <rath/mcp/error.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

namespace json = boost::json;
using namespace rath::mcp;
using rath::mcp::detail::ClientProtocol;

TEST_CASE("requests are numbered from 0 and their answers find the method they were for") {
    ClientProtocol p;
    auto a = p.request("initialize", json::object{{"protocolVersion", "2025-11-25"}});
    auto b = p.request("tools/list", std::nullopt);
    CHECK(a.id == jsonrpc::Id{std::int64_t{0}});
    CHECK(b.id == jsonrpc::Id{std::int64_t{1}});
    CHECK(a.text == R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})");
    CHECK(p.pending() == 2);
    auto in = p.receive(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}})");
    REQUIRE(in.size() == 1);
    auto& reply = std::get<ClientProtocol::Reply>(in[0]);
    CHECK(reply.method == "tools/list");
    CHECK(std::get<jsonrpc::ErrorObject>(reply.outcome).code == -32601);
    CHECK(p.pending() == 1);
}

TEST_CASE("a progress token is the request id, merged into params._meta") {
    ClientProtocol p;
    auto r = p.request("tools/call", json::object{{"name", "x"}, {"_meta", json::object{{"k", 1}}}}, true);
    auto parsed = jsonrpc::parse(r.text);
    const auto& params = *std::get<jsonrpc::Request>(parsed.messages.at(0)).params;
    CHECK(params.at("_meta").at("progressToken") == 0);
    CHECK(params.at("_meta").at("k") == 1);
}

TEST_CASE("a forgotten request's late answer, an unknown id and garbage are strays") {
    ClientProtocol p;
    auto r = p.request("tools/call", std::nullopt);
    CHECK(p.forget(r.id));
    CHECK_FALSE(p.forget(r.id));
    auto late = p.receive(R"({"jsonrpc":"2.0","id":0,"result":{}})");
    REQUIRE(late.size() == 1);
    CHECK(std::get<ClientProtocol::Stray>(late[0]).reason == "an answer to id 0, which has no request in flight");
    auto garbage = p.receive("not json");
    REQUIRE(garbage.size() == 1);
    CHECK(std::get<ClientProtocol::Stray>(garbage[0]).reason.rfind("Parse error", 0) == 0);
    // Server requests and notifications pass through for the client to handle.
    auto mixed = p.receive(R"([{"jsonrpc":"2.0","id":"s1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}])");
    REQUIRE(mixed.size() == 2);
    CHECK(std::get<jsonrpc::Request>(mixed[0]).method == "ping");
    CHECK(std::get<jsonrpc::Notification>(mixed[1]).method == "notifications/message");
}

TEST_CASE("results of the wrong shape are protocol errors and tools without a usable schema are marked") {
    CHECK_THROWS_AS(detail::decode_initialize_result(json::parse(R"({"capabilities":{}})")), McpProtocolError);
    CHECK_THROWS_AS(detail::decode_tools_page(json::parse(R"({"tools":{}})")), McpProtocolError);
    CHECK_THROWS_AS(detail::decode_call_tool_result(json::parse(R"({"content":"text"})")), McpProtocolError);
    auto page = detail::decode_tools_page(json::parse(R"({"tools":[
        {"name":"ok","inputSchema":{"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"]}},
        {"name":"no_schema"},
        {"name":"wrong_type","inputSchema":{"type":"array"}},
        {"name":"bad_required","inputSchema":{"type":"object","required":"a"}},
        {"description":"nameless"}],"nextCursor":"c2"})"));
    REQUIRE(page.tools.size() == 4);
    CHECK_FALSE(page.tools[0].schema_error);
    CHECK_FALSE(page.tools[1].schema_error);
    CHECK(page.tools[1].input_schema == json::parse(R"({"type":"object","properties":{}})").as_object());
    CHECK(page.tools[2].schema_error == std::optional<std::string>(R"(inputSchema must have "type": "object")"));
    CHECK(page.tools[3].schema_error == std::optional<std::string>("inputSchema.required must be an array of strings"));
    CHECK(page.next_cursor == std::optional<std::string>("c2"));
}

TEST_CASE("accepted elicitation content gets the schema's defaults where the answer left them out") {
    auto schema = json::parse(R"({"type":"object","properties":{"a":{"type":"string","default":"x"},
        "b":{"type":"integer","default":1},"c":{"type":"boolean"}}})").as_object();
    CHECK(detail::apply_schema_defaults(schema, json::parse(R"({"b":5})").as_object()) ==
          json::parse(R"({"b":5,"a":"x"})").as_object());
}

TEST_CASE("the requested and accepted revisions") {
    CHECK(requested_protocol_versions() == std::vector<std::string>{"2025-11-25", "2025-06-18"});
    CHECK(accepted_protocol_version("2024-11-05"));
    CHECK_FALSE(accepted_protocol_version("2026-07-28"));
}
