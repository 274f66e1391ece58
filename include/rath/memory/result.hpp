#pragma once
// Results of memory operations (memory_flow.md §1.4, §8.2). A data-plane problem (a bad
// URI, a missing entry, an I/O error) comes back as an ExecutionFailure value, never
// as an exception.
//
// Thread safety: plain values. Throws: parse_failure_kind throws std::invalid_argument
// for an unknown kind; nothing else throws except std::bad_alloc.
#include <rath/memory/op.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rath::memory {

enum class FailureKind {
    not_found,
    unsupported,
    transport,
    extraction_failed,
    store_closed,
    unauthorized,
    timeout,
    invalid_uri,
    internal,
};
// The wire string ("not_found", ...).
[[nodiscard]] std::string_view to_string(FailureKind kind) noexcept;
[[nodiscard]] std::optional<FailureKind> try_parse_failure_kind(std::string_view s) noexcept;
// Throws std::invalid_argument("MemoryExecutionFailure.kind='bogus' not in [...]").
[[nodiscard]] FailureKind parse_failure_kind(std::string_view s);

struct MemoryHit {
    std::string uri;
    double score = 0.0;
    std::optional<std::string> snippet{};
    std::optional<ReadLevel> level{};
    bool operator==(const MemoryHit&) const = default;
};

struct MemoryEntry {
    std::string name;
    std::string uri;
    bool is_dir = false;
    std::optional<std::uint64_t> size{};
    bool operator==(const MemoryEntry&) const = default;
};

struct FindResult {
    std::vector<MemoryHit> hits;
    bool operator==(const FindResult&) const = default;
};

struct ReadResult {
    std::string uri;
    std::variant<std::string, std::vector<std::byte>> data;
    ReadLevel level = ReadLevel::detail;
    bool operator==(const ReadResult&) const = default;
};

struct ListResult {
    std::vector<MemoryEntry> entries;
    bool operator==(const ListResult&) const = default;
};

struct WriteResult {
    std::string uri;
    std::uint64_t bytes_written = 0;
    bool operator==(const WriteResult&) const = default;
};

struct CommitResult {
    std::optional<std::string> task_id{};
    std::optional<std::string> archived_uri{};
    std::int64_t extracted_count = -1;  // -1: unknown or not attempted
    bool operator==(const CommitResult&) const = default;
};

struct ExecutionFailure {
    FailureKind kind = FailureKind::internal;
    std::string message;
    std::optional<std::string> detail{};
    bool operator==(const ExecutionFailure&) const = default;
};

using MemoryResult = std::variant<FindResult, ReadResult, ListResult, WriteResult, CommitResult, ExecutionFailure>;

[[nodiscard]] inline bool is_failure(const MemoryResult& r) noexcept {
    return std::holds_alternative<ExecutionFailure>(r);
}

}  // namespace rath::memory
