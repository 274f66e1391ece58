#pragma once
// Validation of a payload before any backend acts on it: the one place where text and
// numbers that may come from a model are checked. A NUL byte in a path, a command, an
// argv element, an environment entry, a cwd, an encoding or a language name would be
// cut short by the OS (C strings), so "a.txt\0.sh" or "data/..\0" are refused here
// instead of meaning something else at the syscall; a timeout must be a finite,
// non-negative number of seconds no larger than the operator's maximum; a file mode
// must fit in 07777. Data bytes (file contents, stdin, code) may hold anything.
//
// Thread safety: pure functions. Errors: nothing is thrown; a refusal is the failure
// value `invalid_tool_arguments` (detail "ValueError") that the tool-result row shows.
#include <rath/backend/payload.hpp>
#include <rath/backend/result.hpp>

#include <optional>
#include <string_view>

namespace rath::backend {

// Upper bounds the operator sets and a payload cannot raise.
struct PayloadLimits {
    double max_timeout_seconds = 3600.0;
};

// Timeouts above this are refused whatever the operator allows: any smaller value
// converts to a steady_clock duration (nanoseconds in 64 bits) without overflow.
inline constexpr double max_representable_timeout_seconds = 1e9;

// nullopt when the payload may be dispatched, else the failure to return instead.
[[nodiscard]] std::optional<ToolExecutionFailure> validate_payload(const Payload& p, const PayloadLimits& limits = {});

// The failure for one bad argument (`what` names it: "path", "timeout", ...).
[[nodiscard]] ToolExecutionFailure invalid_argument(std::string_view what, std::string_view why);

}  // namespace rath::backend
