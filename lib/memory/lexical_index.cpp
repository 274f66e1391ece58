#include "lib/memory/lexical_index.hpp"

#include <rath/log.hpp>
#include <rath/memory/error.hpp>

#include <boost/unordered/unordered_flat_map.hpp>
#include <sqlite3.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "lib/text/utf8.hpp"

namespace fs = std::filesystem;

namespace rath::memory::detail {
namespace {

// 2: FTS5 without positions (detail=none) holding each document's distinct terms once,
// and the term counts kept in the doc table (a "term:count term:count" column), which
// is what the in-memory mirror loads; version 1 indexes are rebuilt from the files.
constexpr int schema_version = 2;
constexpr const char* index_file_name = "index.sqlite";

// --- the FTS5 tokenizer: ASCII alnum runs, lower-cased (the spec's tokens) ---------

int tok_create(void*, const char**, int, Fts5Tokenizer** out) {
    static int token_state = 0;
    *out = reinterpret_cast<Fts5Tokenizer*>(&token_state);
    return SQLITE_OK;
}
void tok_delete(Fts5Tokenizer*) {}
// The index stores lower-case terms, so a run is almost always handed to FTS5 in place;
// only a run with upper-case letters (text inserted by hand) is copied to lower it.
int tok_tokenize(Fts5Tokenizer*, void* ctx, int, const char* text, int n,
                 int (*emit)(void*, int, const char*, int, int, int)) {
    std::string lowered;
    int i = 0;
    while (i < n) {
        while (i < n && !is_ascii_alnum(static_cast<unsigned char>(text[i]))) ++i;
        int start = i;
        bool upper = false;
        while (i < n && is_ascii_alnum(static_cast<unsigned char>(text[i]))) {
            upper = upper || (text[i] >= 'A' && text[i] <= 'Z');
            ++i;
        }
        if (i == start) break;
        const char* tok = text + start;
        if (upper) {
            lowered.assign(tok, static_cast<std::size_t>(i - start));
            for (char& c : lowered)
                if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
            tok = lowered.data();
        }
        int rc = emit(ctx, 0, tok, i - start, start, i);
        if (rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
}

class SqliteError : public std::runtime_error {
public:
    SqliteError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
    int code() const noexcept { return code_; }

private:
    int code_;
};

void check(sqlite3* db, int rc, const char* what) {
    if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
    throw SqliteError(rc, std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

class Stmt {
public:
    Stmt(sqlite3* db, const char* sql) : db_(db) { check(db, sqlite3_prepare_v2(db, sql, -1, &st_, nullptr), sql); }
    ~Stmt() { sqlite3_finalize(st_); }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;
    sqlite3_stmt* get() const noexcept { return st_; }
    bool step() {
        int rc = sqlite3_step(st_);
        check(db_, rc, "sqlite3_step");
        return rc == SQLITE_ROW;
    }
    void reset() {
        sqlite3_reset(st_);
        sqlite3_clear_bindings(st_);
    }
    void bind(int i, std::int64_t v) { check(db_, sqlite3_bind_int64(st_, i, v), "bind"); }
    void bind(int i, std::string_view s) {
        check(db_, sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT), "bind");
    }

private:
    sqlite3* db_;
    sqlite3_stmt* st_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        throw SqliteError(rc, std::string(sql) + ": " + msg);
    }
}

struct FileStamp {
    bool exists = false;
    std::uint64_t ino = 0;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const fs::path& p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return {};
    return {true, static_cast<std::uint64_t>(st.st_ino), static_cast<std::int64_t>(st.st_size),
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// Lookups by string_view without building a std::string.
struct TermHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

bool valid_utf8(std::string_view s) noexcept { return rath::detail::utf8_valid_prefix(s) == s.size(); }

// A document's analysis: its length in terms (every term, as the spec counts it), its
// distinct indexed terms (as term ids) with their counts, and the text FTS5 stores
// (the indexed terms, space-separated). Tokens are counted as they are produced,
// never listed.
struct Analysis {
    std::uint32_t len = 0;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> tf;  // (term id, count)
    std::string joined;  // the distinct terms, space-separated (what FTS5 gets)
    std::string counts;  // "term:count term:count" (the doc table's tf column)
};

}  // namespace

struct LexicalIndex::Impl {
    struct Doc {
        std::string rel;
        std::int64_t size = 0;
        std::int64_t mtime_ns = 0;
        std::uint32_t len = 0;
        std::uint32_t terms = 0;  // distinct terms: its postings in the lists
        bool utf8 = true;
        bool live = false;
    };
    struct Post {
        std::uint32_t slot;
        std::uint32_t tf;
        std::uint32_t gen;
    };

    fs::path path;
    Bm25Params params;
    sqlite3* db = nullptr;
    FileStamp stamp;  // of index.sqlite after our last look at it
    std::vector<Doc> docs;  // slot = rowid - 1
    std::unordered_map<std::string, std::uint32_t> slot_of;
    // Looked up once per token while indexing: an open-addressing table keeps that to
    // about one cache miss (a node-based map cost three, and most of the index time).
    boost::unordered_flat_map<std::string, std::uint32_t, TermHash, std::equal_to<>> term_id;
    std::vector<std::vector<Post>> postings;
    std::size_t live = 0;
    // Postings left behind by re-indexed or dropped documents, and all postings.
    std::size_t stale = 0, total_postings = 0;

    // Drops stale postings once they are the majority (edits would grow memory forever).
    void compact_if_needed() {
        if (stale < 65536 || stale * 2 < total_postings) return;
        total_postings = 0;
        for (auto& list : postings) {
            std::erase_if(list, [&](const Post& p) { return p.slot >= gens.size() || gens[p.slot] != p.gen || !docs[p.slot].live; });
            total_postings += list.size();
        }
        stale = 0;
    }
    // The last walk reconciled, and its walk position -> slot map.
    std::string reconciled_key;
    std::vector<std::int64_t> reconciled_slots;
    // Per slot: the generation of its current postings (older postings are stale).
    std::vector<std::uint32_t> gens;
    // For the reconciled walk: slot -> walk position (-1 out of scope), and N, avgdl.
    std::vector<std::int32_t> pos_of;
    std::size_t n_scoped = 0;
    double total_len = 0;

    ~Impl() { close(); }

    void close() {
        if (db) sqlite3_close_v2(db);
        db = nullptr;
    }

    void clear_mirror() {
        ++epoch;
        reconciled_key.clear();
        reconciled_slots.clear();
        stale = total_postings = 0;
        gens.clear();
        pos_of.clear();
        docs.clear();
        slot_of.clear();
        term_id.clear();
        postings.clear();
        counting.clear();
        live = 0;
    }

    void open_db() {
        close();
        int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
        if (rc != SQLITE_OK) {
            std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
            close();
            throw SqliteError(rc, "cannot open " + path.string() + ": " + msg);
        }
        sqlite3_busy_timeout(db, 10'000);
        // Derived data: a crash loses nothing the files do not hold, so no fsync.
        exec(db, "PRAGMA synchronous=OFF");
        exec(db, "PRAGMA cache_size=-32768");
        fts5_api* api = nullptr;
        {
            Stmt st(db, "SELECT fts5(?1)");
            check(db, sqlite3_bind_pointer(st.get(), 1, static_cast<void*>(&api), "fts5_api_ptr", nullptr), "bind");
            st.step();
        }
        if (!api) throw SqliteError(SQLITE_ERROR, "SQLite was built without FTS5");
        fts5_tokenizer tok{tok_create, tok_delete, tok_tokenize};
        check(db, api->xCreateTokenizer(api, "rath_ascii", nullptr, &tok, nullptr), "xCreateTokenizer");
        exec(db,
             "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
             "CREATE TABLE IF NOT EXISTS doc(id INTEGER PRIMARY KEY, rel TEXT NOT NULL UNIQUE, size INTEGER NOT NULL,"
             " mtime_ns INTEGER NOT NULL, len INTEGER NOT NULL, utf8 INTEGER NOT NULL, tf TEXT NOT NULL);"
             "CREATE VIRTUAL TABLE IF NOT EXISTS terms USING fts5(t, tokenize='rath_ascii', detail=none, columnsize=0);");
    }

    // Loads the mirror from the database; false when the database was made for other
    // analysis settings (then it must be rebuilt).
    bool load() {
        clear_mirror();
        std::string want_analyzer(to_string(params.analyzer));
        {
            Stmt st(db, "SELECT key, value FROM meta");
            std::string version, analyzer;
            bool any = false;
            while (st.step()) {
                any = true;
                std::string k = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
                std::string v = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 1));
                if (k == "schema_version") version = v;
                if (k == "analyzer") analyzer = v;
            }
            if (!any) {
                exec(db, "BEGIN IMMEDIATE");
                Stmt ins(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)");
                ins.bind(1, std::string_view("schema_version"));
                ins.bind(2, std::to_string(schema_version));
                ins.step();
                ins.reset();
                ins.bind(1, std::string_view("analyzer"));
                ins.bind(2, want_analyzer);
                ins.step();
                exec(db, "COMMIT");
                return true;
            }
            if (version != std::to_string(schema_version) || analyzer != want_analyzer) return false;
        }
        {
            Stmt st(db, "SELECT id, rel, size, mtime_ns, len, utf8, tf FROM doc");
            while (st.step()) {
                auto id = sqlite3_column_int64(st.get(), 0);
                if (id <= 0) return false;
                auto slot = static_cast<std::size_t>(id - 1);
                if (slot >= docs.size()) {
                    docs.resize(slot + 1);
                    gens.resize(slot + 1, 0);
                }
                Doc& d = docs[slot];
                d.rel = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 1));
                d.size = sqlite3_column_int64(st.get(), 2);
                d.mtime_ns = sqlite3_column_int64(st.get(), 3);
                d.len = static_cast<std::uint32_t>(sqlite3_column_int64(st.get(), 4));
                d.utf8 = sqlite3_column_int64(st.get(), 5) != 0;
                d.live = true;
                slot_of[d.rel] = static_cast<std::uint32_t>(slot);
                ++live;
                const char* t = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 6));
                std::string_view tf(t ? t : "", static_cast<std::size_t>(sqlite3_column_bytes(st.get(), 6)));
                while (!tf.empty()) {
                    auto sp = tf.find(' ');
                    std::string_view entry = tf.substr(0, sp);
                    tf = sp == std::string_view::npos ? std::string_view() : tf.substr(sp + 1);
                    auto colon = entry.rfind(':');
                    if (colon == std::string_view::npos || colon == 0) return false;
                    std::uint32_t n = 0;
                    for (char c : entry.substr(colon + 1)) {
                        if (c < '0' || c > '9') return false;
                        n = n * 10 + static_cast<std::uint32_t>(c - '0');
                    }
                    if (n == 0) return false;
                    postings[intern(entry.substr(0, colon))].push_back({static_cast<std::uint32_t>(slot), n, 0});
                    ++d.terms;
                    ++total_postings;
                }
            }
        }
        return true;
    }

