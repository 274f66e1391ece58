#include <rath/mcp/jsonrpc.hpp>

#include <boost/json.hpp>
#include <doctest/doctest.h>

namespace json = boost::json;
using namespace rath::mcp::jsonrpc;

TEST_CASE("a request, a notification, a result and an error are told apart") {
    auto p = parse(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}})");
    REQUIRE(p.messages.size() == 1);
    CHECK_FALSE(p.batch);
    const auto& r = std::get<Request>(p.messages[0]);
    CHECK(r.id == Id{std::int64_t{3}});
    CHECK(r.method == "tools/call");
    CHECK(r.params->at("name") == "x");

    p = parse(R"({"method":"notifications/progress","jsonrpc":"2.0"})");
    REQUIRE(p.messages.size() == 1);
    CHECK(std::get<Notification>(p.messages[0]).method == "notifications/progress");
    CHECK_FALSE(std::get<Notification>(p.messages[0]).params.has_value());

    p = parse(R"({"jsonrpc":"2.0","id":"abc","result":{"tools":[]}})");
    REQUIRE(p.messages.size() == 1);
    CHECK(std::get<Result>(p.messages[0]).id == Id{std::string("abc")});
    CHECK(std::get<Result>(p.messages[0]).result.at("tools").as_array().empty());

    p = parse(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unsupported protocol version","data":{"supported":["2024-11-05"]}}})");
    REQUIRE(p.messages.size() == 1);
    const auto& e = std::get<ErrorResponse>(p.messages[0]);
    CHECK(e.id == std::optional<Id>(Id{std::int64_t{1}}));
    CHECK(e.error.code == error_code::invalid_params);
    CHECK(e.error.message == "Unsupported protocol version");
    CHECK(e.error.data->at("supported").as_array().size() == 1);
    CHECK(p.invalid.empty());
}

TEST_CASE("unknown members are ignored and an error with a null id keeps no id") {
    auto p = parse(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","extra":1},"_meta":{}})");
    REQUIRE(p.messages.size() == 1);
    CHECK_FALSE(std::get<ErrorResponse>(p.messages[0]).id.has_value());
    CHECK(std::get<ErrorResponse>(p.messages[0]).error.code == error_code::parse_error);
}

TEST_CASE("text that is not JSON is a parse error and a wrong shape an invalid request") {
    auto p = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"res");
    CHECK(p.messages.empty());
    REQUIRE(p.invalid.size() == 1);
    CHECK(p.invalid[0].error.code == error_code::parse_error);
    CHECK_FALSE(p.invalid[0].id.has_value());

    for (const char* bad : {R"({"jsonrpc":"1.0","id":1,"method":"x"})", R"({"id":1,"method":"x"})",
                            R"({"jsonrpc":"2.0","id":1,"method":5})", R"({"jsonrpc":"2.0","id":1})",
                            R"({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}})",
                            R"({"jsonrpc":"2.0","id":1,"method":"x","params":3})", R"(42)",
                            R"({"jsonrpc":"2.0","id":1,"error":{"message":"no code"}})"}) {
        CAPTURE(bad);
        p = parse(bad);
        CHECK(p.messages.empty());
        REQUIRE(p.invalid.size() == 1);
        CHECK(p.invalid[0].error.code == error_code::invalid_request);
    }
    // The id survives where it could be read, so a server can answer it.
    p = parse(R"({"jsonrpc":"1.0","id":"q","method":"x"})");
    CHECK(p.invalid.at(0).id == std::optional<Id>(Id{std::string("q")}));
}

TEST_CASE("a null, fractional or boolean request id is refused") {
    for (const char* bad : {R"({"jsonrpc":"2.0","id":null,"method":"x"})", R"({"jsonrpc":"2.0","id":1.5,"method":"x"})",
                            R"({"jsonrpc":"2.0","id":true,"method":"x"})", R"({"jsonrpc":"2.0","id":1.5,"result":{}})"}) {
        CAPTURE(bad);
        auto p = parse(bad);
        CHECK(p.messages.empty());
        CHECK(p.invalid.size() == 1);
    }
}

TEST_CASE("a batch yields its valid messages in order and an entry for each invalid one") {
    auto p = parse(R"([{"jsonrpc":"2.0","id":1,"result":{}},7,{"jsonrpc":"2.0","method":"n"}])");
    CHECK(p.batch);
    REQUIRE(p.messages.size() == 2);
    CHECK(std::holds_alternative<Result>(p.messages[0]));
    CHECK(std::holds_alternative<Notification>(p.messages[1]));
    CHECK(p.invalid.size() == 1);
    p = parse("[]");
    CHECK(p.batch);
    CHECK(p.invalid.size() == 1);
}

TEST_CASE("serialize writes compact JSON that parses back to the same message") {
    std::vector<Message> all{
        Request{Id{std::int64_t{7}}, "tools/call", json::value(json::object{{"name", "a\nb"}, {"arguments", json::object{}}})},
        Request{Id{std::string("s-1")}, "ping", std::nullopt},
        Notification{"notifications/initialized", std::nullopt},
        Result{Id{std::int64_t{-1}}, json::value(json::object{{"x", 1.5}})},
        make_error(std::nullopt, error_code::parse_error, "Parse error"),
        make_error(Id{std::string("z")}, error_code::method_not_found, "Method not found", json::value("m")),
    };
    for (const auto& m : all) {
        const auto text = serialize(m);
        CHECK(text.find('\n') == std::string::npos);
        CHECK(json::parse(text) == to_json(m));
        auto back = parse(text);
        REQUIRE(back.messages.size() == 1);
        CHECK(back.messages[0] == m);
    }
    CHECK(serialize(all[2]) == R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    auto batch = parse(serialize_batch(all));
    CHECK(batch.batch);
    CHECK(batch.messages == all);
    CHECK(serialize_batch({}).empty());
    CHECK(id_text(Id{std::string("a\"b")}) == R"("a\"b")");
    CHECK(id_text(Id{std::int64_t{12}}) == "12");
}
