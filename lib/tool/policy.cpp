#include <rath/session.hpp>
#include <rath/tool/error.hpp>
#include <rath/tool/policy.hpp>

#include "lib/text/pyrepr.hpp"
#include "lib/text/pystr.hpp"
#include "lib/tool/shell_words.hpp"

#include <boost/json/array.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <unordered_map>

namespace rath::tool {

namespace json = boost::json;
using rath::detail::pyrepr;

namespace {

// POSIX path normalised as text: "." dropped, ".." removes the previous part unless
// that part is the root.
std::string normalise(const std::string& p) {
    bool abs = !p.empty() && p.front() == '/';
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i <= p.size()) {
        std::size_t j = p.find('/', i);
        if (j == std::string::npos) j = p.size();
        std::string c = p.substr(i, j - i);
        if (c.empty() || c == ".") {
        } else if (c == "..") {
            if (!parts.empty() && parts.back() != "..")
                parts.pop_back();
            else if (!abs)
                parts.push_back("..");
        } else {
            parts.push_back(c);
        }
        i = j + 1;
    }
    std::string out = abs ? "/" : "";
    for (std::size_t k = 0; k < parts.size(); ++k) out += (k ? "/" : "") + parts[k];
    return out.empty() ? "." : out;
}

bool under_root(const std::string& path, const std::string& root) {
    if (path == root) return true;
    if (root == "/") return !path.empty() && path.front() == '/';
    return path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/';
}

std::string basename_of(const std::string& p) {
    auto k = p.rfind('/');
    return k == std::string::npos ? p : p.substr(k + 1);
}

std::string parent_path() {
    const char* p = std::getenv("PATH");
    return p ? p : "";
}

// The argv of a `cmd` argument: a string is split shell-free, a list is taken as is.
// Returns the refusal reason in `why` instead.
std::optional<std::vector<std::string>> command_argv(const json::value& cmd, std::string& why) {
    if (cmd.is_string()) {
        std::string text(cmd.get_string());
        auto w = detail::split_shell_words(text);
        if (!w.error.empty()) {
            why = "command " + pyrepr(text) + " was refused: " + w.error;
            return std::nullopt;
        }
        return std::move(w.words);
    }
    if (cmd.is_array()) {
        std::vector<std::string> argv;
        for (auto& v : cmd.get_array()) {
            if (!v.is_string()) {
                why = "command list elements must be strings";
                return std::nullopt;
            }
            argv.emplace_back(v.get_string());
        }
        if (argv.empty()) why = "empty command";
        if (argv.empty()) return std::nullopt;
        return argv;
    }
    why = "command must be a string or a list of strings";
    return std::nullopt;
}

// Policies by session id, each with a weak reference to its session: an entry whose
// session is gone no longer applies and is dropped by the next sweep, which runs
// whenever the table has doubled since the last one (so it stays within twice the
// sessions that hold a policy, however many sessions a process serves).
struct Attachments {
    struct Entry {
        WeakSession session;
        std::shared_ptr<ToolPolicyEnforcer> enforcer;
    };
    std::mutex mu;
    std::unordered_map<std::string, Entry> by_session;
    std::size_t sweep_at = 64;

    void sweep() {
        std::erase_if(by_session, [](const auto& kv) { return kv.second.session.expired(); });
        sweep_at = std::max<std::size_t>(64, by_session.size() * 2);
    }
};

Attachments& attachments() {
    static Attachments a;
    return a;
}

}  // namespace

ToolPolicyEnforcer::ToolPolicyEnforcer(ToolPolicy policy) : policy_(std::move(policy)) {
    if (policy_.max_calls && *policy_.max_calls < 0)
        throw ToolArgumentError("max_calls must be non-negative when set", "ValueError");
    if (!policy_.command_allow.empty() && !policy_.command_deny.empty())
        throw ToolArgumentError("pass command_allow or command_deny, not both", "ValueError");
}

long long ToolPolicyEnforcer::calls() const {
    std::lock_guard lk(mu_);
    return calls_;
}

std::optional<std::string> ToolPolicyEnforcer::check(const std::string& tool_name, const json::object& args,
                                                     const std::optional<std::string>& workspace) {
    json::object copy = args;
    return check_and_rewrite(tool_name, copy, workspace);
}