    // Bumped whenever the mirror or the reconciled scope changes (LexicalIndex's term
    // cache is only good for one epoch).
    std::uint64_t epoch = 1;

    // Per term id: its count in the document being analyzed (zero between documents).
    std::vector<std::uint32_t> counting;

    Analysis analyze_doc(std::string_view body, AnalyzerKind kind) {
        Analysis a;
        std::vector<std::uint32_t> touched;
        auto add = [&](std::string_view term) {
            ++a.len;
            if (term.size() > max_term_bytes) return;
            std::uint32_t tid = intern(term);
            if (tid >= counting.size()) counting.resize(postings.size(), 0);
            if (counting[tid]++ == 0) {
                touched.push_back(tid);
                if (!a.joined.empty()) a.joined.push_back(' ');
                a.joined.append(term);
            }
        };
        for_each_ascii_token(body, [&](const std::string& tok) {
            if (kind == AnalyzerKind::spec) add(tok);
            else if (!is_stopword(tok)) add(porter_stem(tok));
        });
        a.tf.reserve(touched.size());
        a.counts.reserve(a.joined.size() + 3 * touched.size());
        std::string_view terms = a.joined;
        char digits[16];
        for (std::uint32_t tid : touched) {
            auto sp = terms.find(' ');
            if (!a.counts.empty()) a.counts.push_back(' ');
            a.counts.append(terms.substr(0, sp));
            a.counts.push_back(':');
            auto [end, ec] = std::to_chars(digits, digits + sizeof digits, counting[tid]);
            a.counts.append(digits, end);
            terms = sp == std::string_view::npos ? std::string_view() : terms.substr(sp + 1);
            a.tf.emplace_back(tid, counting[tid]);
            counting[tid] = 0;
        }
        return a;
    }

