// 04 — built-in tools: every loop gets the six system tools with no wiring. Here we
// call them the way the agent loop does (dispatch_flow_tool with JSON arguments) and
// print the tool-result bodies the model would read, plus a typed user tool.
#include <rath/session.hpp>
#include <rath/tool/dispatch.hpp>
#include <rath/tool/system_tools.hpp>
#include <rath/tool/tool_table.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/json/parse.hpp>

#include <cstdio>

namespace rt = rath::tool;
namespace json = boost::json;

struct CalcArgs {
    double a;
    double b;
    std::string op;
};
BOOST_DESCRIBE_STRUCT(CalcArgs, (), (a, b, op))

int main() {
    rath::Session session;
    session.to("local");  // the sandbox opens lazily on the first tool call

    auto calculator = rt::make_tool<CalcArgs>(
        "calculator", "Apply + - * / to two numbers.",
        [](rath::Session, CalcArgs x) {
            double r = x.op == "+" ? x.a + x.b : x.op == "-" ? x.a - x.b : x.op == "*" ? x.a * x.b : x.a / x.b;
            return json::object{{"expression", std::to_string(x.a) + x.op + std::to_string(x.b)}, {"result", r}};
        },
        {.parallel_safe = true});
    auto table = rt::merge_tools_for_loop({calculator});
    std::printf("tools sent to the model:");
    for (auto& s : rt::tools_to_schemas(table)) std::printf(" %s", s.name.c_str());
    std::printf("\n\n");

    const char* calls[][2] = {
        {"write_workspace_file", R"({"path":"notes/todo.txt","content":"buy milk\n"})"},
        {"run_shell_command", R"({"cmd":"ls -R && wc -c notes/todo.txt"})"},
        {"read_workspace_file", R"({"path":"notes/todo.txt"})"},
        {"list_workspace_files", R"({"path":"notes"})"},
        {"workspace_path_exists", R"({"path":"missing.txt"})"},
        {"run_code", R"j({"code":"import sys; print(sys.version_info[0])"})j"},
        {"read_workspace_file", R"({"path":"/etc/passwd"})"},
        {"calculator", R"({"a":6,"b":7,"op":"*"})"},
    };
    for (auto& c : calls) {
        auto r = rt::dispatch_flow_tool(session, table.find(c[0]), json::parse(c[1]).as_object());
        std::printf("%s %s\n  -> %s\n", c[0], c[1], r.content.c_str());
    }
    session.close_sandbox();
    return 0;
}
