#include "lib/memory/vector_cache.hpp"

#include <rath/log.hpp>

#include <openssl/sha.h>
#include <sqlite3.h>

#include <cstring>

namespace rath::memory::detail {

struct VectorCache::Impl {
    sqlite3* db = nullptr;
    ~Impl() {
        if (db) sqlite3_close_v2(db);
    }
};

namespace {

class Stmt {
public:
    Stmt(sqlite3* db, const char* sql) {
        if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK) st_ = nullptr;
    }
    ~Stmt() { sqlite3_finalize(st_); }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;
    explicit operator bool() const noexcept { return st_ != nullptr; }
    sqlite3_stmt* get() const noexcept { return st_; }

private:
    sqlite3_stmt* st_ = nullptr;
};

}  // namespace

VectorCache::VectorCache(std::filesystem::path root) : path_(std::move(root) / "vectors.sqlite") {}
VectorCache::~VectorCache() = default;

bool VectorCache::open() {
    if (impl_) return true;
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto impl = std::make_unique<Impl>();
        int rc = sqlite3_open_v2(path_.c_str(), &impl->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
        if (rc == SQLITE_OK) {
            sqlite3_busy_timeout(impl->db, 10'000);
            rc = sqlite3_exec(impl->db,
                              "CREATE TABLE IF NOT EXISTS vec(model TEXT NOT NULL, sha TEXT NOT NULL, "
                              "v BLOB NOT NULL, PRIMARY KEY(model, sha)) WITHOUT ROWID",
                              nullptr, nullptr, nullptr);
        }
        if (rc == SQLITE_OK) {
            impl_ = std::move(impl);
            return true;
        }
        rath::log(LogLevel::info, "rath.memory",
                  std::string("vectors.sqlite is unusable (") + sqlite3_errstr(rc) + "); starting it afresh");
        impl.reset();
        std::error_code ec;
        std::filesystem::remove(path_, ec);
    }
    return false;
}

void VectorCache::reset() {
    impl_.reset();
    std::error_code ec;
    std::filesystem::remove(path_, ec);
}

std::unordered_map<std::string, std::vector<double>> VectorCache::lookup(const std::string& model,
                                                                        const std::vector<std::string>& shas) {
    std::unordered_map<std::string, std::vector<double>> out;
    if (shas.empty() || !open()) return out;
    Stmt st(impl_->db, "SELECT v FROM vec WHERE model = ?1 AND sha = ?2");
    if (!st) {
        reset();
        return out;
    }
    sqlite3_bind_text(st.get(), 1, model.data(), static_cast<int>(model.size()), SQLITE_STATIC);
    for (const auto& sha : shas) {
        sqlite3_bind_text(st.get(), 2, sha.data(), static_cast<int>(sha.size()), SQLITE_STATIC);
        int rc = sqlite3_step(st.get());
        if (rc == SQLITE_ROW) {
            const void* blob = sqlite3_column_blob(st.get(), 0);
            auto n = static_cast<std::size_t>(sqlite3_column_bytes(st.get(), 0));
            if (n % sizeof(double) == 0) {
                std::vector<double> v(n / sizeof(double));
                if (n) std::memcpy(v.data(), blob, n);
                out.emplace(sha, std::move(v));
            }
        } else if (rc != SQLITE_DONE) {
            // A corrupt cache: what was read so far stays valid (each row is whole).
            rath::log(LogLevel::info, "rath.memory",
                      std::string("vectors.sqlite failed (") + sqlite3_errmsg(impl_->db) + "); starting it afresh");
            reset();
            return out;
        }
        sqlite3_reset(st.get());
    }
    return out;
}

void VectorCache::store(const std::string& model,
                        const std::vector<std::pair<std::string, std::vector<double>>>& entries) {
    if (entries.empty() || !open()) return;
    bool ok = sqlite3_exec(impl_->db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
    {
        Stmt st(impl_->db, "INSERT OR REPLACE INTO vec(model, sha, v) VALUES(?1, ?2, ?3)");
        ok = ok && st;
        if (ok) sqlite3_bind_text(st.get(), 1, model.data(), static_cast<int>(model.size()), SQLITE_STATIC);
        for (const auto& [sha, v] : entries) {
            if (!ok) break;
            sqlite3_bind_text(st.get(), 2, sha.data(), static_cast<int>(sha.size()), SQLITE_STATIC);
            sqlite3_bind_blob(st.get(), 3, v.data(), static_cast<int>(v.size() * sizeof(double)), SQLITE_STATIC);
            ok = sqlite3_step(st.get()) == SQLITE_DONE;
            sqlite3_reset(st.get());
        }
    }
    if (ok && sqlite3_exec(impl_->db, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK) return;
    rath::log(LogLevel::info, "rath.memory",
              std::string("vectors.sqlite failed (") + sqlite3_errmsg(impl_->db) + "); starting it afresh");
    sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
    reset();
}

std::string sha256_hex(std::string_view bytes) {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * SHA256_DIGEST_LENGTH);
    for (unsigned char c : md) {
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
    }
    return out;
}

}  // namespace rath::memory::detail
