// The six built-in tools (backend_tools.md §6.2) and the tool table (§6.3).
#include "tool/tool_support.hpp"

#include <rath/tool/serialize.hpp>
#include <rath/tool/session_calls.hpp>
#include <rath/tool/tool_table.hpp>


using namespace rath::test;

namespace {
std::string compact(const json::value& v) { return json::serialize(v); }
}  // namespace

TEST_CASE("exactly the six built-in tools exist in order") {
    auto names = rt::global_system_tools().names();
    CHECK(names == std::vector<std::string>{"run_shell_command", "read_workspace_file", "write_workspace_file",
                                            "list_workspace_files", "workspace_path_exists", "run_code"});
    CHECK(&rt::global_system_tools() == &rt::global_system_tools());
}

TEST_CASE("built-in descriptions and schemas match the wire text byte for byte") {
    auto t = builtin("run_shell_command");
    CHECK(*t->description() ==
          "Run one shell command inside the active sandbox workspace. Prefer short commands such as ``echo Hello``.");
    CHECK(compact(t->parameters()) ==
          R"({"type":"object","properties":{"cmd":{"type":"string","description":"Shell command string"}},"required":["cmd"],"additionalProperties":false})");
    CHECK(*builtin("read_workspace_file")->description() ==
          "Read a file from the sandbox workspace. Omit encoding or set null to return raw bytes.");
    CHECK(compact(builtin("read_workspace_file")->parameters()) ==
          R"({"type":"object","properties":{"path":{"type":"string"},"encoding":{"type":["string","null"],"description":"Text encoding; null for binary","default":"utf-8"}},"required":["path"],"additionalProperties":false})");
    CHECK(*builtin("write_workspace_file")->description() == "Write UTF-8 text to a path inside the sandbox workspace.");
    CHECK(compact(builtin("write_workspace_file")->parameters()) ==
          R"({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false})");
    CHECK(*builtin("list_workspace_files")->description() == "List non-recursive directory entries under a sandbox path.");
    CHECK(*builtin("workspace_path_exists")->description() == "Return whether a path exists inside the sandbox workspace.");
    CHECK(compact(builtin("workspace_path_exists")->parameters()) ==
          R"({"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false})");
    CHECK(*builtin("run_code")->description() ==
          "Execute a code snippet inside the sandbox code interpreter (default language: python).");
    CHECK(compact(builtin("run_code")->parameters()) ==
          R"({"type":"object","properties":{"code":{"type":"string"},"language":{"type":"string","description":"Interpreter language","default":"python"},"timeout":{"type":["number","null"],"description":"Optional timeout in seconds"}},"required":["code"],"additionalProperties":false})");
}

TEST_CASE("built-in resource keys and flags follow the upstream table") {
    CHECK(builtin("run_shell_command")->resource_key(obj(R"({"cmd":"x"})")) == rt::ResourceKey{"exec"});
    CHECK(builtin("run_code")->resource_key(obj(R"({"code":"x"})")) == rt::ResourceKey{"code"});
    CHECK(builtin("write_workspace_file")->resource_key(obj(R"({"path":"a.txt"})")) == rt::ResourceKey{"fs", "a.txt"});
    CHECK(builtin("read_workspace_file")->resource_key(obj("{}")) == rt::ResourceKey{"fs", "<unknown>"});
    CHECK(builtin("list_workspace_files")->resource_key(obj(R"({"path":5})")) == rt::ResourceKey{"fs", "5"});
    CHECK_FALSE(builtin("run_shell_command")->parallel_safe());
    CHECK(builtin("read_workspace_file")->parallel_safe());
    for (auto& t : rt::global_system_tools().tools()) CHECK(t->sandbox_scoped());
    // Reads and whole-file writes may be repeated; commands and code runs may not.
    CHECK_FALSE(builtin("run_shell_command")->idempotent());
    CHECK_FALSE(builtin("run_code")->idempotent());
    for (const char* n : {"read_workspace_file", "write_workspace_file", "list_workspace_files", "workspace_path_exists"})
        CHECK(builtin(n)->idempotent());
    // A user tool is not idempotent unless its traits say so.
    auto plain = rt::make_tool<SleepArgs>("plain", "p", [](rath::Session, SleepArgs a) { return json::value(a.key); });
    CHECK_FALSE(plain->idempotent());
    auto again = rt::make_tool<SleepArgs>("again", "a", [](rath::Session, SleepArgs a) { return json::value(a.key); },
                                          {.idempotent = true});
    CHECK(again->idempotent());
}

