#include <rath/backend/validate.hpp>

#include "lib/text/pyrepr.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace rath::backend {

namespace {

using rath::detail::pyrepr;

std::string number_text(double d) { return rath::detail::pyfloat_repr(d); }

std::optional<ToolExecutionFailure> no_nul(std::string_view what, std::string_view value) {
    if (value.find('\0') == std::string_view::npos) return std::nullopt;
    return invalid_argument(what, pyrepr(value) + " contains a NUL byte");
}

std::optional<ToolExecutionFailure> check_timeout(const std::optional<double>& t, const PayloadLimits& limits) {
    if (!t) return std::nullopt;
    double v = *t;
    if (!std::isfinite(v)) return invalid_argument("timeout", number_text(v) + " is not a finite number of seconds");
    if (v < 0) return invalid_argument("timeout", number_text(v) + " is negative");
    double cap = std::min(limits.max_timeout_seconds, max_representable_timeout_seconds);
    if (!(v <= cap))
        return invalid_argument("timeout",
                                number_text(v) + " seconds is over the limit of " + number_text(cap) + " seconds");
    return std::nullopt;
}

}  // namespace

ToolExecutionFailure invalid_argument(std::string_view what, std::string_view why) {
    return ToolExecutionFailure{"invalid_tool_arguments", "invalid " + std::string(what) + ": " + std::string(why),
                                std::string("ValueError")};
}

std::optional<ToolExecutionFailure> validate_payload(const Payload& p, const PayloadLimits& limits) {
    return std::visit(
        [&](const auto& x) -> std::optional<ToolExecutionFailure> {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, CommandRun>) {
                if (auto* s = std::get_if<std::string>(&x.cmd)) {
                    if (auto f = no_nul("cmd", *s)) return f;
                } else {
                    for (auto& a : std::get<std::vector<std::string>>(x.cmd))
                        if (auto f = no_nul("cmd", a)) return f;
                }
                if (x.env)
                    for (auto& [k, v] : *x.env) {
                        if (auto f = no_nul("env name", k)) return f;
                        if (k.empty() || k.find('=') != std::string::npos)
                            return invalid_argument("env name", pyrepr(k) + " is empty or contains '='");
                        if (auto f = no_nul("env value", v)) return f;
                    }
                if (x.cwd)
                    if (auto f = no_nul("cwd", *x.cwd)) return f;
                return check_timeout(x.timeout, limits);
            } else if constexpr (std::is_same_v<T, FilesRead>) {
                if (auto f = no_nul("path", x.path)) return f;
                if (x.encoding)
                    if (auto f = no_nul("encoding", *x.encoding)) return f;
                return std::nullopt;
            } else if constexpr (std::is_same_v<T, FilesWrite>) {
                if (auto f = no_nul("path", x.path)) return f;
                if (x.mode < 0 || x.mode > 07777)
                    return invalid_argument("mode", std::to_string(x.mode) + " is not a permission mode (0 to 0o7777)");
                return std::nullopt;
            } else if constexpr (std::is_same_v<T, FilesList> || std::is_same_v<T, FilesExists>) {
                return no_nul("path", x.path);
            } else {
                static_assert(std::is_same_v<T, CodeRun>);
                if (auto f = no_nul("language", x.language)) return f;
                return check_timeout(x.timeout, limits);
            }
        },
        p);
}

}  // namespace rath::backend
