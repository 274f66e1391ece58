// Command policies (policy.hpp): shell-free execution of exactly what was checked,
// executables matched by their resolved file.
#include "tool/tool_support.hpp"

#include <filesystem>
#include <fstream>

using namespace rath::test;
namespace fs = std::filesystem;

namespace {

std::string real(const char* p) { return fs::canonical(p).string(); }

bool denied(const rt::ToolDispatchResult& r) { return r.failed && r.content.find("tool_policy_denied") != std::string::npos; }

}  // namespace

TEST_CASE("an allowlisted command cannot smuggle a second command through shell syntax") {
    rath::Session s;
    s.to("local");
    rt::set_tool_policy(s, rt::ToolPolicy{.command_allow = {"ls", "echo"}});
    auto sh = builtin("run_shell_command");
    for (const char* cmd : {"ls ; echo x > pwned", "ls && echo x > pwned", "ls | tee pwned", "echo $(touch pwned)",
                            "echo `touch pwned`", "ls\ntouch pwned", "echo x > pwned"}) {
        auto r = rt::dispatch_flow_tool(s, sh, obj(json::serialize(json::object{{"cmd", cmd}})));
        CHECK_MESSAGE(denied(r), cmd);
    }
    auto ok = rt::dispatch_flow_tool(s, sh, obj(R"({"cmd":"echo 'a;b' \"$(not run)\""})"));
    CHECK(denied(ok));  // $ inside double quotes is an expansion: refused
    auto lit = rt::dispatch_flow_tool(s, sh, obj(R"({"cmd":"echo 'a;b|c' '$HOME' \"x  y\""})"));
    REQUIRE_FALSE(lit.failed);
    CHECK(lit.projection.at("stdout").as_string() == "a;b|c $HOME x  y\n");
    auto sb = s.require_sandbox();
    CHECK_FALSE(fs::exists(fs::path(sb->handle()) / "pwned"));
    rt::set_tool_policy(s, std::nullopt);
    s.close_sandbox();
}

TEST_CASE("a denied executable is caught by any path or symlink that resolves to it") {
    rath::Session s;
    s.to("local");
    auto sh = builtin("run_shell_command");
    auto sb = s.require_sandbox();
    const fs::path ws = sb->handle();
    { std::ofstream(ws / "victim") << "x"; }
    fs::create_symlink("/bin/rm", ws / "rm-link");
    fs::create_directories(ws / "sub");
    fs::copy_file(real("/bin/rm"), ws / "sub" / "rm");  // a copy that keeps the name
    rt::set_tool_policy(s, rt::ToolPolicy{.command_deny = {"rm"}});
    for (const char* cmd : {"rm victim", "/bin/rm victim", "/usr/bin/rm victim", "/usr/bin/../bin/rm victim",
                            "./rm-link victim", "sub/rm victim", "'r'm victim", "\\rm victim"}) {
        auto r = rt::dispatch_flow_tool(s, sh, obj(json::serialize(json::object{{"cmd", cmd}})));
        CHECK_MESSAGE(denied(r), cmd);
    }
    auto as_list = rt::dispatch_flow_tool(s, sh, obj(R"({"cmd":["./rm-link","victim"]})"));
    CHECK(denied(as_list));
    CHECK(fs::exists(ws / "victim"));
    // What is not denied runs, without a shell.
    auto cat = rt::dispatch_flow_tool(s, sh, obj(R"({"cmd":"cat victim"})"));
    REQUIRE_FALSE(cat.failed);
    CHECK(cat.projection.at("stdout").as_string() == "x");
    // An executable the policy cannot resolve is refused rather than guessed at.
    auto missing = rt::dispatch_flow_tool(s, sh, obj(R"({"cmd":"no-such-command-xyz"})"));
    CHECK(denied(missing));
    CHECK(missing.content.find("was not found") != std::string::npos);
    rt::set_tool_policy(s, std::nullopt);
    s.close_sandbox();
}

TEST_CASE("the checked command is rewritten to its resolved argv and allow entries resolve the same way") {
    rt::ToolPolicyEnforcer allow({.command_allow = {"/bin/ls", "echo"}});
    auto args = obj(R"({"cmd":"ls -l 'a b'"})");
    CHECK_FALSE(allow.check_and_rewrite("run_shell_command", args));
    REQUIRE(args.at("cmd").is_array());
    const auto& argv = args.at("cmd").as_array();
    REQUIRE(argv.size() == 3);
    CHECK(argv[0].as_string() == real("/bin/ls"));
    CHECK(argv[1].as_string() == "-l");
    CHECK(argv[2].as_string() == "a b");
    CHECK_FALSE(allow.check("run_shell_command", obj(R"({"cmd":"/usr/bin/ls"})")));
    CHECK(*allow.check("run_shell_command", obj(R"({"cmd":"cat x"})")) == "command 'cat' is not in this session's allowlist");
    // Other tools' `cmd` is checked the same way but left as it was.
    auto user = obj(R"({"cmd":"ls"})");
    CHECK_FALSE(allow.check_and_rewrite("my_tool", user));
    CHECK(user.at("cmd").is_string());
    // run_code runs the python interpreter: allowed only when python3 is.
    CHECK(*allow.check("run_code", obj(R"j({"code":"print(1)"})j")) == "command 'python3' is not in this session's allowlist");
    rt::ToolPolicyEnforcer py({.command_allow = {"python3"}});
    CHECK_FALSE(py.check("run_code", obj(R"j({"code":"print(1)"})j")));
    // Without command lists nothing is parsed or rewritten.
    rt::ToolPolicyEnforcer none({.max_calls = 10});
    auto plain = obj(R"({"cmd":"echo a; echo b"})");
    CHECK_FALSE(none.check_and_rewrite("run_shell_command", plain));
    CHECK(plain.at("cmd").is_string());
}

TEST_CASE("without a policy a command string still runs through sh") {
    rath::Session s;
    s.to("local");
    auto r = rt::dispatch_flow_tool(s, builtin("run_shell_command"), obj(R"({"cmd":"echo a; echo b | tr b c"})"));
    REQUIRE_FALSE(r.failed);
    CHECK(r.projection.at("stdout").as_string() == "a\nc\n");
    s.close_sandbox();
}