    std::uint32_t intern(std::string_view t) {
        if (auto it = term_id.find(t); it != term_id.end()) return it->second;
        auto id = static_cast<std::uint32_t>(postings.size());
        term_id.emplace(std::string(t), id);
        postings.emplace_back();
        return id;
    }

    void remove_files() {
        close();
        std::error_code ec;
        for (const char* suffix : {"", "-journal", "-wal", "-shm"}) fs::remove(fs::path(path.string() + suffix), ec);
    }

    // Opens and loads the index, rebuilding it from nothing when it is unusable.
    void ensure(std::uint64_t& rebuilds) {
        FileStamp now = stamp_of(path);
        if (db && now.exists && now == stamp) return;
        reconciled_key.clear();
        try {
            if (!db || !now.exists || now.ino != stamp.ino) open_db();
            if (load()) {
                stamp = stamp_of(path);
                return;
            }
            rath::log(LogLevel::info, "rath.memory", "index.sqlite was built with other settings; rebuilding it");
        } catch (const SqliteError& e) {
            rath::log(LogLevel::warning, "rath.memory",
                      std::string("index.sqlite is unusable (") + e.what() + "); rebuilding it from the files");
        }
        ++rebuilds;
        remove_files();
        open_db();
        if (!load()) throw SqliteError(SQLITE_ERROR, "fresh index.sqlite rejected");
        stamp = stamp_of(path);
    }
};

