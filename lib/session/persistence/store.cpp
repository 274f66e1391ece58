#include <rath/async/runtime.hpp>
#include <rath/session/persistence/async_writer.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/session/persistence/store.hpp>

#include <algorithm>

namespace rath::persistence {

namespace fs = std::filesystem;

namespace {

class JsonlWriter final : public SessionStoreWriter {
public:
    explicit JsonlWriter(AsyncSessionWriter w) : w_(std::move(w)) {}

    boost::asio::awaitable<void> async_append(std::size_t first_index, std::vector<ChunkRowPtr> rows) override {
        if (first_index != written_)
            throw PersistenceError("session store writer for " + w_.path().string() + ": batch starts at row " +
                                       std::to_string(first_index) + " where " + std::to_string(written_) +
                                       " was expected",
                                   w_.path().string());
        for (const auto& r : rows)
            if (!r) throw PersistenceError("session store writer: null row", w_.path().string());
        if (rows.empty()) co_return;
        // FIFO: the last row's acknowledgement covers every row queued before it.
        for (std::size_t i = 0; i + 1 < rows.size(); ++i) co_await w_.async_enqueue_chunk(first_index + i, rows[i]);
        co_await w_.async_write_chunk(first_index + rows.size() - 1, rows.back());
        written_ += rows.size();
    }
    boost::asio::awaitable<void> async_close() override { co_await w_.async_close(); }
    boost::asio::awaitable<void> async_abandon() override { co_await w_.async_abandon(); }
    std::size_t rows_written() const noexcept override { return written_; }

private:
    AsyncSessionWriter w_;
    std::size_t written_ = 0;
};

class JsonlStore final : public SessionStore {
public:
    explicit JsonlStore(JsonlStoreOptions o)
        : o_(std::move(o)), rt_(o_.runtime ? o_.runtime : &async::Runtime::default_runtime()) {}

    boost::asio::awaitable<std::shared_ptr<SessionStoreWriter>> async_open(Session session,
                                                                           StoreOpenOptions options) override {
        AsyncWriterOptions wo;
        wo.runtime = rt_;
        wo.writer.sandbox_handle_id = options.sandbox_handle_id;
        wo.writer.sync_each_record = o_.sync_each_record;
        if (o_.dir) wo.writer.path = *o_.dir / (std::string(session.id()) + std::string(session_file_suffix));
        AsyncSessionWriter w = co_await AsyncSessionWriter::async_open(std::move(session), std::move(wo));
        co_return std::make_shared<JsonlWriter>(std::move(w));
    }

    boost::asio::awaitable<PersistedSession> async_load(std::string session_id) override {
        auto dir = o_.dir;
        auto job = [dir, session_id] {
            if (!dir) return load_session(session_id);
            fs::path final_path = *dir / (session_id + std::string(session_file_suffix));
            std::error_code ec;
            if (fs::exists(final_path, ec)) return load_session(session_id, final_path);
            return load_session(session_id, partial_path_for(final_path));
        };
        co_return co_await rt_->async_blocking(std::move(job));
    }

    boost::asio::awaitable<std::vector<PersistedSessionMeta>> async_list() override {
        auto dir = o_.dir;
        auto job = [dir] {
            auto out = list_persisted_sessions({.dir = dir});
            std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
                return a.created_at_time != b.created_at_time ? a.created_at_time < b.created_at_time : a.id < b.id;
            });
            return out;
        };
        co_return co_await rt_->async_blocking(std::move(job));
    }

    boost::asio::awaitable<bool> async_remove(std::string session_id) override {
        auto dir = o_.dir;
        auto job = [dir, session_id] {
            if (!dir) return delete_session(session_id);
            fs::path final_path = *dir / (session_id + std::string(session_file_suffix));
            bool a = delete_session(session_id, final_path);
            bool b = delete_session(session_id, partial_path_for(final_path));
            return a || b;
        };
        co_return co_await rt_->async_blocking(std::move(job));
    }

    boost::asio::awaitable<std::vector<std::string>> async_prune(std::chrono::system_clock::duration older_than) override {
        auto dir = o_.dir;
        auto job = [dir, older_than] { return prune_sessions(older_than, dir); };
        co_return co_await rt_->async_blocking(std::move(job));
    }

    boost::asio::awaitable<std::vector<LineageEdge>> async_lineage_edges(std::string session_id) override {
        auto dir = o_.dir;
        auto job = [dir, session_id] {
            std::vector<LineageEdge> out;
            for (const auto& m : list_persisted_sessions({.dir = dir})) {
                PersistedSession p;
                try {
                    p = load_session_file(m.path);
                } catch (const PersistenceError&) {
                    continue;  // removed or rewritten since the listing
                }
                const auto& parents = p.header.parent_session_ids;
                for (std::size_t i = 0; i < parents.size(); ++i)
                    if (p.header.id == session_id || parents[i] == session_id)
                        out.push_back(LineageEdge{parents[i], p.header.id, i, p.header.lineage_operator});
            }
            std::sort(out.begin(), out.end(), [](const LineageEdge& a, const LineageEdge& b) {
                return a.child_id != b.child_id ? a.child_id < b.child_id : a.position < b.position;
            });
            return out;
        };
        co_return co_await rt_->async_blocking(std::move(job));
    }

private:
    JsonlStoreOptions o_;
    async::Runtime* rt_;
};

}  // namespace

std::shared_ptr<SessionStore> make_jsonl_session_store(JsonlStoreOptions options) {
    return std::make_shared<JsonlStore>(std::move(options));
}

}  // namespace rath::persistence
