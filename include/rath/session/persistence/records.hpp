#pragma once
// The persisted record schema (session.md §5.2, §5.6): header / chunk / trailer rows,
// their exact key order, the schema version and the migration registry.
#include <rath/backend/spec.hpp>
#include <rath/session.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rath::persistence {

inline constexpr int current_schema_version = 1;

struct PersistedSessionHeader {
    int schema_version = current_schema_version;  // as written in the file (before migration)
    std::string id;
    std::string created_at;  // ISO-8601 as written
    std::chrono::system_clock::time_point created_at_time;
    std::vector<std::string> parent_session_ids;
    std::string lineage_operator = "implicit";
    LineageKind lineage_kind = LineageKind::unknown;
    LineageExtras lineage_extras;
    std::optional<std::string> sandbox_backend;
    std::optional<backend::SandboxSpec> sandbox_spec;
    std::optional<std::string> sandbox_handle_id;
};

// Builders; key order is part of the format.
[[nodiscard]] boost::json::object make_header_record(const Session& s,
                                                     const std::optional<std::string>& sandbox_handle_id,
                                                     const std::string& created_at);
[[nodiscard]] boost::json::object make_chunk_record(std::size_t index, const ChunkRow& row);
[[nodiscard]] boost::json::object make_trailer_record(const std::string& closed_at, std::size_t final_chunk_count,
                                                      const std::optional<TokenUsage>& usage);
// One record as a line: Python json.dumps bytes (ensure_ascii=False, with U+2028,
// U+2029 and U+0085 escaped so no line reader splits inside a record) plus "\n".
[[nodiscard]] std::string record_line(const boost::json::object& record);

// null or {"image", "entrypoint", "env", "timeout_seconds", "working_dir"}.
[[nodiscard]] boost::json::value sandbox_spec_to_json(const std::optional<backend::SandboxSpec>& spec);
// Empty entrypoint/env become unset; missing keys unset. Throws PersistenceError
// naming the key on a wrongly typed value.
[[nodiscard]] backend::SandboxSpec sandbox_spec_from_json(const boost::json::object& o);

// Python datetime.isoformat() of a UTC instant: YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00.
[[nodiscard]] std::string iso_utc(std::chrono::system_clock::time_point t);
[[nodiscard]] std::string iso_utc_now();
// Parses datetime.fromisoformat() output (naive = UTC; "Z" and ±HH:MM offsets).
[[nodiscard]] std::optional<std::chrono::system_clock::time_point> parse_iso_datetime(std::string_view s);

// Migrations upgrade a record of schema version v to v+1, in memory only.
using RecordMigration = std::function<boost::json::object(boost::json::object)>;
// Throws SessionError("refusing to register migration from version <v> >=
// CURRENT_SCHEMA_VERSION=1") for v >= current.
void register_header_migration(int from_version, RecordMigration fn);
void register_chunk_migration(int from_version, RecordMigration fn);
// Upgrades a header from its declared version to the current one. Throws SessionError
// with the spec's message for a gap or a newer version.
[[nodiscard]] boost::json::object upgrade_header(boost::json::object header, int version);
// Applies registered chunk migrations from `version` up to current-1 (gaps skipped).
[[nodiscard]] boost::json::object upgrade_chunk(boost::json::object chunk, int version);

namespace testing {
// Test-only: forget every registered migration.
void clear_migrations();
}  // namespace testing

}  // namespace rath::persistence