LexicalIndex::LexicalIndex(fs::path root, Bm25Params params)
    : root_(std::move(root)), params_(params), impl_(std::make_unique<Impl>()) {
    impl_->path = root_ / index_file_name;
    impl_->params = params_;
}

LexicalIndex::~LexicalIndex() = default;

namespace {

// The whole file, read with one fstat and as few reads as its size allows; nullopt when
// it cannot be opened (vanished since the walk).
std::optional<std::string> read_file(const fs::path& p) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string body;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) body.reserve(static_cast<std::size_t>(st.st_size));
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        body.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return body;
}


}  // namespace

// The statements of one write transaction on the index.
struct LexicalIndex::Txn {
    explicit Txn(Impl& x) : x(x) {}
    ~Txn() {
        // Statements go before a rollback or a commit can run on a clean connection.
        del_terms.reset();
        up_doc.reset();
        del_doc.reset();
    }
    Impl& x;
    bool open = false;
    std::unique_ptr<Stmt> del_terms, up_doc, del_doc;
    // FTS5 flushes its pending terms at every statement of a transaction, so rows go
    // in by the batch (one statement per batch), not one by one.
    std::vector<std::pair<std::int64_t, std::string>> pending;

    void begin() {
        if (open) return;
        exec(x.db, "BEGIN IMMEDIATE");
        open = true;
        del_terms = std::make_unique<Stmt>(x.db, "DELETE FROM terms WHERE rowid = ?1");
        up_doc = std::make_unique<Stmt>(
            x.db, "INSERT OR REPLACE INTO doc(id, rel, size, mtime_ns, len, utf8, tf) VALUES (?1,?2,?3,?4,?5,?6,?7)");
    }
    void flush_terms() {
        constexpr std::size_t batch = 512;
        for (std::size_t at = 0; at < pending.size(); at += batch) {
            std::size_t n = std::min(batch, pending.size() - at);
            std::string sql = "INSERT INTO terms(rowid, t) VALUES ";
            for (std::size_t i = 0; i < n; ++i) sql += i ? ",(?,?)" : "(?,?)";
            Stmt ins(x.db, sql.c_str());
            for (std::size_t i = 0; i < n; ++i) {
                ins.bind(static_cast<int>(2 * i + 1), pending[at + i].first);
                ins.bind(static_cast<int>(2 * i + 2), pending[at + i].second);
            }
            ins.step();
        }
        pending.clear();
    }
    void commit() {
        if (!open) return;
        flush_terms();
        del_terms.reset();
        up_doc.reset();
        del_doc.reset();
        exec(x.db, "COMMIT");
        open = false;
        x.stamp = stamp_of(x.path);
    }
};

