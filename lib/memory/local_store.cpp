#include "lib/memory/local_store.hpp"

#include <rath/log.hpp>
#include <rath/memory/error.hpp>
#include <rath/memory/persistence.hpp>
#include <rath/memory/uri.hpp>
#include <rath/session/persistence/records.hpp>
#include <rath/config/paths.hpp>

#include <boost/json.hpp>
#include <openssl/sha.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iterator>
#include <system_error>
#include <unordered_map>

#include "lib/session/uuid.hpp"
#include "lib/text/json_parse.hpp"
#include "lib/text/pyjson.hpp"
#include "lib/text/pyrepr.hpp"
#include "lib/config/atomic_file.hpp"
#include "lib/text/utf8.hpp"
#include "lib/memory/vector_cache.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;
using rath::detail::pyrepr;

namespace rath::memory::detail {
namespace {

constexpr std::array<std::string_view, 4> scopes_sorted{"agent", "resources", "session", "user"};

ExecutionFailure failure(FailureKind k, std::string msg) { return ExecutionFailure{k, std::move(msg), std::nullopt}; }

[[noreturn]] void throw_errno(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

// An exclusive flock on <store>/.rath.lock: serializes mutations with other processes.
class StoreLock {
public:
    explicit StoreLock(const fs::path& root) {
        fd_ = ::open((root / ".rath.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw_errno("cannot open " + (root / ".rath.lock").string());
        while (::flock(fd_, LOCK_EX) != 0) {
            if (errno != EINTR) {
                ::close(fd_);
                throw_errno("cannot lock " + (root / ".rath.lock").string());
            }
        }
    }
    ~StoreLock() {
        ::flock(fd_, LOCK_UN);
        ::close(fd_);
    }
    StoreLock(const StoreLock&) = delete;
    StoreLock& operator=(const StoreLock&) = delete;

private:
    int fd_ = -1;
};

// Readers see the old or the new file, never a torn one. Hidden temp names never end in
// ".md", so no walk sees them. Not fsynced, as OpenRath's stores are not.
void atomic_write(const fs::path& target, std::string_view bytes) {
    using Stage = rath::detail::AtomicWriteError::Stage;
    auto err = rath::detail::write_file_atomically(target, bytes, {.temp_name = ".rath-tmp-XXXXXX", .mode = 0644});
    if (err.stage == Stage::create)
        throw std::system_error(err.error, std::generic_category(),
                                "cannot create a temp file in " + target.parent_path().string());
    if (err.stage == Stage::write)
        throw std::system_error(err.error, std::generic_category(), "cannot write " + target.string());
    if (err.stage == Stage::rename)
        throw std::system_error(err.error, std::generic_category(), "cannot rename onto " + target.string());
}

std::string read_all(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw std::system_error(errno ? errno : ENOENT, std::generic_category(), "cannot open " + p.string());
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool is_valid_utf8(std::string_view s) noexcept { return rath::detail::utf8_valid_prefix(s) == s.size(); }

bool is_hidden(std::string_view name) {
    return name == "meta.json" || name.ends_with(".vec") || name.ends_with(".meta.json");
}

bool inside(const fs::path& root, const fs::path& p) {
    auto r = root.native(), s = p.native();
    return s == r || (s.size() > r.size() && s.compare(0, r.size(), r) == 0 && s[r.size()] == '/');
}

// Decision 2 of §8.6: append ".md" unless the name already ends in it.
fs::path md_path(const fs::path& p) {
    std::string s = p.native();
    if (s.ends_with(".md")) return p;
    return fs::path(s + ".md");
}

fs::path sidecar(const fs::path& md, std::string_view suffix) {
    std::string s = md.native();
    if (s.ends_with(".md")) s.resize(s.size() - 3);
    return fs::path(s + std::string(suffix));
}

std::string strip_trailing_slashes(std::string_view u) {
    while (!u.empty() && u.back() == '/') u.remove_suffix(1);
    return std::string(u);
}

// Walk order: pre-order with each directory's children in name order, which is the
// lexicographic order of the '/'-separated component sequences.
bool walk_less(std::string_view a, std::string_view b) {
    for (;;) {
        auto ea = a.find('/'), eb = b.find('/');
        std::string_view ca = a.substr(0, ea), cb = b.substr(0, eb);
        if (ca != cb) return ca < cb;
        if (ea == std::string_view::npos || eb == std::string_view::npos)
            return ea == std::string_view::npos && eb != std::string_view::npos;
        a.remove_prefix(ea + 1);
        b.remove_prefix(eb + 1);
    }
}

struct Child {
    std::string name;
    bool is_dir = false;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
};

// The visible children of `dir` in name order; symlinks are never followed (nothing
// a walk finds can lead outside the store).
std::vector<Child> children(const fs::path& dir) {
    std::vector<Child> out;
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return out;
    DIR* d = ::fdopendir(dfd);
    if (!d) {
        ::close(dfd);
        return out;
    }
    while (dirent* e = ::readdir(d)) {
        std::string_view name = e->d_name;
        if (name == "." || name == ".." || is_hidden(name)) continue;
        struct stat st {};
        if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            out.push_back({std::string(name), true, 0, 0});
        } else if (S_ISREG(st.st_mode)) {
            out.push_back({std::string(name), false, static_cast<std::int64_t>(st.st_size),
                           static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec});
        }
    }
    ::closedir(d);
    std::sort(out.begin(), out.end(), [](const Child& a, const Child& b) { return a.name < b.name; });
    return out;
}

bool is_reg_nofollow(const fs::path& p, struct stat* out = nullptr) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (out) *out = st;
    return true;
}

bool is_dir_nofollow(const fs::path& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string rel_of(const fs::path& root, const fs::path& p) {
    const auto& r = root.native();
    const auto& s = p.native();
    return s.size() > r.size() ? s.substr(r.size() + 1) : std::string();
}

}  // namespace

// inotify over the store's directories. Events on the root count only when they name a
// scope directory (index.sqlite and the lock file live there and change on every find).
// A document created, changed or removed is reported by name; anything else (a
// directory event, a queue overflow) asks for a fresh walk.
class TreeWatch {
public:
    struct Changes {
        bool rewalk = false;
        std::vector<std::string> touched;  // rels of .md files that may have changed
    };

    explicit TreeWatch(const fs::path& root) {
        fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd_ < 0) return;
        root_wd_ = ::inotify_add_watch(fd_, root.c_str(), mask);
        if (root_wd_ < 0) disable();
    }
    ~TreeWatch() {
        if (fd_ >= 0) ::close(fd_);
    }
    TreeWatch(const TreeWatch&) = delete;
    TreeWatch& operator=(const TreeWatch&) = delete;

    [[nodiscard]] bool usable() const noexcept { return fd_ >= 0; }

    void add(const fs::path& dir, const std::string& rel) {
        if (fd_ < 0) return;
        int wd = ::inotify_add_watch(fd_, dir.c_str(), mask);
        if (wd < 0) return disable();  // e.g. the watch limit: stat walks from now on
        if (wd != root_wd_) dirs_[wd] = rel;
    }

    // Reads every pending event.
    Changes drain() {
        Changes out;
        if (fd_ < 0) {
            out.rewalk = true;
            return out;
        }
        alignas(inotify_event) char buf[16384];
        for (;;) {
            ssize_t n = ::read(fd_, buf, sizeof buf);
            if (n <= 0) break;
            for (char* p = buf; p < buf + n;) {
                auto* e = reinterpret_cast<inotify_event*>(p);
                p += sizeof(inotify_event) + e->len;
                std::string_view name = e->len ? std::string_view(e->name) : std::string_view();
                if (e->mask & IN_Q_OVERFLOW) out.rewalk = true;
                if (e->mask & IN_IGNORED) continue;
                if (e->wd == root_wd_) {
                    if (std::find(scopes_sorted.begin(), scopes_sorted.end(), name) != scopes_sorted.end())
                        out.rewalk = true;
                    continue;
                }
                if (e->mask & (IN_ISDIR | IN_DELETE_SELF | IN_MOVE_SELF)) {
                    out.rewalk = true;
                    continue;
                }
                auto d = dirs_.find(e->wd);
                if (d == dirs_.end()) {
                    out.rewalk = true;
                    continue;
                }
                if (name.ends_with(".md")) out.touched.push_back(d->second + "/" + std::string(name));
            }
        }
        return out;
    }

private:
    static constexpr std::uint32_t mask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE |
                                          IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF;
    void disable() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    int fd_ = -1;
    int root_wd_ = -1;
    std::unordered_map<int, std::string> dirs_;
};

namespace {

// --- ops ------------------------------------------------------------------------

std::optional<ExecutionFailure> write_refusal(const LocalStoreState& st, const OpWrite& op) {
    if (op.mode != "replace" && op.mode != "write")
        return failure(FailureKind::unsupported, "unsupported write mode: " + pyrepr(op.mode));
    if (static_cast<std::int64_t>(op.content.size()) > st.params.max_document_bytes)
        return failure(FailureKind::unsupported, "document of " + std::to_string(op.content.size()) +
                                                     " bytes exceeds the store's max_document_bytes (" +
                                                     std::to_string(st.params.max_document_bytes) + ")");
    return std::nullopt;
}

// resolve_uri for the writes of one batch: under a directory this batch already
// resolved and made (no symlink on the way, under the lock), only the last component
// needs a look; anything else takes the full resolution.
std::variant<fs::path, ExecutionFailure> resolve_in_batch(const fs::path& root, std::string_view uri,
                                                          const std::vector<fs::path>& made) {
    auto slash = uri.rfind('/');
    auto prefix = memory_uri_prefix(uri);
    if (!made.empty() && prefix && slash != std::string_view::npos && slash + 1 < uri.size() &&
        slash > prefix->size()) {
        std::string_view dir = uri.substr(prefix->size(), slash - prefix->size());
        std::string_view leaf = uri.substr(slash + 1);
        fs::path parent = root / std::string(dir);
        bool plain_leaf = leaf != "." && leaf != ".." && leaf.find('\0') == std::string_view::npos;
        bool plain_dir = dir.find("//") == std::string_view::npos && dir.find("/.") == std::string_view::npos &&
                         !dir.starts_with(".");
        if (plain_leaf && plain_dir && std::find(made.begin(), made.end(), parent) != made.end()) {
            fs::path p = parent / std::string(leaf);
            struct stat sb {};
            if (::lstat(p.c_str(), &sb) != 0 || !S_ISLNK(sb.st_mode)) return p;
        }
    }
    return resolve_uri(root, uri);
}

// One write, the caller holding the store lock. `made`: directories this batch
// resolved and made (each free of symlinks: resolve_uri gave back the path as written).
// Adds the written file to `written` for the index.
MemoryResult write_locked(LocalStoreState& st, const OpWrite& op, std::vector<fs::path>& made,
                          std::vector<WrittenDoc>* written) {
    if (auto refused = write_refusal(st, op)) return *refused;
    auto r = resolve_in_batch(st.root, op.uri, made);
    if (auto* f = std::get_if<ExecutionFailure>(&r)) return *f;
    const fs::path& p = std::get<fs::path>(r);
    if (p.parent_path() == st.root)
        return failure(FailureKind::invalid_uri, "cannot write to a scope itself: " + pyrepr(op.uri));
    fs::path target = md_path(p);
    fs::path parent = target.parent_path();
    if (std::find(made.begin(), made.end(), parent) == made.end()) {
        fs::create_directories(parent);
        // Remembered only when nothing on the way is a symlink (the resolved path is the
        // path as written), so resolve_in_batch may skip resolving it again.
        std::error_code ec;
        if (fs::canonical(parent, ec) == parent && !ec) made.push_back(parent);
    }
    atomic_write(target, op.content);
    std::error_code ec;
    fs::remove(sidecar(target, ".vec"), ec);
    fs::remove(sidecar(target, ".meta.json"), ec);
    if (written) {
        struct stat sb {};
        if (::lstat(target.c_str(), &sb) == 0 && S_ISREG(sb.st_mode))
            written->push_back({rel_of(st.root, target), static_cast<std::int64_t>(sb.st_size),
                                static_cast<std::int64_t>(sb.st_mtim.tv_sec) * 1'000'000'000 + sb.st_mtim.tv_nsec,
                                op.content});
    }
    return WriteResult{op.uri, op.content.size()};
}

MemoryResult do_write(LocalStoreState& st, const OpWrite& op) {
    std::vector<MemoryResult> r = run_write_batch(st, {&op});
    return std::move(r.front());
}

MemoryResult do_read(LocalStoreState& st, const OpRead& op) {
    auto r = resolve_uri(st.root, op.uri);
    if (auto* f = std::get_if<ExecutionFailure>(&r)) return *f;
    const fs::path& p = std::get<fs::path>(r);
    for (const fs::path& cand : {md_path(p), p}) {
        struct stat sb {};
        if (::stat(cand.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        // The ".md" candidate is a different name: it must not lead outside either.
        std::error_code ec;
        fs::path real = fs::weakly_canonical(cand, ec);
        if (ec || !inside(st.root, real))
            return failure(FailureKind::invalid_uri, "path escapes store root: " + pyrepr(op.uri));
        if (static_cast<std::int64_t>(sb.st_size) > st.params.max_document_bytes)
            return failure(FailureKind::unsupported, "memory at " + op.uri + " has " + std::to_string(sb.st_size) +
                                                         " bytes, over the store's max_document_bytes (" +
                                                         std::to_string(st.params.max_document_bytes) + ")");
        std::string body = read_all(real);
        if (!op.encoding) {
            std::vector<std::byte> bytes(body.size());
            std::memcpy(bytes.data(), body.data(), body.size());
            return ReadResult{op.uri, std::move(bytes), op.level};
        }
        if (!is_valid_utf8(body))
            return failure(FailureKind::internal, "memory at " + op.uri + " is not valid UTF-8");
        return ReadResult{op.uri, std::move(body), op.level};
    }
    return failure(FailureKind::not_found, "no memory at " + op.uri);
}

void list_into(const fs::path& dir, const std::string& base, int level, int depth, std::vector<MemoryEntry>& out) {
    for (const Child& c : children(dir)) {
        if (c.is_dir) {
            std::string uri = base + "/" + c.name;
            out.push_back({c.name, uri, true, std::nullopt});
            if (level < depth) list_into(dir / c.name, uri, level + 1, depth, out);
        } else if (c.name.ends_with(".md")) {
            std::string name = c.name.substr(0, c.name.size() - 3);
            out.push_back({name, base + "/" + name, false, static_cast<std::uint64_t>(c.size)});
        } else {
            out.push_back({c.name, base + "/" + c.name, false, static_cast<std::uint64_t>(c.size)});
        }
    }
}

MemoryResult do_list(LocalStoreState& st, const std::string& uri, int depth) {
    auto r = resolve_uri(st.root, uri);
    if (auto* f = std::get_if<ExecutionFailure>(&r)) return *f;
    ListResult out;
    if (depth < 0) return out;
    const fs::path& p = std::get<fs::path>(r);
    if (!is_dir_nofollow(p)) return out;
    list_into(p, strip_trailing_slashes(uri), 0, depth, out.entries);
    return out;
}

void walk_docs(const fs::path& dir, const std::string& rel, std::vector<WalkDoc>& out, TreeWatch* watch) {
    // Watch before listing: a change made while we list is then reported, not missed.
    if (watch) watch->add(dir, rel);
    for (const Child& c : children(dir)) {
        std::string child_rel = rel.empty() ? c.name : rel + "/" + c.name;
        if (c.is_dir) {
            walk_docs(dir / c.name, child_rel, out, watch);
        } else if (c.name.ends_with(".md")) {
            out.push_back({std::move(child_rel), c.size, c.mtime_ns});
        }
    }
}

// The documents of the whole store in walk order: the cached walk while the watch
// reports nothing, else a fresh stat walk.
const std::vector<WalkDoc>& whole_walk(LocalStoreState& st) {
    if (!st.use_watch) {
        st.patch.reset();
        st.walk.clear();
        for (auto scope : scopes_sorted) {
            fs::path dir = st.root / std::string(scope);
            if (is_dir_nofollow(dir)) walk_docs(dir, std::string(scope), st.walk, nullptr);
        }
        ++st.walk_version;
        st.walk_valid = true;
        return st.walk;
    }
    if (!st.watch) st.watch = std::make_unique<TreeWatch>(st.root);
    TreeWatch::Changes changes;
    {
        std::lock_guard lk(st.watch_mu);
        changes = st.watch->drain();
        changes.rewalk = changes.rewalk || st.stashed_rewalk;
        changes.touched.insert(changes.touched.end(), std::make_move_iterator(st.stashed_touched.begin()),
                               std::make_move_iterator(st.stashed_touched.end()));
        st.stashed_rewalk = false;
        st.stashed_touched.clear();
    }
    if (st.walk_valid && !changes.rewalk && st.watch->usable()) {
        if (changes.touched.empty()) return st.walk;
        WalkPatch patch{std::to_string(st.walk_version), {}};
        bool in_place = true;
        // Single documents came, went or changed: patch the walk where they sort.
        std::sort(changes.touched.begin(), changes.touched.end());
        changes.touched.erase(std::unique(changes.touched.begin(), changes.touched.end()), changes.touched.end());
        for (const auto& rel : changes.touched) {
            auto it = std::lower_bound(st.walk.begin(), st.walk.end(), rel,
                                       [](const WalkDoc& d, const std::string& r) { return walk_less(d.rel, r); });
            bool present = it != st.walk.end() && it->rel == rel;
            struct stat sb {};
            if (::lstat((st.root / rel).c_str(), &sb) == 0 && S_ISREG(sb.st_mode)) {
                std::int64_t mt = static_cast<std::int64_t>(sb.st_mtim.tv_sec) * 1'000'000'000 + sb.st_mtim.tv_nsec;
                if (present) {
                    it->size = static_cast<std::int64_t>(sb.st_size);
                    it->mtime_ns = mt;
                    patch.positions.push_back(static_cast<std::size_t>(it - st.walk.begin()));
                } else {
                    st.walk.insert(it, WalkDoc{rel, static_cast<std::int64_t>(sb.st_size), mt});
                    in_place = false;
                }
            } else if (present) {
                st.walk.erase(it);
                in_place = false;
            }
        }
        ++st.walk_version;
        if (in_place) st.patch = std::move(patch);
        else st.patch.reset();
        return st.walk;
    }
    st.patch.reset();
    st.walk.clear();
    for (auto scope : scopes_sorted) {
        fs::path dir = st.root / std::string(scope);
        if (is_dir_nofollow(dir)) walk_docs(dir, std::string(scope), st.walk, st.watch->usable() ? st.watch.get() : nullptr);
    }
    ++st.walk_version;
    st.walk_valid = true;
    return st.walk;
}

std::string snippet_of(std::string_view body) {
    auto ws = [](unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); };
    while (!body.empty() && ws(static_cast<unsigned char>(body.front()))) body.remove_prefix(1);
    while (!body.empty() && ws(static_cast<unsigned char>(body.back()))) body.remove_suffix(1);
    if (rath::detail::count_code_points(body) <= 200) return std::string(body);
    std::string head = rath::detail::head_code_points(body, 200);
    while (!head.empty() && ws(static_cast<unsigned char>(head.back()))) head.pop_back();
    return head + "...";
}

// The documents a find ranks (§2.9 scope), in walk order, with how their URIs are
// spelled.
struct FindScope {
    std::vector<WalkDoc> own;
    const std::vector<WalkDoc>* docs = &own;
    bool whole = false, single = false;
    std::string target, base, scope_rel, walk_key;

    [[nodiscard]] std::string uri_of(const WalkDoc& d) const {
        if (whole) return "memory://" + d.rel.substr(0, d.rel.size() - 3);
        if (single) return target;
        std::string sub = d.rel.substr(scope_rel.size());
        return base + sub.substr(0, sub.size() - 3);
    }
};

std::variant<std::unique_ptr<FindScope>, ExecutionFailure> find_scope(LocalStoreState& st,
                                                                      const std::optional<std::string>& target) {
    auto sc = std::make_unique<FindScope>();
    sc->whole = !target || target->empty();
    if (sc->whole) {
        sc->docs = &whole_walk(st);
        sc->walk_key = std::to_string(st.walk_version);
        return sc;
    }
    sc->target = *target;
    auto r = resolve_uri(st.root, *target);
    if (auto* f = std::get_if<ExecutionFailure>(&r)) return *f;
    const fs::path& p = std::get<fs::path>(r);
    sc->scope_rel = rel_of(st.root, p);
    sc->base = strip_trailing_slashes(*target);
    struct stat sb {};
    if (is_reg_nofollow(p, &sb)) {
        sc->single = true;
        sc->own.push_back({sc->scope_rel, static_cast<std::int64_t>(sb.st_size),
                           static_cast<std::int64_t>(sb.st_mtim.tv_sec) * 1'000'000'000 + sb.st_mtim.tv_nsec});
    } else if (is_dir_nofollow(p)) {
        // The scope's part of the whole-store walk (same order, same documents).
        const auto& all = whole_walk(st);
        std::string prefix = sc->scope_rel + "/";
        for (const auto& d : all)
            if (d.rel.compare(0, prefix.size(), prefix) == 0) sc->own.push_back(d);
        sc->walk_key = std::to_string(st.walk_version) + "\n" + sc->scope_rel;
    }
    return sc;
}

// The §2.9 snippet of a hit. Snippets are remembered by path, size and modification
// time (the stamps the index trusts too), so repeated recalls of the same notes read
// no file.
std::optional<std::string> hit_snippet(LocalStoreState& st, const WalkDoc& d) {
    {
        std::lock_guard lk(st.snippet_mu);
        if (auto it = st.snippets.find(d.rel); it != st.snippets.end() && it->second.size == d.size &&
                                               it->second.mtime_ns == d.mtime_ns)
            return it->second.snippet;
    }
    std::optional<std::string> snip;
    try {
        std::string body = read_all(st.root / d.rel);
        if (is_valid_utf8(body)) snip = snippet_of(body);
        // Stamped as the walk saw it: a file changed since then is read again next time.
        if (static_cast<std::int64_t>(body.size()) == d.size) {
            std::lock_guard lk(st.snippet_mu);
            if (st.snippets.size() >= LocalStoreState::max_snippets) st.snippets.clear();
            st.snippets.insert_or_assign(d.rel, LocalStoreState::CachedSnippet{d.size, d.mtime_ns, snip});
        }
    } catch (const std::system_error&) {
        // Deleted since the walk: the hit stays, without a snippet.
    }
    return snip;
}

FindResult hits_to_result(LocalStoreState& st, const std::vector<WalkDoc>& docs, const std::vector<LexicalHit>& hits,
                          const FindScope& sc) {
    FindResult out;
    out.hits.reserve(hits.size());
    for (const auto& h : hits) {
        const WalkDoc& d = docs[h.pos];
        out.hits.push_back({sc.uri_of(d), h.score, hit_snippet(st, d), std::nullopt});
    }
    return out;
}

// A whole-store find while nothing changed since the index last caught up: scoring
// only, under the shared lock, side by side with other such finds. nullopt: the slow
// path must catch up first (what the watch reported is kept for it).
std::optional<FindResult> find_unchanged(LocalStoreState& st, const std::string& query, int top_k) {
    std::shared_lock rl(st.rw);
    if (!st.use_watch || !st.walk_valid || !st.watch || !st.index) return std::nullopt;
    {
        std::lock_guard lk(st.watch_mu);
        if (!st.watch->usable() || st.stashed_rewalk || !st.stashed_touched.empty()) return std::nullopt;
        TreeWatch::Changes changes = st.watch->drain();
        if (changes.rewalk || !changes.touched.empty()) {
            st.stashed_rewalk = changes.rewalk;
            st.stashed_touched = std::move(changes.touched);
            return std::nullopt;
        }
    }
    FindScope sc;
    sc.whole = true;
    sc.docs = &st.walk;
    std::optional<std::vector<LexicalHit>> hits =
        st.index->find_current(st.walk, std::to_string(st.walk_version), query, top_k);
    if (!hits) return std::nullopt;
    return hits_to_result(st, st.walk, *hits, sc);
}

MemoryResult do_find(LocalStoreState& st, const std::string& query, const std::optional<std::string>& target,
                     int top_k) {
    if (!target || target->empty())
        if (auto fast = find_unchanged(st, query, top_k)) return std::move(*fast);
    std::unique_lock wl(st.rw);
    auto scoped = find_scope(st, target);
    if (auto* f = std::get_if<ExecutionFailure>(&scoped)) return *f;
    const FindScope& sc = *std::get<std::unique_ptr<FindScope>>(scoped);
    const std::vector<WalkDoc>& docs = *sc.docs;
    if (docs.empty()) return FindResult{};
    if (!st.index) st.index = std::make_unique<LexicalIndex>(st.root, st.params);
    std::vector<LexicalHit> hits;
    {
        StoreLock lock(st.root);
        hits = st.index->find(docs, sc.whole, sc.walk_key, query, top_k, sc.whole && st.patch ? &*st.patch : nullptr);
    }
    return hits_to_result(st, docs, hits, sc);
}

// Invalid UTF-8 bytes become spaces, as the lexical ranker treats them as separators:
// the embedding request must be valid JSON text.
std::string embeddable_text(std::string body) {
    for (std::size_t i = 0; i < body.size();) {
        if (static_cast<unsigned char>(body[i]) < 0x80) {
            ++i;
            continue;
        }
        char32_t cp = 0;
        std::size_t n = rath::detail::utf8_sequence(body, i, cp);
        if (n == 0) {
            body[i++] = ' ';
        } else {
            i += n;
        }
    }
    return body;
}

std::string sha16_of(std::string_view bytes) {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 8; ++i) {
        out.push_back(hex[md[i] >> 4]);
        out.push_back(hex[md[i] & 15]);
    }
    return out;
}

// Python's Path.suffix: the last ".xxx" of the name, none for a leading-dot-only name.
std::string suffix_of(std::string_view name) {
    auto dot = name.rfind('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return {};
    return std::string(name.substr(dot));
}

MemoryResult do_resource(LocalStoreState& st, const OpResource& op) {
    if (auto err = resource_destination_error(st, op)) return *err;
    std::string_view src = op.source;
    std::string local;
    auto colon = src.find("://");
    if (is_http_source(src)) {
        // Fetched by local.cpp before it gets here; a direct call has no client.
        return failure(FailureKind::transport, "failed to fetch resource: no HTTP client on this path");
    } else if (src.starts_with("file://")) {
        local = std::string(src.substr(7));
    } else if (colon != std::string_view::npos && colon > 1) {
        return failure(FailureKind::transport, "unsupported scheme: " + pyrepr(src.substr(0, colon)));
    } else {
        local = std::string(src);
    }
    fs::path lp = rath::config::expand_user(fs::path(local));
    struct stat sb {};
    if (::stat(lp.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode))
        return failure(FailureKind::not_found, "resource source not found: " + local);
    return ingest_resource(st, op, read_all(lp), local, lp.filename().string());
}

std::string commit_stamp() {
    auto now = std::chrono::system_clock::now();
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(us / 1'000'000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%S", &tm);
    char frac[8];
    std::snprintf(frac, sizeof frac, "%06lld", static_cast<long long>(us % 1'000'000));
    return std::string(buf) + frac;
}

MemoryResult do_commit(LocalStoreState& st, const OpCommit& op) {
    if (op.session_id.empty())
        return failure(FailureKind::invalid_uri, "MemoryOpCommit requires non-empty session_id");
    // Decision 4 of §8.6: the id is one path segment.
    if (op.session_id == "." || op.session_id == ".." || op.session_id.find('/') != std::string::npos ||
        op.session_id.find('\\') != std::string::npos || op.session_id.find('\0') != std::string::npos)
        return failure(FailureKind::invalid_uri,
                       "MemoryOpCommit session_id must be one path segment: " + pyrepr(op.session_id));
    std::string stamp = commit_stamp();
    fs::path dir = st.root / "session" / op.session_id / "commits" / stamp;
    json::array msgs;
    for (const auto& m : op.messages) msgs.push_back(m);
    std::string text = rath::detail::pyjson(msgs, {.indent = 2});
    {
        StoreLock lock(st.root);
        fs::create_directories(dir);
        atomic_write(dir / "messages.json", text);
    }
    CommitResult out;
    out.archived_uri = "memory://session/" + op.session_id + "/commits/" + stamp + "/messages.json";
    // With wait, no memo was extracted here; local.cpp adds them when a chat client exists.
    if (op.wait) out.extracted_count = 0;
    return out;
}

}  // namespace

bool is_http_source(std::string_view source) noexcept {
    return source.starts_with("http://") || source.starts_with("https://");
}

std::optional<ExecutionFailure> resource_destination_error(const LocalStoreState& st, const OpResource& op) {
    std::string dest_uri = op.target_uri && !op.target_uri->empty() ? *op.target_uri : "memory://resources";
    auto r = resolve_uri(st.root, dest_uri);
    if (auto* f = std::get_if<ExecutionFailure>(&r)) return *f;
    return std::nullopt;
}

MemoryResult ingest_resource(LocalStoreState& st, const OpResource& op, const std::string& bytes,
                             const std::string& label, const std::string& name) {
    std::string dest_uri = op.target_uri && !op.target_uri->empty() ? *op.target_uri : "memory://resources";
    auto r = resolve_uri(st.root, dest_uri);
    if (auto* f = std::get_if<ExecutionFailure>(&r)) return *f;
    const fs::path& dest = std::get<fs::path>(r);
    std::string sha = sha16_of(bytes);
    std::string ext = suffix_of(name);
    if (ext.empty()) ext = ".bin";
    fs::path dir = dest / sha;
    fs::path blob = dir / ("source" + ext);
    std::string result_uri = strip_trailing_slashes(dest_uri) + "/" + sha;
    StoreLock lock(st.root);
    struct stat bs {};
    if (is_reg_nofollow(blob, &bs) && static_cast<std::size_t>(bs.st_size) == bytes.size())
        return WriteResult{result_uri, bytes.size()};
    fs::create_directories(dir);
    atomic_write(blob, bytes);
    std::string meta = "# Resource " + sha + "\n\n- source: " + label + "\n- original_name: " + name +
                       "\n- bytes: " + std::to_string(bytes.size());
    if (!op.reason.empty()) meta += "\n\n## Reason\n" + op.reason;
    if (!op.instruction.empty()) meta += "\n\n## Instruction\n" + op.instruction;
    meta += "\n";
    atomic_write(dir / "meta.md", meta);
    return WriteResult{result_uri, bytes.size()};
}

std::vector<MemoryResult> run_write_batch(LocalStoreState& st, const std::vector<const OpWrite*>& ops) {
    std::vector<MemoryResult> out;
    out.reserve(ops.size());
    // Each write is refused before the lock is taken if it can be.
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (auto refused = write_refusal(st, *ops[i])) out.emplace_back(std::move(*refused));
        else {
            out.emplace_back(WriteResult{});
            todo.push_back(i);
        }
    }
    if (todo.empty()) return out;
    std::unique_lock wl(st.rw);
    StoreLock lock(st.root);
    std::vector<fs::path> made;
    // Indexed as written, from the bytes in hand: the first find then only stats the
    // files it would otherwise read back and tokenise.
    if (!st.index) st.index = std::make_unique<LexicalIndex>(st.root, st.params);
    std::vector<WrittenDoc> written;
    std::vector<WrittenDoc>* index_into = &written;
    for (std::size_t i : todo) {
        try {
            out[i] = write_locked(st, *ops[i], made, index_into);
        } catch (...) {
            out[i] = failure_from_current_exception();
        }
    }
    if (!written.empty()) st.index->add_written(written);
    return out;
}

ExecutionFailure failure_from_current_exception() {
    try {
        throw;
    } catch (const std::system_error& e) {
        if (e.code() == std::errc::permission_denied || e.code() == std::errc::operation_not_permitted)
            return ExecutionFailure{FailureKind::unauthorized, std::string("permission denied: ") + e.what(),
                                    std::nullopt};
        return ExecutionFailure{FailureKind::internal, std::string("OSError: ") + e.what(), std::nullopt};
    } catch (const MemoryBackendError& e) {
        return ExecutionFailure{FailureKind::internal, e.what(), std::nullopt};
    }
}

LocalStoreState::LocalStoreState() = default;
LocalStoreState::~LocalStoreState() = default;

std::variant<fs::path, ExecutionFailure> resolve_uri(const fs::path& root, std::string_view uri) {
    auto prefix = memory_uri_prefix(uri);
    if (!prefix) return failure(FailureKind::invalid_uri, "URI must start with 'memory://': " + pyrepr(uri));
    if (is_root_form(uri)) return failure(FailureKind::invalid_uri, "URI has empty path after scheme");
    std::string_view tail = uri.substr(prefix->size());
    // Decision 1 of §8.6: one trailing '/' is accepted.
    if (tail.ends_with('/')) tail.remove_suffix(1);
    if (tail.empty()) return failure(FailureKind::invalid_uri, "URI has empty path after scheme");
    std::vector<std::string_view> segs;
    for (std::size_t start = 0;;) {
        auto slash = tail.find('/', start);
        segs.push_back(tail.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    if (!is_memory_scope(segs[0]))
        return failure(FailureKind::invalid_uri, "unknown scope " + pyrepr(segs[0]) +
                                                      "; must be one of ['agent', 'resources', 'session', 'user']");
    fs::path p = root;
    for (std::size_t i = 0; i < segs.size(); ++i) {
        auto s = segs[i];
        if (i > 0 && (s.empty() || s == "." || s == ".." || s.find('\0') != std::string_view::npos))
            return failure(FailureKind::invalid_uri, "forbidden path segment in " + pyrepr(uri));
        p /= std::string(s);
    }
    std::error_code ec;
    fs::path real = fs::weakly_canonical(p, ec);
    if (ec) return failure(FailureKind::invalid_uri, "cannot resolve " + pyrepr(uri) + ": " + ec.message());
    if (!inside(root, real)) return failure(FailureKind::invalid_uri, "path escapes store root: " + pyrepr(uri));
    return real;
}

fs::path local_store_root(const json::object& options) {
    const json::value* path = options.if_contains("path");
    if (path && path->is_string() && !path->as_string().empty()) {
        fs::path p = rath::config::expand_user(fs::path(std::string(path->as_string())));
        fs::create_directories(p);
        return fs::canonical(p);
    }
    ensure_local_memory_root();
    return fs::canonical(local_store_dir(PersistentMemoryRegistry{}.alloc_local_id()));
}

std::optional<Bm25Params> bm25_params_from(const json::object& options, std::string& error) {
    Bm25Params p;
    if (const json::value* a = options.if_contains("analyzer"); a && !a->is_null()) {
        auto kind = a->is_string() ? parse_analyzer(std::string_view(a->as_string())) : std::nullopt;
        if (!kind) {
            error = "memory store option 'analyzer' must be \"spec\" or \"stem\"";
            return std::nullopt;
        }
        p.analyzer = *kind;
        if (*kind == AnalyzerKind::stem) {
            p.k1 = 0.9;
            p.b = 0.4;
        }
    }
    if (const json::value* m = options.if_contains("max_document_bytes"); m && !m->is_null()) {
        std::int64_t v = m->is_int64() ? m->as_int64() : m->is_uint64() ? static_cast<std::int64_t>(std::min<std::uint64_t>(m->as_uint64(), INT64_MAX)) : 0;
        if (v <= 0) {
            error = "memory store option 'max_document_bytes' must be a positive integer";
            return std::nullopt;
        }
        p.max_document_bytes = v;
    }
    for (auto [key, slot] : {std::pair{"bm25_k1", &p.k1}, std::pair{"bm25_b", &p.b}}) {
        const json::value* v = options.if_contains(key);
        if (!v || v->is_null()) continue;
        if (!v->is_number()) {
            error = std::string("memory store option '") + key + "' must be a number";
            return std::nullopt;
        }
        *slot = v->to_number<double>();
    }
    return p;
}

std::optional<bool> watch_option(const json::object& options, std::string& error) {
    const json::value* v = options.if_contains("watch");
    if (!v || v->is_null()) return true;
    if (!v->is_bool()) {
        error = "memory store option 'watch' must be true or false";
        return std::nullopt;
    }
    return v->as_bool();
}

void touch_meta(const fs::path& root, const json::object* options, bool on_open) {
    StoreLock lock(root);
    fs::path p = root / "meta.json";
    json::object meta;
    try {
        if (auto v = rath::detail::parse_json(read_all(p)); v && v->is_object()) meta = std::move(v->as_object());
    } catch (const std::system_error&) {
        // Missing or unreadable: start from {} and rewrite it.
    }
    std::string now = rath::persistence::iso_utc_now();
    if (!meta.contains("schema_version")) meta["schema_version"] = 1;
    if (!meta.contains("created_at")) meta["created_at"] = now;
    meta["last_used_at"] = now;
    if (on_open) {
        auto copy = [&](const char* key) {
            const json::value* v = options ? options->if_contains(key) : nullptr;
            meta[key] = v && v->is_string() ? *v : json::value(nullptr);
        };
        copy("embedding_provider");
        copy("vlm_provider");
    }
    // The rename also bumps the directory's mtime, which "last used" pruning reads.
    atomic_write(p, rath::detail::pyjson(meta, {.indent = 2}) + "\n");
}

EmbedScope embedding_scope(LocalStoreState& st, const std::optional<std::string>& target, const std::string& model) {
    EmbedScope out;
    std::unique_lock wl(st.rw);
    auto scoped = find_scope(st, target);
    if (auto* f = std::get_if<ExecutionFailure>(&scoped)) {
        out.failure = *f;
        return out;
    }
    const FindScope& sc = *std::get<std::unique_ptr<FindScope>>(scoped);
    out.docs.reserve(sc.docs->size());
    for (const auto& d : *sc.docs) {
        if (d.size > st.params.max_document_bytes) continue;  // as lexical find leaves it out
        std::string body;
        try {
            body = read_all(st.root / d.rel);
        } catch (const std::system_error&) {
            continue;  // §2.9: unreadable files are skipped
        }
        EmbedDoc doc;
        doc.uri = sc.uri_of(d);
        doc.sha = sha256_hex(body);
        if (is_valid_utf8(body)) {
            doc.snippet = snippet_of(body);
            doc.text = std::move(body);
        } else {
            doc.text = embeddable_text(std::move(body));
        }
        out.docs.push_back(std::move(doc));
    }
    if (out.docs.empty()) return out;
    if (!st.vectors) st.vectors = std::make_unique<VectorCache>(st.root);
    std::vector<std::string> shas;
    shas.reserve(out.docs.size());
    for (const auto& d : out.docs) shas.push_back(d.sha);
    auto cached = st.vectors->lookup(model, shas);
    for (auto& d : out.docs)
        if (auto it = cached.find(d.sha); it != cached.end()) d.cached = it->second;
    return out;
}

void remember_vectors(LocalStoreState& st, const std::string& model,
                      const std::vector<std::pair<std::string, std::vector<double>>>& entries) {
    if (!st.vectors) st.vectors = std::make_unique<VectorCache>(st.root);
    st.vectors->store(model, entries);
}

MemoryResult run_op(LocalStoreState& st, const MemoryStoreSpec& /*spec*/, const MemoryOp& op) {
    return std::visit(
        [&](const auto& o) -> MemoryResult {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, OpWrite>) return do_write(st, o);
            else if constexpr (std::is_same_v<T, OpRead>) return do_read(st, o);
            else if constexpr (std::is_same_v<T, OpList>) return do_list(st, o.uri, 0);
            else if constexpr (std::is_same_v<T, OpTree>) return do_list(st, o.uri, o.depth);
            else if constexpr (std::is_same_v<T, OpFind>) return do_find(st, o.query, o.target_uri, o.top_k);
            // No intent model: a search is a find (session_id ignored).
            else if constexpr (std::is_same_v<T, OpSearch>) return do_find(st, o.query, o.target_uri, o.top_k);
            else if constexpr (std::is_same_v<T, OpResource>) return do_resource(st, o);
            else return do_commit(st, o);
        },
        op);
}

}  // namespace rath::memory::detail