TEST_CASE("run_shell_command runs python and write reports bytes written") {
    rath::Session s;
    s.to("local");
    auto r = rt::dispatch_flow_tool(s, builtin("run_shell_command"), obj(R"({"cmd":"python3 -c \"print(42)\""})"));
    CHECK_FALSE(r.failed);
    CHECK(r.projection.at("exit_code").as_int64() == 0);
    CHECK(r.projection.at("stdout").as_string() == "42\n");
    auto w = rt::dispatch_flow_tool(s, builtin("write_workspace_file"), obj(R"({"path":"one.txt","content":"x"})"));
    CHECK(w.content == R"({"bytes_written": 1})");
    auto e = rt::dispatch_flow_tool(s, builtin("workspace_path_exists"), obj(R"({"path":"one.txt"})"));
    CHECK(e.content == R"({"ok": true})");
    auto rd = rt::dispatch_flow_tool(s, builtin("read_workspace_file"), obj(R"({"path":"one.txt"})"));
    CHECK(rd.content == R"({"data": "x"})");
    auto ls = rt::dispatch_flow_tool(s, builtin("list_workspace_files"), obj(R"({"path":"."})"));
    CHECK(ls.projection.at("entries").as_array().size() == 1);
    auto code = rt::dispatch_flow_tool(s, builtin("run_code"), obj(R"j({"code":"print(6*7)"})j"));
    CHECK(code.projection.at("stdout").as_string() == "42\n");
    CHECK(code.projection.at("error").is_null());
    s.close_sandbox();
}

TEST_CASE("run_shell_command rejects multiline long and missing commands as tool exceptions") {
    rath::Session s;
    s.to("local");
    auto ml = rt::dispatch_flow_tool(s, builtin("run_shell_command"), obj(R"({"cmd":"echo a\necho b"})"));
    CHECK(ml.failed);
    CHECK(ml.content ==
          R"({"ok": false, "error_kind": "tool_execution_exception", "message": "ValueError: multiline commands are rejected", "detail": "ValueError"})");
    json::object long_cmd{{"cmd", std::string(2049, 'a')}};
    CHECK(rt::dispatch_flow_tool(s, builtin("run_shell_command"), long_cmd).projection.at("message").as_string() ==
          "ValueError: command too long");
    json::object exact{{"cmd", "echo " + std::string(2043, 'a')}};
    CHECK_FALSE(rt::dispatch_flow_tool(s, builtin("run_shell_command"), exact).failed);
    auto missing = rt::dispatch_flow_tool(s, builtin("run_shell_command"), obj("{}"));
    CHECK(missing.projection.at("message").as_string() == "KeyError: 'cmd'");
    auto nontext = rt::dispatch_flow_tool(s, builtin("write_workspace_file"), obj(R"({"path":"a","content":5})"));
    CHECK(nontext.projection.at("message").as_string() == "TypeError: content must be text for write_workspace_file");
    s.close_sandbox();
}