std::uint32_t LexicalIndex::index_doc(Txn& txn, const std::string& rel, std::int64_t size, std::int64_t mtime_ns,
                                      std::optional<std::string_view> body) {
    Impl& x = *impl_;
    auto it = x.slot_of.find(rel);
    std::uint32_t slot;
    bool fresh = it == x.slot_of.end();
    if (!fresh) {
        slot = it->second;
    } else {
        slot = static_cast<std::uint32_t>(x.docs.size());
        x.docs.emplace_back();
        x.gens.push_back(0);
        x.slot_of.emplace(rel, slot);
    }
    // Too large, or not UTF-8: recorded (so it is not read again until it changes) but
    // out of every scope.
    bool indexable = body && size <= params_.max_document_bytes && valid_utf8(*body);
    Analysis a;
    if (indexable) a = x.analyze_doc(*body, params_.analyzer);
    Impl::Doc& d = x.docs[slot];
    txn.begin();
    auto rowid = static_cast<std::int64_t>(slot) + 1;
    if (!fresh || d.live) {
        // Its old row must be gone before the batch adds the new one.
        txn.flush_terms();
        txn.del_terms->bind(1, rowid);
        txn.del_terms->step();
        txn.del_terms->reset();
    }
    txn.pending.emplace_back(rowid, std::move(a.joined));
    txn.up_doc->bind(1, rowid);
    txn.up_doc->bind(2, rel);
    txn.up_doc->bind(3, size);
    txn.up_doc->bind(4, mtime_ns);
    txn.up_doc->bind(5, static_cast<std::int64_t>(a.len));
    txn.up_doc->bind(6, static_cast<std::int64_t>(indexable ? 1 : 0));
    txn.up_doc->bind(7, a.counts);
    txn.up_doc->step();
    txn.up_doc->reset();
    if (!d.live) ++x.live;
    else x.stale += d.terms;
    d.rel = rel;
    d.size = size;
    d.mtime_ns = mtime_ns;
    d.len = a.len;
    d.utf8 = indexable;
    d.live = true;
    std::uint32_t gen = ++x.gens[slot];
    for (const auto& [tid, n] : a.tf) x.postings[tid].push_back({slot, n, gen});
    d.terms = static_cast<std::uint32_t>(a.tf.size());
    x.total_postings += a.tf.size();
    return slot;
}

void LexicalIndex::add_written(const std::vector<WrittenDoc>& written) {
    if (written.empty()) return;
    Impl& x = *impl_;
    try {
        x.ensure(rebuilds_);
        Txn txn(x);
        for (const auto& w : written) {
            auto it = x.slot_of.find(w.rel);
            if (it != x.slot_of.end()) {
                const Impl::Doc& d = x.docs[it->second];
                if (d.live && d.size == w.size && d.mtime_ns == w.mtime_ns) continue;
            }
            (void)index_doc(txn, w.rel, w.size, w.mtime_ns, w.body);
        }
        txn.commit();
        // The walk the index last reconciled no longer describes the files.
        x.reconciled_key.clear();
        ++x.epoch;
        x.compact_if_needed();
    } catch (const SqliteError& e) {
        if (x.db) sqlite3_exec(x.db, "ROLLBACK", nullptr, nullptr, nullptr);
        rath::log(LogLevel::warning, "rath.memory",
                  std::string("index.sqlite failed while indexing writes (") + e.what() + "); the next find reloads it");
        x.close();
        x.clear_mirror();
        x.stamp = {};
    }
}

std::optional<std::vector<LexicalHit>> LexicalIndex::find_current(const std::vector<WalkDoc>& walk,
                                                                  const std::string& walk_key, std::string_view query,
                                                                  int top_k) const {
    const Impl& x = *impl_;
    if (walk_key.empty() || !x.db || walk_key != x.reconciled_key || x.reconciled_slots.size() != walk.size())
        return std::nullopt;
    FileStamp now = stamp_of(x.path);
    if (!now.exists || !(now == x.stamp)) return std::nullopt;
    std::vector<std::string> q = analyze(query, params_.analyzer);
    if (q.empty() || top_k <= 0 || walk.empty()) return std::vector<LexicalHit>{};
    return score(walk, x.reconciled_slots, q, top_k);
}

