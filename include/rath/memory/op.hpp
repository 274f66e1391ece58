#pragma once
// Memory operations (memory_flow.md §1.3, §8.2): immutable values compared by their
// fields, carried in one closed variant. A backend dispatches on the alternative; the
// Python type name of each (`MemoryOpFind`, ...) survives for messages.
//
// Thread safety: plain values. Nothing here throws except std::bad_alloc.
#include <boost/json/object.hpp>

#include <bitset>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rath::memory {

enum class ReadLevel { abstract, overview, detail };
[[nodiscard]] std::string_view to_string(ReadLevel level) noexcept;

struct OpWrite {
    std::string uri;
    std::string content;
    std::string mode = "replace";  // "replace" or "write"; anything else is unsupported
    bool wait = false;
    std::optional<double> timeout_seconds{};
    std::optional<std::map<std::string, std::string>> metadata{};
    bool operator==(const OpWrite&) const = default;
};

struct OpRead {
    std::string uri;
    ReadLevel level = ReadLevel::detail;
    std::optional<std::string> encoding = std::string("utf-8");  // nullopt: the raw bytes
    bool operator==(const OpRead&) const = default;
};

struct OpList {
    std::string uri;
    bool operator==(const OpList&) const = default;
};

struct OpTree {
    std::string uri;
    int depth = 2;
    bool operator==(const OpTree&) const = default;
};

struct OpFind {
    std::string query;
    std::optional<std::string> target_uri{};
    int top_k = 8;
    bool operator==(const OpFind&) const = default;
};

struct OpSearch {
    std::string query;
    std::optional<std::string> session_id{};
    std::optional<std::string> target_uri{};
    int top_k = 8;
    bool operator==(const OpSearch&) const = default;
};

struct OpResource {
    std::string source;
    std::optional<std::string> target_uri{};
    std::string reason{};
    std::string instruction{};
    bool wait = true;
    std::optional<double> timeout_seconds{};
    bool operator==(const OpResource&) const = default;
};

struct OpCommit {
    std::string session_id;
    // Each {"role", "content"} or {"role", "parts": [...]}.
    std::vector<boost::json::object> messages{};
    std::vector<std::string> used_uris{};
    bool wait = false;
    std::optional<double> timeout_seconds{};
    bool operator==(const OpCommit&) const = default;
};

using MemoryOp = std::variant<OpWrite, OpRead, OpList, OpTree, OpFind, OpSearch, OpResource, OpCommit>;

// A set of op alternatives, indexed by their variant index.
using OpSet = std::bitset<std::variant_size_v<MemoryOp>>;

template <class Op>
[[nodiscard]] constexpr std::size_t op_index() noexcept {
    return MemoryOp(Op{}).index();
}
[[nodiscard]] OpSet all_ops() noexcept;

// "MemoryOpWrite", "MemoryOpRead", ... (the Python class names).
[[nodiscard]] std::string_view op_type_name(const MemoryOp& op) noexcept;
[[nodiscard]] std::string_view op_type_name(std::size_t index) noexcept;

}  // namespace rath::memory
