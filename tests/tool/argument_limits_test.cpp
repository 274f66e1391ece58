// Numbers and text a model sends are validated before they are used: non-finite,
// negative, out-of-range and over-the-operator's-limit numbers and NUL bytes become
// error rows, never UB in a conversion and never a different path at the OS.
#include "tool/tool_support.hpp"

#include <rath/backend/local.hpp>
#include <rath/tool/serialize.hpp>

#include <cmath>
#include <filesystem>
#include <limits>

using namespace rath::test;
namespace fs = std::filesystem;

namespace {

struct Numbers {
    long long count;
    unsigned limit;
    int offset;
    double ratio;
    float scale;
    std::optional<double> timeout;
};
BOOST_DESCRIBE_STRUCT(Numbers, (), (count, limit, offset, ratio, scale, timeout))

json::object good_numbers() { return obj(R"({"count":1,"limit":2,"offset":-3,"ratio":0.5,"scale":1.5,"timeout":2})"); }

}  // namespace

TEST_CASE("run_code timeouts that are NaN infinite negative or huge become invalid argument rows") {
    rath::Session s;
    s.to("local");
    for (const char* t : {R"("nan")", R"("inf")", R"("-inf")", "-1", "1e300", "9223372036854775808", R"("1e400")",
                          "18446744073709551615", "-9223372036854775808"}) {
        CAPTURE(t);
        auto r = rt::dispatch_flow_tool(s, builtin("run_code"),
                                        obj(std::string(R"j({"code":"print(1)","timeout":)j") + t + "}"));
        CHECK(r.failed);
        CHECK(r.projection.at("error_kind").as_string() == "invalid_tool_arguments");
        CHECK(r.projection.at("detail").as_string() == "ValueError");
        CHECK(std::string(r.projection.at("message").as_string()).rfind("invalid timeout: ", 0) == 0);
    }
    // A value within the operator's maximum runs.
    auto ok = rt::dispatch_flow_tool(s, builtin("run_code"), obj(R"j({"code":"print(1)","timeout":30})j"));
    CHECK_FALSE(ok.failed);
    s.close_sandbox();
}

TEST_CASE("the operator's maximum timeout cannot be raised by a tool argument") {
    rath::backend::HostOptions o;
    o.max_timeout = 5;
    rath::backend::LocalBackend b(o);
    auto sb = b.open();
    auto over = sb->dispatch(rath::backend::CodeRun{.code = "print(1)", .timeout = 5.5});
    CHECK(failure(over).kind == "invalid_tool_arguments");
    CHECK(failure(over).message == "invalid timeout: 5.5 seconds is over the limit of 5.0 seconds");
    CHECK(std::get<rath::backend::CodeResult>(sb->dispatch(rath::backend::CodeRun{.code = "print(1)", .timeout = 5.0}))
              .stdout_data == "1\n");
    b.close(sb);
}

TEST_CASE("a NUL byte in a tool's path or command is refused even where the policy's text check passes") {
    rath::Session s;
    s.to("local");
    REQUIRE_FALSE(
        rt::dispatch_flow_tool(s, builtin("write_workspace_file"), obj(R"({"path":"data/in.txt","content":"x"})"))
            .failed);
    auto root = fs::path(s.sandbox()->handle());
    // The policy compares text: "data/..\0" is a child of data there, but the OS would
    // have stopped at the NUL and listed the workspace root.
    rt::set_tool_policy(s, rt::ToolPolicy{.fs_roots = {(root / "data").string()}});
    std::string escaped = (root / "data").string() + "/..\\u0000";
    auto list = rt::dispatch_flow_tool(s, builtin("list_workspace_files"), obj(R"({"path":")" + escaped + R"("})"));
    CHECK(list.failed);
    CHECK(list.projection.at("error_kind").as_string() == "invalid_tool_arguments");
    CHECK(std::string(list.projection.at("message").as_string()).find("contains a NUL byte") != std::string::npos);
    rt::set_tool_policy(s, std::nullopt);
    for (auto [tool, args] : std::vector<std::pair<std::string, std::string>>{
             {"read_workspace_file", R"({"path":"a.txt\u0000.sh"})"},
             {"write_workspace_file", R"({"path":"a.txt\u0000.sh","content":"x"})"},
             {"list_workspace_files", R"({"path":"data\u0000"})"},
             {"workspace_path_exists", R"({"path":"data/in.txt\u0000"})"},
             {"run_shell_command", R"({"cmd":"echo hi\u0000; touch pwned"})"},
             {"run_code", R"j({"code":"print(1)","language":"python\u0000"})j"}}) {
        CAPTURE(tool);
        auto r = rt::dispatch_flow_tool(s, builtin(tool), obj(args));
        CHECK(r.failed);
        CHECK(r.projection.at("error_kind").as_string() == "invalid_tool_arguments");
    }
    CHECK_FALSE(fs::exists(root / "a.txt"));
    CHECK_FALSE(fs::exists(root / "pwned"));
    s.close_sandbox();
}

