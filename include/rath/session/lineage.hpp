#pragma once
// Lineage fields every session carries (session.md §1.5, §4.1): ordered parent ids,
// the operator that produced it, its kind, and free-form extras. Edges of the
// lineage graph are implied by the parent ids.
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath {

enum class LineageKind {
    unknown,
    leaf_user,
    leaf_system,
    op_create,
    op_session_loop,
    op_fork,
    op_detach,
    op_merge,
    op_session_compress,
};

// The wire value ("unknown", "leaf_user", ..., "op_session_compress").
[[nodiscard]] std::string_view to_string(LineageKind kind) noexcept;
[[nodiscard]] std::optional<LineageKind> lineage_kind_from_string(std::string_view s) noexcept;

using LineageExtra = std::pair<std::string, boost::json::value>;
using LineageExtras = std::vector<LineageExtra>;

struct Lineage {
    std::vector<std::string> parent_session_ids{};
    std::string op = "implicit";  // lineage_operator
    LineageKind kind = LineageKind::unknown;
    LineageExtras extras{};

    bool operator==(const Lineage&) const = default;
};

// Legacy provenance DTO (session.md §4.5): set on loop and compress outputs whatever
// the graph mode; never persisted or exported.
struct SessionLineage {
    std::string producer_user_session_id{};
    std::string producer_system_session_id{};
    std::string op = "run_session_loop";

    bool operator==(const SessionLineage&) const = default;
};

}  // namespace rath