std::vector<LexicalHit> LexicalIndex::find(const std::vector<WalkDoc>& walk, bool whole_store,
                                           const std::string& walk_key, std::string_view query, int top_k,
                                           const WalkPatch* patch) {
    std::vector<std::string> q = analyze(query, params_.analyzer);
    if (q.empty() || top_k <= 0 || walk.empty()) return {};

    Impl& x = *impl_;
    std::vector<std::int64_t> scope_slots;  // walk position -> slot, -1 when left out
    // One retry: an index that fails mid-update is rebuilt from the files.
    for (int attempt = 0;; ++attempt) {
        try {
            x.ensure(rebuilds_);
            if (!walk_key.empty() && walk_key == x.reconciled_key && x.reconciled_slots.size() == walk.size()) {
                scope_slots = x.reconciled_slots;
                break;
            }
            // Only documents changed in place since the walk reconciled last: visit those.
            bool partial = patch && !patch->since_key.empty() && patch->since_key == x.reconciled_key &&
                           x.reconciled_slots.size() == walk.size();
            std::vector<std::size_t> visit;
            if (partial) {
                scope_slots = x.reconciled_slots;
                visit = patch->positions;
            } else {
                scope_slots.assign(walk.size(), -1);
                visit.resize(walk.size());
                for (std::size_t i = 0; i < walk.size(); ++i) visit[i] = i;
            }
            Txn txn(x);
            std::vector<bool> seen(x.docs.size(), false);
            for (std::size_t i : visit) {
                if (i >= walk.size()) continue;
                const WalkDoc& w = walk[i];
                auto it = x.slot_of.find(w.rel);
                if (it != x.slot_of.end()) {
                    Impl::Doc& d = x.docs[it->second];
                    if (d.live && d.size == w.size && d.mtime_ns == w.mtime_ns) {
                        if (it->second < seen.size()) seen[it->second] = true;
                        if (d.utf8) scope_slots[i] = it->second;
                        continue;
                    }
                }
                // New or changed: re-read and re-tokenise this file (a file over the
                // size cap is recorded without being read).
                scope_slots[i] = -1;
                std::optional<std::string> body;
                if (w.size <= params_.max_document_bytes) {
                    body = read_file(root_ / w.rel);
                    if (!body) continue;  // vanished since the walk: not in scope
                    ++reindexed_;
                }
                std::uint32_t slot = index_doc(txn, w.rel, w.size, w.mtime_ns,
                                               body ? std::optional<std::string_view>(*body) : std::nullopt);
                if (slot < seen.size()) seen[slot] = true;
                if (x.docs[slot].utf8) scope_slots[i] = slot;
            }
            if (!partial && whole_store && x.live > walk.size()) {
                // Documents deleted out of band: drop them from the index.
                for (std::size_t s = 0; s < seen.size(); ++s) {
                    Impl::Doc& d = x.docs[s];
                    if (!d.live || seen[s]) continue;
                    txn.begin();
                    if (!txn.del_doc) txn.del_doc = std::make_unique<Stmt>(x.db, "DELETE FROM doc WHERE id = ?1");
                    auto rowid = static_cast<std::int64_t>(s) + 1;
                    txn.del_terms->bind(1, rowid);
                    txn.del_terms->step();
                    txn.del_terms->reset();
                    txn.del_doc->bind(1, rowid);
                    txn.del_doc->step();
                    txn.del_doc->reset();
                    x.slot_of.erase(d.rel);
                    d.live = false;
                    x.stale += d.terms;
                    ++x.gens[s];
                    --x.live;
                }
            }
            txn.commit();
            x.compact_if_needed();
            ++x.epoch;
            x.reconciled_key = walk_key;
            x.reconciled_slots = scope_slots;
            x.pos_of.assign(x.docs.size(), -1);
            x.n_scoped = 0;
            x.total_len = 0;
            for (std::size_t i = 0; i < walk.size(); ++i) {
                if (scope_slots[i] < 0) continue;
                x.pos_of[static_cast<std::size_t>(scope_slots[i])] = static_cast<std::int32_t>(i);
                ++x.n_scoped;
                x.total_len += x.docs[static_cast<std::size_t>(scope_slots[i])].len;
            }
            break;
        } catch (const SqliteError& e) {
            if (x.db) sqlite3_exec(x.db, "ROLLBACK", nullptr, nullptr, nullptr);
            if (attempt > 0) throw MemoryBackendError(std::string("memory index failed: ") + e.what());
            rath::log(LogLevel::warning, "rath.memory",
                      std::string("index.sqlite failed (") + e.what() + "); rebuilding it from the files");
            ++rebuilds_;
            x.remove_files();
            x.clear_mirror();
        }
    }
    return score(walk, scope_slots, q, top_k);
}