TEST_CASE("typed tool numbers that are not finite or do not fit their type are argument errors") {
    int ran = 0;
    auto t = rt::make_tool<Numbers>("numbers", "n", [&ran](rath::Session, Numbers) {
        ++ran;
        return json::value(true);
    });
    rath::Session s;
    CHECK_FALSE(rt::dispatch_flow_tool(s, t, good_numbers()).failed);
    CHECK(ran == 1);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    struct Case {
        const char* field;
        json::value value;
        const char* message;
    };
    std::vector<Case> cases = {
        {"count", json::value(std::uint64_t{1} << 63),
         "ValueError: argument 'count': 9223372036854775808 is not a finite number in the argument's range"},
        {"count", json::value(1e300),
         "ValueError: argument 'count': 1e+300 is not a finite number in the argument's range"},
        {"count", json::value(std::ldexp(1.0, 63)), nullptr},
        {"count", json::value(nan), "ValueError: argument 'count': nan is not a finite number in the argument's range"},
        {"count", json::value(inf), nullptr},
        {"limit", json::value(-1), "ValueError: argument 'limit': -1 is negative"},
        {"limit", json::value(-1.0), nullptr},
        {"limit", json::value(std::int64_t{1} << 40), nullptr},
        {"offset", json::value(1e300), nullptr},
        {"offset", json::value(std::int64_t{1} << 40), nullptr},
        {"offset", json::value(1.5), "ValueError: argument 'offset': expected integer, got float"},
        {"ratio", json::value(nan), "ValueError: argument 'ratio': nan is not a finite number in the argument's range"},
        {"ratio", json::value(-inf), nullptr},
        {"scale", json::value(1e300), nullptr},
        {"timeout", json::value(inf), nullptr},
    };
    for (auto& c : cases) {
        CAPTURE(c.field);
        CAPTURE(json::serialize(c.value));
        auto args = good_numbers();
        args[c.field] = c.value;
        auto r = rt::dispatch_flow_tool(s, t, args);
        REQUIRE(r.failed);
        CHECK(r.projection.at("error_kind").as_string() == "tool_execution_exception");
        CHECK(r.projection.at("detail").as_string() == "ValueError");
        if (c.message) CHECK(r.projection.at("message").as_string() == c.message);
    }
    CHECK(ran == 1);
    // In range, including the extremes, still converts exactly.
    auto args = good_numbers();
    args["count"] = json::value(std::numeric_limits<std::int64_t>::max());
    args["limit"] = json::value(std::numeric_limits<unsigned>::max());
    args["offset"] = json::value(-2147483648.0);
    CHECK_FALSE(rt::dispatch_flow_tool(s, t, args).failed);
    CHECK(ran == 2);
}

TEST_CASE("typed tool field bounds are sent in the schema and enforced before the body runs") {
    int ran = 0;
    rt::ToolTraits traits;
    traits.field_bounds = {{"timeout", {.minimum = 0.0, .maximum = 60.0}}, {"limit", {.maximum = 100.0}}};
    auto t = rt::make_tool<Numbers>(
        "bounded", "b",
        [&ran](rath::Session, Numbers) {
            ++ran;
            return json::value(true);
        },
        traits);
    auto props = t->parameters().at("properties").as_object();
    CHECK(props.at("timeout").as_object().at("minimum").to_number<double>() == 0.0);
    CHECK(props.at("timeout").as_object().at("maximum").to_number<double>() == 60.0);
    CHECK(props.at("limit").as_object().at("maximum").to_number<double>() == 100.0);
    rath::Session s;
    auto over = good_numbers();
    over["timeout"] = 61;
    auto r = rt::dispatch_flow_tool(s, t, over);
    CHECK(r.projection.at("message").as_string() == "ValueError: argument 'timeout': 61 is over the maximum of 60");
    auto under = good_numbers();
    under["timeout"] = -0.5;
    CHECK(rt::dispatch_flow_tool(s, t, under).projection.at("message").as_string() ==
          "ValueError: argument 'timeout': -0.5 is below the minimum of 0");
    auto limit = good_numbers();
    limit["limit"] = 101;
    CHECK(rt::dispatch_flow_tool(s, t, limit).failed);
    auto absent = good_numbers();
    absent.erase("timeout");
    CHECK_FALSE(rt::dispatch_flow_tool(s, t, absent).failed);
    CHECK_FALSE(rt::dispatch_flow_tool(s, t, good_numbers()).failed);
    CHECK(ran == 2);
}

TEST_CASE("a file read cut at the backend cap shows the truncation marker to the model") {
    auto r = rt::make_dispatch_result(rt::ToolReturn(
        rath::backend::DispatchResult(rath::backend::FileContent{.data = "head", .is_text = true, .truncated = true})));
    CHECK(r.projection.at("data").as_string() == "head...(truncated)");
    rath::Session s;
    s.to("local");
    REQUIRE_FALSE(
        rt::dispatch_flow_tool(s, builtin("write_workspace_file"), obj(R"({"path":"big.txt","content":"x"})")).failed);
    auto b = &s.sandbox()->backend();
    auto* host = dynamic_cast<rath::backend::HostBackend*>(b);
    REQUIRE(host != nullptr);
    auto saved = host->options();
    auto small = saved;
    small.max_read_bytes = 4;
    host->set_options(small);
    REQUIRE_FALSE(
        rt::dispatch_flow_tool(s, builtin("write_workspace_file"), obj(R"({"path":"big.txt","content":"abcdefgh"})"))
            .failed);
    auto read = rt::dispatch_flow_tool(s, builtin("read_workspace_file"), obj(R"({"path":"big.txt"})"));
    host->set_options(saved);
    CHECK(read.projection.at("data").as_string() == "abcd...(truncated)");
    s.close_sandbox();
}
