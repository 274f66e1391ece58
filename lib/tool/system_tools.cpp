#include <rath/session.hpp>
#include <rath/tool/session_calls.hpp>
#include <rath/tool/system_tools.hpp>

#include "lib/text/pyrepr.hpp"
#include "lib/text/pystr.hpp"
#include "lib/text/utf8.hpp"

#include <boost/json/parse.hpp>

#include <cstdlib>
#include <mutex>

namespace rath::tool {

namespace json = boost::json;
namespace rb = rath::backend;

namespace {

json::object schema(std::string_view text) { return json::parse(text).as_object(); }

std::string path_arg(const json::object& args) {
    auto it = args.find("path");
    return it == args.end() ? std::string("<unknown>") : rath::detail::py_str(it->value());
}

const json::value& required(const json::object& args, const char* key) {
    auto it = args.find(key);
    if (it == args.end()) throw ToolArgumentError(rath::detail::pyrepr(key), "KeyError");  // str(KeyError('k'))
    return it->value();
}

// Built-ins: sandbox-scoped (lanes per sandbox) and dispatched on the session's sandbox.
class SystemTool : public FlowToolCall {
public:
    SystemTool(std::string name, std::string description, std::string_view params, bool parallel_safe)
        : FlowToolCall(std::move(name), std::move(description), schema(params)), parallel_safe_(parallel_safe) {}
    bool parallel_safe() const override { return parallel_safe_; }
    bool sandbox_scoped() const override { return true; }

    boost::asio::awaitable<ToolReturn> async_call(Session session, json::object arguments) override {
        rb::Payload p = payload(arguments);
        auto r = co_await async_flow_tool_dispatch(std::move(session), std::move(p));
        co_return ToolReturn(std::move(r));
    }

protected:
    virtual rb::Payload payload(const json::object& args) const = 0;

private:
    bool parallel_safe_;
};

class FsTool : public SystemTool {
public:
    using SystemTool::SystemTool;
    // All four filesystem tools share one key namespace and one lane group, so a write
    // then a read of the same path keep transcript order.
    ResourceKey resource_key(const json::object& args) const override { return {"fs", path_arg(args)}; }
    std::string lane_group() const override { return "builtin:fs"; }
    // Reads, and a write that replaces the whole file: a second call leaves the
    // workspace as the first did. (Commands and code runs are not: the default false.)
    bool idempotent() const override { return true; }
};

class RunShellCommand final : public SystemTool {
public:
    RunShellCommand()
        : SystemTool("run_shell_command",
                     "Run one shell command inside the active sandbox workspace. Prefer short commands such as ``echo Hello``.",
                     R"({"type":"object","properties":{"cmd":{"type":"string","description":"Shell command string"}},"required":["cmd"],"additionalProperties":false})",
                     false) {}
    ResourceKey resource_key(const json::object&) const override { return {"exec"}; }
    // One lane with run_code: a command and a code run never overlap in one sandbox
    // (the baseline's distinct keys let them, session.md §2.4).
    std::string lane_group() const override { return "builtin:exec"; }

protected:
    rb::Payload payload(const json::object& args) const override {
        const auto& raw = required(args, "cmd");
        if (raw.is_array()) {
            // The argv form: what a command policy turns a checked string into (policy.hpp);
            // it runs without a shell.
            std::vector<std::string> argv;
            std::size_t total = 0;
            for (auto& v : raw.get_array()) {
                argv.push_back(rath::detail::py_str(v));
                total += rath::detail::count_code_points(argv.back()) + 1;
            }
            if (argv.empty()) throw ToolArgumentError("empty command", "ValueError");
            if (total > max_shell_command_chars) throw ToolArgumentError("command too long", "ValueError");
            return rb::CommandRun{.cmd = std::move(argv)};
        }
        std::string cmd = rath::detail::py_str(raw);
        if (cmd.find('\n') != std::string::npos || cmd.find('\r') != std::string::npos)
            throw ToolArgumentError("multiline commands are rejected", "ValueError");
        if (rath::detail::count_code_points(cmd) > max_shell_command_chars) throw ToolArgumentError("command too long", "ValueError");
        return rb::CommandRun{.cmd = cmd};  // no timeout, env or cwd: the backend default timeout applies
    }
};

class ReadWorkspaceFile final : public FsTool {
public:
    ReadWorkspaceFile()
        : FsTool("read_workspace_file", "Read a file from the sandbox workspace. Omit encoding or set null to return raw bytes.",
                 R"({"type":"object","properties":{"path":{"type":"string"},"encoding":{"type":["string","null"],"description":"Text encoding; null for binary","default":"utf-8"}},"required":["path"],"additionalProperties":false})",
                 true) {}

protected:
    rb::Payload payload(const json::object& args) const override {
        std::string path = rath::detail::py_str(required(args, "path"));
        std::optional<std::string> enc = std::string("utf-8");  // omitted: utf-8 (only explicit null means bytes)
        if (auto it = args.find("encoding"); it != args.end())
            enc = it->value().is_null() ? std::nullopt : std::optional<std::string>(rath::detail::py_str(it->value()));
        return rb::FilesRead{.path = path, .encoding = enc};
    }
};

class WriteWorkspaceFile final : public FsTool {
public:
    WriteWorkspaceFile()
        : FsTool("write_workspace_file", "Write UTF-8 text to a path inside the sandbox workspace.",
                 R"({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false})",
                 true) {}

protected:
    rb::Payload payload(const json::object& args) const override {
        std::string path = rath::detail::py_str(required(args, "path"));
        const auto& content = required(args, "content");
        if (!content.is_string()) throw ToolArgumentError("content must be text for write_workspace_file", "TypeError");
        return rb::FilesWrite{.path = path, .data = std::string(content.get_string()), .mode = 0644};
    }
};

constexpr std::string_view path_only_schema =
    R"({"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false})";

