// Replays every recorded MCP sample in $RATH_FIXTURES_DIR/mcp/ through the client's
// layers (JSON-RPC parsing, the pending-request table, the result and content-block
// decoders) and compares the normalised outcome with the sample's .expect.json, exactly
// (../shared/fixtures/README.md, "expect.json for MCP samples").
#include "net/base64.hpp"
#include "lib/mcp/protocol.hpp"
#include "support/files.hpp"
#include "support/fixtures.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace rath::mcp;
using rath::mcp::detail::ClientProtocol;

namespace {

bool ends_with(const std::string& s, std::string_view suf) {
    return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

json::value opt(const std::optional<std::string>& s) { return s ? json::value(*s) : json::value(nullptr); }

// The method of the request the recorded client sent, named by the sample.
std::string recorded_method(const std::string& stem) {
    if (stem.find("initialize") != std::string::npos) return "initialize";
    if (stem.find("tools_list") != std::string::npos) return "tools/list";
    if (stem.find("tools_call") != std::string::npos) return "tools/call";
    if (stem.find("ping") != std::string::npos) return "ping";
    return "unknown";
}

json::value normalise_block(const ContentBlock& b) {
    json::object o{{"type", b.type}};
    auto bytes = [](const std::optional<std::string>& data) -> json::value {
        if (!data) return nullptr;
        auto decoded = rath::net::detail::base64_decode(*data);
        REQUIRE_MESSAGE(decoded.has_value(), "data is not base64");
        return static_cast<std::int64_t>(decoded->size());
    };
    if (b.type == "text") {
        o["text"] = opt(b.text);
    } else if (b.type == "image" || b.type == "audio") {
        o["mime_type"] = opt(b.mime_type);
        o["data_bytes"] = bytes(b.data);
    } else if (b.type == "resource_link") {
        o["uri"] = opt(b.uri);
        o["name"] = opt(b.name);
        o["mime_type"] = opt(b.mime_type);
    } else if (b.type == "resource") {
        o["uri"] = opt(b.uri);
        o["mime_type"] = opt(b.mime_type);
        if (b.text) o["text"] = *b.text;
        if (b.data) o["data_bytes"] = bytes(b.data);
    }
    if (b.audience) {
        json::array a;
        for (const auto& s : *b.audience) a.emplace_back(s);
        o["audience"] = std::move(a);
    } else {
        o["audience"] = nullptr;
    }
    return o;
}

json::value normalise_reply(ClientProtocol::Reply& r) {
    json::object o;
    if (auto* e = std::get_if<jsonrpc::ErrorObject>(&r.outcome)) {
        o["kind"] = "error";
        o["id"] = jsonrpc::id_to_json(r.id);
        o["code"] = e->code;
        o["message"] = e->message;
        return o;
    }
    const auto& result = std::get<json::value>(r.outcome);
    o["kind"] = "result";
    o["id"] = jsonrpc::id_to_json(r.id);
    o["for_method"] = r.method;
    if (r.method == "initialize") {
        auto init = detail::decode_initialize_result(result);
        o["protocol_version"] = init.protocol_version;
        o["server_name"] = init.server_info.name;
        o["server_version"] = init.server_info.version;
        std::vector<std::string> keys;
        for (const auto& kv : init.capabilities) keys.emplace_back(kv.key());
        std::sort(keys.begin(), keys.end());
        json::array caps;
        for (auto& k : keys) caps.emplace_back(k);
        o["capabilities"] = std::move(caps);
        o["has_instructions"] = init.instructions.has_value() && !init.instructions->empty();
    } else if (r.method == "tools/list") {
        auto page = detail::decode_tools_page(result);
        json::array tools;
        for (const auto& t : page.tools) {
            json::array required;
            if (auto it = t.input_schema.find("required"); it != t.input_schema.end()) required = it->value().as_array();
            tools.push_back(json::object{{"name", t.name}, {"required", std::move(required)}});
        }
        o["tools"] = std::move(tools);
        o["next_cursor"] = opt(page.next_cursor);
    } else if (r.method == "tools/call") {
        auto call = detail::decode_call_tool_result(result);
        o["is_error"] = call.is_error;
        json::array types;
        std::optional<std::string> text;
        for (const auto& b : call.content) {
            types.emplace_back(b.type);
            if (b.type == "text" && b.text) text = text ? *text + "\n" + *b.text : *b.text;
        }
        o["content_types"] = std::move(types);
        o["text"] = opt(text);
        o["structured_content"] = call.structured_content ? *call.structured_content : json::value(nullptr);
    }
    return o;
}

json::value run_jsonl(const fs::path& path) {
    const std::string stem = path.stem().string();
    const std::string body = rath::test::read_file(path);
    ClientProtocol protocol;
    // The recorded client's requests: every id the recording answers was one of ours.
    std::istringstream pre(body);
    for (std::string line; std::getline(pre, line);) {
        for (auto& m : jsonrpc::parse(line).messages) {
            if (auto* r = std::get_if<jsonrpc::Result>(&m)) protocol.expect(r->id, recorded_method(stem));
            if (auto* e = std::get_if<jsonrpc::ErrorResponse>(&m); e && e->id) protocol.expect(*e->id, recorded_method(stem));
        }
    }
    REQUIRE_MESSAGE(!body.empty(), "empty sample");
    REQUIRE_MESSAGE(body.back() == '\n', "a stdio sample ends every line with \\n");
    json::array messages;
    std::istringstream in(body);
    for (std::string line; std::getline(in, line);) {
        for (auto& m : protocol.receive(line)) {
            if (auto* r = std::get_if<ClientProtocol::Reply>(&m)) {
                messages.push_back(normalise_reply(*r));
            } else if (auto* n = std::get_if<jsonrpc::Notification>(&m)) {
                messages.push_back(json::object{{"kind", "notification"}, {"method", n->method}});
            } else if (auto* q = std::get_if<jsonrpc::Request>(&m)) {
                messages.push_back(json::object{{"kind", "request"}, {"method", q->method}});
            } else {
                FAIL("an unusable message: " << std::get<ClientProtocol::Stray>(m).reason);
            }
        }
    }
    CHECK(protocol.pending() == 0);
    return json::object{{"messages", std::move(messages)}};
}

}  // namespace

TEST_SUITE("mcp_fixtures") {
    TEST_CASE("every recorded MCP sample normalises to its expectation") {
        const fs::path dir = rath::test::fixtures_dir() / "mcp";
        REQUIRE_MESSAGE(fs::is_directory(dir), "fixtures not found at " << dir.string());
        std::vector<fs::path> samples;
        for (const auto& e : fs::directory_iterator(dir)) {
            const std::string name = e.path().filename().string();
            if (!e.is_regular_file() || ends_with(name, ".expect.json")) continue;
            if (ends_with(name, ".jsonl") || (name.rfind("content_block_", 0) == 0 && ends_with(name, ".json")))
                samples.push_back(e.path());
        }
        std::sort(samples.begin(), samples.end());
        REQUIRE_MESSAGE(!samples.empty(), "no MCP samples under " << dir.string());
        int checked = 0;
        for (const auto& s : samples) {
            INFO("sample: " << s.string());
            const std::string stem = s.filename().string().substr(0, s.filename().string().rfind('.'));
            const fs::path expect = s.parent_path() / (stem + ".expect.json");
            REQUIRE_MESSAGE(fs::exists(expect), "sample without expectation: " << s.string());
            json::value want = json::parse(rath::test::read_file(expect));
            json::value got = ends_with(s.string(), ".jsonl")
                                  ? run_jsonl(s)
                                  : normalise_block(detail::decode_content_block(json::parse(rath::test::read_file(s))));
            INFO("got:  " << json::serialize(got));
            INFO("want: " << json::serialize(want));
            CHECK(got == want);
            ++checked;
        }
        MESSAGE("mcp samples checked: " << checked);
    }
}
