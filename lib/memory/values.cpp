// The small value types of the memory plane: op names, failure kinds, scope models.
#include <rath/memory/capabilities.hpp>
#include <rath/memory/op.hpp>
#include <rath/memory/result.hpp>

#include <array>
#include <stdexcept>

namespace rath::memory {

std::string_view to_string(ReadLevel level) noexcept {
    switch (level) {
        case ReadLevel::abstract: return "abstract";
        case ReadLevel::overview: return "overview";
        case ReadLevel::detail: return "detail";
    }
    return "detail";
}

OpSet all_ops() noexcept { return OpSet{}.set(); }

std::string_view op_type_name(std::size_t index) noexcept {
    static constexpr std::array<std::string_view, std::variant_size_v<MemoryOp>> names{
        "MemoryOpWrite", "MemoryOpRead",   "MemoryOpList",     "MemoryOpTree",
        "MemoryOpFind",  "MemoryOpSearch", "MemoryOpResource", "MemoryOpCommit"};
    return index < names.size() ? names[index] : std::string_view("MemoryOp");
}

std::string_view op_type_name(const MemoryOp& op) noexcept { return op_type_name(op.index()); }

namespace {
// Declaration order of FailureKind; the error message lists them sorted, as Python does.
constexpr std::array<std::string_view, 9> kind_names{"not_found",    "unsupported",  "transport",
                                                     "extraction_failed", "store_closed", "unauthorized",
                                                     "timeout",      "invalid_uri",  "internal"};
}  // namespace

std::string_view to_string(FailureKind kind) noexcept { return kind_names[static_cast<std::size_t>(kind)]; }

std::optional<FailureKind> try_parse_failure_kind(std::string_view s) noexcept {
    for (std::size_t i = 0; i < kind_names.size(); ++i)
        if (kind_names[i] == s) return static_cast<FailureKind>(i);
    return std::nullopt;
}

FailureKind parse_failure_kind(std::string_view s) {
    if (auto k = try_parse_failure_kind(s)) return *k;
    std::string msg = "MemoryExecutionFailure.kind='" + std::string(s) +
                      "' not in ['extraction_failed', 'internal', 'invalid_uri', 'not_found', 'store_closed', "
                      "'timeout', 'transport', 'unauthorized', 'unsupported']";
    throw std::invalid_argument(msg);
}

std::string_view to_string(ScopeModel m) noexcept {
    switch (m) {
        case ScopeModel::kv: return "kv";
        case ScopeModel::fs: return "fs";
        case ScopeModel::vector: return "vector";
        case ScopeModel::hybrid: return "hybrid";
    }
    return "hybrid";
}

}  // namespace rath::memory