std::shared_ptr<const LexicalIndex::Contributions> LexicalIndex::contributions(const std::string& term, double N,
                                                                              double avgdl, double k1,
                                                                              double b) const {
    const Impl& x = *impl_;
    {
        std::lock_guard lk(cache_mu_);
        if (cache_epoch_ != x.epoch) {
            cache_.clear();
            cache_entries_ = 0;
            cache_epoch_ = x.epoch;
        }
        if (auto it = cache_.find(term); it != cache_.end()) return it->second;
    }
    auto list = std::make_shared<Contributions>();
    auto tid = x.term_id.find(term);
    if (tid != x.term_id.end()) {
        const std::int32_t* pos_of = x.pos_of.data();
        const std::uint32_t* gens = x.gens.data();
        const auto& posts = x.postings[tid->second];
        std::size_t df = 0;
        for (const auto& p : posts)
            if (gens[p.slot] == p.gen && pos_of[p.slot] >= 0) ++df;
        double dfd = static_cast<double>(df);
        double idf = std::log(1.0 + (N - dfd + 0.5) / (dfd + 0.5));
        list->reserve(df);
        for (const auto& p : posts) {
            if (gens[p.slot] != p.gen || pos_of[p.slot] < 0) continue;
            double dl = x.docs[p.slot].len;
            list->emplace_back(static_cast<std::uint32_t>(pos_of[p.slot]), bm25_term(idf, p.tf, dl, avgdl, k1, b));
        }
    }
    // Kept while the reconciled walk stays the same, up to a bound on the entries.
    std::lock_guard lk(cache_mu_);
    if (cache_epoch_ == x.epoch) {
        if (cache_entries_ + list->size() + 1 > max_cached_contributions) {
            cache_.clear();
            cache_entries_ = 0;
        }
        cache_entries_ += list->size() + 1;
        cache_.emplace(term, list);
    }
    return list;
}

std::vector<LexicalHit> LexicalIndex::score(const std::vector<WalkDoc>& walk,
                                            const std::vector<std::int64_t>& scope_slots,
                                            const std::vector<std::string>& q, int top_k) const {
    const Impl& x = *impl_;
    // Scoped statistics: N, avgdl and df over the documents of this walk only.
    if (x.n_scoped == 0) return {};
    const double N = static_cast<double>(x.n_scoped);
    const double avgdl = x.total_len / N;
    const double k1 = params_.k1, b = params_.b;

    // Per walk position, the summed score (this thread's buffer, zero between finds)
    // and the positions that got one.
    thread_local std::vector<double> score;
    thread_local std::vector<std::uint32_t> touched;
    if (score.size() < walk.size()) score.resize(walk.size(), 0.0);
    touched.clear();
    struct Reset {
        ~Reset() {
            for (auto pos : touched) score[pos] = 0.0;
        }
    } reset;
    for (const auto& t : q) {
        std::shared_ptr<const Contributions> c = contributions(t, N, avgdl, k1, b);
        // Query order per document, duplicates counted, as the spec sums.
        for (const auto& [pos, v] : *c) {
            if (score[pos] == 0.0) touched.push_back(pos);
            score[pos] += v;
        }
    }

    std::vector<std::uint32_t> matched;
    matched.reserve(touched.size());
    for (auto pos : touched)
        if (score[pos] > 0.0) matched.push_back(pos);
    auto better = [&](std::uint32_t a, std::uint32_t c) { return score[a] > score[c] || (score[a] == score[c] && a < c); };
    auto k = static_cast<std::size_t>(top_k);
    if (matched.size() > k) {
        std::partial_sort(matched.begin(), matched.begin() + static_cast<std::ptrdiff_t>(k), matched.end(), better);
        matched.resize(k);
    } else {
        std::sort(matched.begin(), matched.end(), better);
    }
    std::vector<LexicalHit> out;
    out.reserve(std::min(k, x.n_scoped));
    for (auto pos : matched) out.push_back({pos, score[pos]});
    // Zero-score documents fill the remaining slots in walk order.
    for (std::size_t i = 0; i < walk.size() && out.size() < k; ++i)
        if (scope_slots[i] >= 0 && score[i] == 0.0) out.push_back({i, 0.0});
    return out;
}

}  // namespace rath::memory::detail
