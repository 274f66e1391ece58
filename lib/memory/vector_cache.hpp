#pragma once
// Embedding vectors of a local store's documents, keyed by (model, SHA-256 of the body):
// `vectors.sqlite` at the store root. A key names the exact bytes that were embedded,
// so a body edited by any means (API, commit memo, out of band) simply misses and is
// embedded again; a stale vector can never be served. The cache is derived data: an
// unreadable or corrupt file is deleted and started afresh, and every failure of the
// cache is a miss (lookups) or a no-op (stores), never an error of the find.
//
// Thread safety: none; the caller serializes (the store's lane). SQLite's own file
// locking covers other processes.
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace rath::memory::detail {

class VectorCache {
public:
    explicit VectorCache(std::filesystem::path root);
    ~VectorCache();
    VectorCache(const VectorCache&) = delete;
    VectorCache& operator=(const VectorCache&) = delete;

    // The cached vectors among `shas` for `model` (hex SHA-256 -> vector).
    [[nodiscard]] std::unordered_map<std::string, std::vector<double>> lookup(const std::string& model,
                                                                             const std::vector<std::string>& shas);
    // Inserts or replaces each (sha, vector) for `model`.
    void store(const std::string& model, const std::vector<std::pair<std::string, std::vector<double>>>& entries);

private:
    struct Impl;
    std::filesystem::path path_;
    std::unique_ptr<Impl> impl_;
    bool open();
    void reset();
};

// Lower-case hex SHA-256 of `bytes`.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

}  // namespace rath::memory::detail