class ListWorkspaceFiles final : public FsTool {
public:
    ListWorkspaceFiles()
        : FsTool("list_workspace_files", "List non-recursive directory entries under a sandbox path.", path_only_schema, true) {}

protected:
    rb::Payload payload(const json::object& args) const override {
        return rb::FilesList{.path = rath::detail::py_str(required(args, "path"))};
    }
};

class WorkspacePathExists final : public FsTool {
public:
    WorkspacePathExists()
        : FsTool("workspace_path_exists", "Return whether a path exists inside the sandbox workspace.", path_only_schema, true) {}

protected:
    rb::Payload payload(const json::object& args) const override {
        return rb::FilesExists{.path = rath::detail::py_str(required(args, "path"))};
    }
};

class RunCode final : public SystemTool {
public:
    RunCode()
        : SystemTool("run_code", "Execute a code snippet inside the sandbox code interpreter (default language: python).",
                     R"({"type":"object","properties":{"code":{"type":"string"},"language":{"type":"string","description":"Interpreter language","default":"python"},"timeout":{"type":["number","null"],"description":"Optional timeout in seconds"}},"required":["code"],"additionalProperties":false})",
                     false) {}
    ResourceKey resource_key(const json::object&) const override { return {"code"}; }
    std::string lane_group() const override { return "builtin:exec"; }  // shared with run_shell_command

protected:
    rb::Payload payload(const json::object& args) const override {
        std::string code = rath::detail::py_str(required(args, "code"));
        std::string language = "python";
        if (auto it = args.find("language"); it != args.end()) language = rath::detail::py_str(it->value());  // null -> "None"
        std::optional<double> timeout;
        if (auto it = args.find("timeout"); it != args.end() && !it->value().is_null()) {
            const auto& t = it->value();
            if (t.is_number()) {
                timeout = t.to_number<double>();
            } else if (t.is_bool()) {
                timeout = t.get_bool() ? 1.0 : 0.0;
            } else {
                std::string s = rath::detail::py_str(t);
                char* end = nullptr;
                double d = std::strtod(s.c_str(), &end);
                while (end && *end == ' ') ++end;
                if (s.empty() || !end || *end != '\0')
                    throw ToolArgumentError("could not convert string to float: " + rath::detail::pyrepr(s), "ValueError");
                timeout = d;
            }
        }
        return rb::CodeRun{.code = code, .language = language, .timeout = timeout};
    }
};

}  // namespace

const ToolTable& global_system_tools() {
    static const ToolTable table([] {
        ToolTable t;
        t.add(std::make_shared<RunShellCommand>());
        t.add(std::make_shared<ReadWorkspaceFile>());
        t.add(std::make_shared<WriteWorkspaceFile>());
        t.add(std::make_shared<ListWorkspaceFiles>());
        t.add(std::make_shared<WorkspacePathExists>());
        t.add(std::make_shared<RunCode>());
        return t;
    }());
    return table;
}

}  // namespace rath::tool