std::optional<std::string> ToolPolicyEnforcer::check_and_rewrite(const std::string& tool_name, json::object& args,
                                                                 const std::optional<std::string>& workspace) {
    const auto& p = policy_;
    if (p.allow_tools && !p.allow_tools->count(tool_name))
        return "tool " + pyrepr(tool_name) + " is not in this session's allowlist";
    if (!p.fs_roots.empty()) {
        if (auto it = args.find("path"); it != args.end() && !it->value().is_null()) {
            std::string raw = rath::detail::py_str(it->value());
            std::string norm = normalise(raw);
            bool ok = std::any_of(p.fs_roots.begin(), p.fs_roots.end(),
                                  [&](const std::string& r) { return under_root(norm, normalise(r)); });
            if (!ok) return "path " + pyrepr(raw) + " is outside the permitted roots";
        }
    }
    if (!p.command_allow.empty() || !p.command_deny.empty()) {
        std::optional<std::vector<std::string>> argv;
        if (auto it = args.find("cmd"); it != args.end()) {
            std::string why;
            argv = command_argv(it->value(), why);
            if (!argv) return why;
        } else if (tool_name == "run_code") {
            argv = std::vector<std::string>{"python3"};  // the code interpreter is a command too
        }
        if (argv) {
            const std::string path_env = parent_path();
            const std::string& given = argv->front();
            auto exe = detail::resolve_executable(given, path_env, workspace);
            if (!exe)
                return "command " + pyrepr(given) +
                       " was not found (a command policy runs only executables it resolves on PATH, by absolute "
                       "path, or relative to an open sandbox workspace)";
            auto same_file = [&](const std::string& entry) {
                auto r = detail::resolve_executable(entry, path_env, std::nullopt);
                return r && *r == *exe;
            };
            for (auto& entry : p.command_deny) {
                const bool by_name = entry.find('/') == std::string::npos &&
                                     (basename_of(given) == entry || basename_of(*exe) == entry);
                if (by_name || same_file(entry)) return "command " + pyrepr(given) + " is denied by policy";
            }
            if (!p.command_allow.empty() && std::none_of(p.command_allow.begin(), p.command_allow.end(), same_file))
                return "command " + pyrepr(given) + " is not in this session's allowlist";
            if (tool_name == "run_shell_command") {
                // Runs exactly what was checked: no shell, and the resolved file (a
                // workspace-relative name stays relative: inside a sandbox the
                // workspace is mounted elsewhere, and the cwd is its root either way).
                const bool workspace_relative = given.find('/') != std::string::npos && given.front() != '/';
                if (!workspace_relative) argv->front() = *exe;
                json::array a;
                for (auto& w : *argv) a.emplace_back(w);
                args["cmd"] = std::move(a);
            }
        }
    }
    if (p.max_calls) {
        std::lock_guard lk(mu_);
        if (calls_ >= *p.max_calls) return "session exceeded max_calls=" + std::to_string(*p.max_calls) + " tool calls";
        ++calls_;  // only calls that passed every other check use the budget
    }
    return std::nullopt;
}

void set_tool_policy(const Session& session, std::optional<ToolPolicy> policy) {
    auto enforcer = policy ? std::make_shared<ToolPolicyEnforcer>(std::move(*policy)) : nullptr;
    auto& a = attachments();
    std::lock_guard lk(a.mu);
    if (enforcer) {
        a.by_session.insert_or_assign(session.id(), Attachments::Entry{WeakSession(session), std::move(enforcer)});
        if (a.by_session.size() >= a.sweep_at) a.sweep();
    } else {
        a.by_session.erase(session.id());
    }
}

std::shared_ptr<ToolPolicyEnforcer> tool_policy_enforcer(const Session& session) {
    auto& a = attachments();
    std::lock_guard lk(a.mu);
    if (a.by_session.empty()) return nullptr;
    auto it = a.by_session.find(session.id());
    if (it == a.by_session.end()) return nullptr;
    if (it->second.session.expired()) {
        a.by_session.erase(it);
        return nullptr;
    }
    return it->second.enforcer;
}

std::size_t tool_policy_count() {
    auto& a = attachments();
    std::lock_guard lk(a.mu);
    a.sweep();
    return a.by_session.size();
}

}  // namespace rath::tool
