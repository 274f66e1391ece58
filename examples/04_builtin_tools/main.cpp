// 04 — built-in tools: every loop gets the six system tools with no wiring. First we
// call them the way the agent loop does (dispatch_flow_tool with JSON arguments) and
// print the tool-result bodies the model would read, plus a typed user tool. Then an
// agent uses them: a model when a key is set (environment or config.json), else the
// fake LLM server scripted to write a file, multiply with the user tool, and read the
// file back.
#include "../common/example_llm.hpp"

#include <rath/flow.hpp>
#include <rath/session.hpp>
#include <rath/tool/dispatch.hpp>
#include <rath/tool/system_tools.hpp>
#include <rath/tool/tool_table.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <iostream>

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

    // The same tools in an agent's loop: the model picks them by name and schema.
    auto llm = example::make_llm(R"({"rules": [
        {"match": {"role": "user", "contains": "todo"},
         "respond": {"tool_calls": [
             {"id": "call_write", "name": "write_workspace_file",
              "arguments": {"path": "notes/todo.txt", "content": "buy milk\n"}},
             {"id": "call_calc", "name": "calculator", "arguments": {"a": 6, "b": 7, "op": "*"}}]}},
        {"match": {"role": "tool", "tool_call_id": "call_calc"},
         "respond": {"tool_calls": [{"id": "call_read", "name": "read_workspace_file",
                                     "arguments": {"path": "notes/todo.txt"}}]}},
        {"match": {"role": "tool", "tool_call_id": "call_read"},
         "respond": {"text": "Saved notes/todo.txt, which now reads: {{last}}; and 6 * 7 is 42."}}
    ]})");
    rath::flow::Agent agent("You keep the user's notes in the workspace. Use the tools.",
                            {.loop = {.provider = llm.provider, .tools = {calculator}}});
    auto ask = rath::Session::from_user_message(
        "Put 'buy milk' into notes/todo.txt, read it back to me, and tell me 6 * 7 using the calculator.");
    ask.to("local");
    rath::Session out = agent(ask);
    std::cout << "\nagent transcript (" << out.chunks().size() << " rows):\n" << out << "\n";
    ask.close_sandbox();
    return 0;
}