TEST_CASE("read_workspace_file encoding and run_code argument conversions follow Python") {
    rath::Session s;
    s.to("local");
    REQUIRE(std::holds_alternative<rath::backend::FileWriteResult>(
        rt::flow_tool_files_write(s, "bin.dat", std::string("\xff\xfe", 2))));
    // Explicit null reads bytes (decoded by serialization); omitted reads utf-8 text (fails here).
    auto raw = rt::dispatch_flow_tool(s, builtin("read_workspace_file"), obj(R"({"path":"bin.dat","encoding":null})"));
    CHECK_FALSE(raw.failed);
    auto text = rt::dispatch_flow_tool(s, builtin("read_workspace_file"), obj(R"({"path":"bin.dat"})"));
    CHECK(text.projection.at("error_kind").as_string() == "decode_error");
    auto t5 = rt::dispatch_flow_tool(s, builtin("run_code"), obj(R"j({"code":"print(1)","timeout":"5"})j"));
    CHECK_FALSE(t5.failed);
    auto bad = rt::dispatch_flow_tool(s, builtin("run_code"), obj(R"j({"code":"print(1)","timeout":"soon"})j"));
    CHECK(bad.projection.at("message").as_string() == "ValueError: could not convert string to float: 'soon'");
    auto none = rt::dispatch_flow_tool(s, builtin("run_code"), obj(R"j({"code":"print(1)","language":null})j"));
    CHECK(none.projection.at("error_kind").as_string() == "unsupported_tool");
    CHECK(none.projection.at("detail").as_string() == "None");
    s.close_sandbox();
}

TEST_CASE("the merged table keeps identities and rejects shadowing") {
    auto user = rt::make_tool<SleepArgs>("my_tool", "mine", [](rath::Session, SleepArgs a) { return json::value(a.key); });
    auto table = rt::merge_tools_for_loop({user});
    CHECK(table.size() == 7);
    CHECK(table.find("my_tool") == user);
    CHECK(table.find("run_shell_command") == builtin("run_shell_command"));
    auto shadow = rt::make_tool<SleepArgs>("run_shell_command", "x", [](rath::Session, SleepArgs) { return json::value(1); });
    try {
        (void)rt::merge_tools_for_loop({shadow});
        FAIL("expected ToolNameConflictError");
    } catch (const rt::ToolNameConflictError& e) {
        CHECK(std::string(e.what()) == "user tool 'run_shell_command' shadows a built-in system tool");
    }
    CHECK_THROWS_AS(rt::merge_tools_for_loop({user, user}), rt::ToolNameConflictError);
    auto schemas = rt::tools_to_schemas(table);
    REQUIRE(schemas.size() == 7);
    for (std::size_t i = 1; i < schemas.size(); ++i) CHECK(schemas[i - 1].name < schemas[i].name);
    CHECK_FALSE(schemas[0].strict.has_value());
}

TEST_CASE("session helpers dispatch on the lazily opened sandbox") {
    rath::Session s;
    s.to("local");
    CHECK(s.sandbox() == nullptr);
    auto r = rt::flow_tool_command_run(s, std::string("echo hi"));
    CHECK(std::get<rath::backend::CommandResult>(r).stdout_data == "hi\n");
    REQUIRE(s.sandbox() != nullptr);
    CHECK(std::get<rath::backend::FileWriteResult>(rt::flow_tool_files_write(s, "m.txt", "abc", 0600)).bytes_written == 3);
    CHECK((std::filesystem::status(s.sandbox()->handle() + "/m.txt").permissions() & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
    CHECK(std::get<rath::backend::FileContent>(rt::flow_tool_files_read(s, "m.txt")).data == "abc");
    CHECK(std::get<rath::backend::FileContent>(rt::flow_tool_files_read(s, "m.txt", std::nullopt)).is_text == false);
    CHECK(std::get<bool>(rt::flow_tool_files_exists(s, "m.txt")));
    CHECK(std::get<rath::backend::FileEntries>(rt::flow_tool_files_list(s, ".")).entries.size() == 1);
    CHECK(std::get<rath::backend::CodeResult>(rt::flow_tool_code_run(s, "print(42)")).stdout_data == "42\n");
    s.close_sandbox();
}
