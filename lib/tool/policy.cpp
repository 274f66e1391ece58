#include <rath/session.hpp>
#include <rath/tool/error.hpp>
#include <rath/tool/policy.hpp>

#include "lib/text/pyrepr.hpp"
#include "lib/text/pystr.hpp"

#include <algorithm>
#include <map>

namespace rath::tool {

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

// shlex.split (POSIX mode); nullopt on unbalanced quotes or a trailing escape.
std::optional<std::vector<std::string>> shell_split(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    bool in_token = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == '\'') {
            in_token = true;
            auto e = s.find('\'', i + 1);
            if (e == std::string::npos) return std::nullopt;
            cur += s.substr(i + 1, e - i - 1);
            i = e;
        } else if (c == '"') {
            in_token = true;
            std::size_t k = i + 1;
            for (; k < s.size() && s[k] != '"'; ++k) {
                if (s[k] == '\\' && k + 1 < s.size() && (s[k + 1] == '"' || s[k + 1] == '\\' || s[k + 1] == '$' || s[k + 1] == '`'))
                    ++k;
                cur += s[k];
            }
            if (k >= s.size()) return std::nullopt;
            i = k;
        } else if (c == '\\') {
            if (i + 1 >= s.size()) return std::nullopt;
            in_token = true;
            cur += s[++i];
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (in_token) out.push_back(std::move(cur));
            cur.clear();
            in_token = false;
        } else {
            in_token = true;
            cur += c;
        }
    }
    if (in_token) out.push_back(std::move(cur));
    return out;
}

struct Attachments {
    std::mutex mu;
    std::map<std::string, std::shared_ptr<ToolPolicyEnforcer>> by_session;
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

std::optional<std::string> ToolPolicyEnforcer::check(const std::string& tool_name, const boost::json::object& args) {
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
        if (auto it = args.find("cmd"); it != args.end()) {
            std::optional<std::string> tok;
            if (it->value().is_string()) {
                auto parts = shell_split(std::string(it->value().get_string()));
                if (!parts) return "command " + pyrepr(std::string(it->value().get_string())) + " could not be parsed";
                if (!parts->empty()) tok = parts->front();
            } else if (it->value().is_array() && !it->value().get_array().empty()) {
                tok = rath::detail::py_str(it->value().get_array().front());
            }
            std::string t = tok.value_or("");
            if (!p.command_deny.empty() && std::find(p.command_deny.begin(), p.command_deny.end(), t) != p.command_deny.end())
                return "command " + pyrepr(t) + " is denied by policy";
            if (!p.command_allow.empty() &&
                std::find(p.command_allow.begin(), p.command_allow.end(), t) == p.command_allow.end())
                return "command " + pyrepr(t) + " is not in this session's allowlist";
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
    if (enforcer)
        a.by_session[session.id()] = std::move(enforcer);
    else
        a.by_session.erase(session.id());
}

std::shared_ptr<ToolPolicyEnforcer> tool_policy_enforcer(const Session& session) {
    auto& a = attachments();
    std::lock_guard lk(a.mu);
    auto it = a.by_session.find(session.id());
    return it == a.by_session.end() ? nullptr : it->second;
}

}  // namespace rath::tool
