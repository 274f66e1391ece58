#pragma once
// A loopback OpenViking server for the adapter's tests: the HTTP endpoints of
// memory_flow.md §3.3 as OpenViking documents them (docs/en/api/*.md of
// volcengine/OpenViking), over an in-memory virtual filesystem of viking:// URIs. It
// answers in the documented envelope ({"status":"ok","result":...,"time":...} or
// {"status":"error","error":{"code","message","details"},"time":...}) with the
// documented HTTP status per error code, checks X-API-Key, and runs a commit's memory
// extraction as a background task that completes `commit_delay` after the commit
// (POST /api/v1/system/wait blocks until the queue is empty or its timeout passes).
// What the documents leave open is marked "assumption" below.
#include "tests/net/test_server.hpp"

#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rath::test {

class VikingServer {
public:
    struct Recorded {
        std::string method, target, body;
        std::map<std::string, std::string> headers;  // lower-case names
    };
    struct Fault {
        int status;
        std::string code;     // empty: a non-JSON body
        std::string message;
    };

    explicit VikingServer(std::string api_key = "", std::chrono::milliseconds commit_delay = std::chrono::milliseconds(300))
        : api_key_(std::move(api_key)), commit_delay_(commit_delay),
          server_([this](ServerConnection& c, const Request& r) { return handle(c, r); }) {}

    std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }

    // Seeds a file (wire URI); its parent directories exist implicitly.
    void put(const std::string& uri, const std::string& content) {
        std::lock_guard lk(mu_);
        files_[uri] = content;
    }
    std::optional<std::string> file(const std::string& uri) const {
        std::lock_guard lk(mu_);
        auto it = files_.find(uri);
        if (it == files_.end()) return std::nullopt;
        return it->second;
    }
    // The next request (any path but /health) is answered with this fault.
    void fail_next(Fault f) {
        std::lock_guard lk(mu_);
        fault_ = std::move(f);
    }
    // Every answer is delayed by this much (for client timeouts).
    void set_delay(std::chrono::milliseconds d) {
        std::lock_guard lk(mu_);
        delay_ = d;
    }
    std::vector<Recorded> requests() const {
        std::lock_guard lk(mu_);
        return log_;
    }
    std::vector<boost::json::object> messages(const std::string& session) const {
        std::lock_guard lk(mu_);
        auto it = sessions_.find(session);
        return it == sessions_.end() ? std::vector<boost::json::object>{} : it->second;
    }

private:
    struct Task {
        std::chrono::steady_clock::time_point done_at;
        std::string session_id, archive_uri;
        std::int64_t profile = 0, preferences = 0;
    };

    static std::string envelope_ok(boost::json::value result) {
        return boost::json::serialize(boost::json::object{{"status", "ok"}, {"result", std::move(result)}, {"time", 0.001}});
    }
    static std::string error_reply(int status, const std::string& code, const std::string& message) {
        std::string body = boost::json::serialize(boost::json::object{
            {"status", "error"},
            {"error", boost::json::object{{"code", code}, {"message", message}, {"details", boost::json::object{}}}},
            {"time", 0.001}});
        return response(status, body, "Content-Type: application/json\r\n");
    }
    static std::string ok(boost::json::value result) {
        return response(200, envelope_ok(std::move(result)), "Content-Type: application/json\r\n");
    }
    static std::string not_found(const std::string& uri) {
        return error_reply(404, "NOT_FOUND", "Resource not found: " + uri);
    }

    bool is_dir_locked(const std::string& uri) const {
        std::string prefix = uri;
        if (!prefix.ends_with('/')) prefix += '/';
        if (prefix == "viking://") return true;
        auto it = files_.lower_bound(prefix);
        return it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
    }
    // Direct children of a directory: files, and sub-directories (uri ending in '/').
    std::vector<boost::json::value> children_locked(const std::string& dir, bool recursive) const {
        std::string prefix = dir;
        if (!prefix.ends_with('/')) prefix += '/';
        std::set<std::string> dirs;
        std::vector<boost::json::value> out;
        for (auto it = files_.lower_bound(prefix); it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
            std::string rest = it->first.substr(prefix.size());
            // Sub-directories on the way (the published tree lists them before their files).
            for (auto slash = rest.find('/'); slash != std::string::npos; slash = rest.find('/', slash + 1)) {
                std::string rel = rest.substr(0, slash + 1);
                if (!recursive && rel.find('/') != rel.size() - 1) break;
                if (dirs.insert(rel).second) {
                    std::string name = rel.substr(0, rel.size() - 1);
                    name = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
                    out.push_back(boost::json::object{{"name", name}, {"size", 4096}, {"isDir", true},
                                                      {"rel_path", rel}, {"uri", prefix + rel}});
                }
                if (!recursive) break;
            }
            if (!recursive && rest.find('/') != std::string::npos) continue;
            std::string name = rest.substr(rest.rfind('/') == std::string::npos ? 0 : rest.rfind('/') + 1);
            out.push_back(boost::json::object{{"name", name}, {"size", it->second.size()}, {"isDir", false},
                                              {"rel_path", rest}, {"uri", it->first}});
        }
        return out;
    }

    // Score = the share of query words found in the content (assumption: any ranking
    // does; the real server uses embeddings).
    static double score_of(const std::string& query, const std::string& content) {
        std::vector<std::string> words;
        std::string w;
        for (char ch : query + " ") {
            if (std::isalnum(static_cast<unsigned char>(ch))) {
                w += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            } else if (!w.empty()) {
                words.push_back(w);
                w.clear();
            }
        }
        std::string lower;
        for (char ch : content) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (words.empty()) return 0.0;
        int hit = 0;
        for (const auto& x : words) hit += lower.find(x) != std::string::npos;
        return double(hit) / double(words.size());
    }

    boost::json::object find_locked(const boost::json::object& body) const {
        std::string query(body.at("query").as_string());
        std::string target(body.at("target_uri").as_string());
        auto limit = static_cast<std::size_t>(body.at("limit").to_number<std::int64_t>());
        boost::json::array memories, resources, skills;
        std::vector<std::pair<double, std::string>> scored;
        for (const auto& [uri, content] : files_)
            if (target.empty() || uri.compare(0, target.size(), target) == 0) {
                double s = score_of(query, content);
                if (s > 0) scored.emplace_back(s, uri);
            }
        std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first > b.first; });
        if (scored.size() > limit) scored.resize(limit);
        for (const auto& [s, uri] : scored) {
            const std::string& content = files_.at(uri);
            bool memory = uri.find("/memories/") != std::string::npos;
            boost::json::object item{{"context_type", memory ? "memory" : "resource"},
                                     {"uri", uri},
                                     {"level", 2},
                                     {"score", s},
                                     {"category", ""},
                                     {"match_reason", ""},
                                     {"abstract", content.substr(0, content.find('\n'))},
                                     {"overview", nullptr}};
            (memory ? memories : resources).push_back(std::move(item));
        }
        return {{"memories", memories}, {"resources", resources}, {"skills", skills},
                {"total", memories.size() + resources.size()}};
    }

    bool queue_empty_locked() const {
        auto now = std::chrono::steady_clock::now();
        for (const auto& [id, t] : tasks_)
            if (t.done_at > now) return false;
        return true;
    }

    boost::asio::awaitable<bool> handle(ServerConnection& c, const Request& req) {
        std::string reply;
        std::chrono::milliseconds delay{0};
        std::optional<double> wait_timeout;
        {
            std::lock_guard lk(mu_);
            Recorded rec{std::string(req.method_string()), std::string(req.target()), req.body(), {}};
            for (const auto& f : req) {
                std::string name(f.name_string());
                for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                rec.headers[name] = std::string(f.value());
            }
            log_.push_back(rec);
            delay = delay_;
            reply = route_locked(rec, wait_timeout);
        }
        if (delay.count() > 0) co_await c.sleep(delay);
        if (wait_timeout) {
            // POST /api/v1/system/wait: block until the task queue drains or the timeout.
            auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::milliseconds(static_cast<std::int64_t>(*wait_timeout * 1000));
            for (;;) {
                bool empty;
                {
                    std::lock_guard lk(mu_);
                    empty = queue_empty_locked();
                }
                if (empty) {
                    reply = ok(boost::json::object{});
                    break;
                }
                if (std::chrono::steady_clock::now() >= deadline) {
                    reply = error_reply(504, "DEADLINE_EXCEEDED", "wait_processed timed out");
                    break;
                }
                co_await c.sleep(std::chrono::milliseconds(10));
            }
        }
        co_return co_await c.write(reply);
    }

    std::string route_locked(const Recorded& r, std::optional<double>& wait_timeout) {
        auto u = boost::urls::parse_origin_form(r.target).value();
        std::string path(u.path());
        auto param = [&](std::string_view k) -> std::string {
            auto it = u.params().find(k);
            return it == u.params().end() ? std::string() : std::string((*it).value);
        };
        if (path == "/health") return response(200, R"({"status":"ok","healthy":true,"version":"0.4.11"})",
                                               "Content-Type: application/json\r\n");
        if (!api_key_.empty()) {
            auto it = r.headers.find("x-api-key");
            if (it == r.headers.end() || it->second != api_key_)
                return error_reply(401, "UNAUTHENTICATED", "Missing or invalid API key");
        }
        if (fault_) {
            Fault f = *fault_;
            fault_.reset();
            if (f.code.empty()) return response(f.status, "<html>bad gateway</html>", "Content-Type: text/html\r\n");
            return error_reply(f.status, f.code, f.message);
        }
        boost::json::object body;
        if (!r.body.empty() && r.headers.count("content-type") &&
            r.headers.at("content-type").starts_with("application/json")) {
            boost::system::error_code ec;
            auto v = boost::json::parse(r.body, ec);
            if (ec || !v.is_object()) return error_reply(400, "INVALID_ARGUMENT", "malformed JSON body");
            body = v.as_object();
        }
        auto valid_uri = [](const std::string& uri) { return uri.starts_with("viking://"); };

        if (r.method == "GET" && path == "/api/v1/fs/ls") {
            std::string uri = param("uri");
            if (!valid_uri(uri)) return error_reply(400, "INVALID_URI", "Invalid URI: " + uri);
            if (!is_dir_locked(uri)) return not_found(uri);
            auto kids = children_locked(uri, false);
            for (auto& k : kids) k.as_object().erase("rel_path");
            return ok(boost::json::array(kids.begin(), kids.end()));
        }
        if (r.method == "GET" && path == "/api/v1/fs/tree") {
            std::string uri = param("uri");
            if (!is_dir_locked(uri)) return not_found(uri);
            auto kids = children_locked(uri, true);
            return ok(boost::json::array(kids.begin(), kids.end()));
        }
        if (r.method == "GET" && path == "/api/v1/content/read") {
            std::string uri = param("uri");
            if (param("offset") != "0" || param("limit") != "-1")
                return error_reply(400, "INVALID_ARGUMENT", "this server reads whole files only");
            auto it = files_.find(uri);
            if (it == files_.end()) return is_dir_locked(uri) ? error_reply(400, "INVALID_ARGUMENT", "is a directory: " + uri) : not_found(uri);
            return ok(boost::json::string(it->second));
        }
        if (r.method == "GET" && (path == "/api/v1/content/abstract" || path == "/api/v1/content/overview")) {
            std::string uri = param("uri");
            // Documented: L0/L1 exist for directories only.
            if (!is_dir_locked(uri)) return files_.count(uri) ? error_reply(400, "INVALID_ARGUMENT", "not a directory: " + uri) : not_found(uri);
            return ok(boost::json::string((path.ends_with("abstract") ? "Abstract of " : "Overview of ") + uri));
        }
        if (r.method == "POST" && path == "/api/v1/content/write") {
            std::string uri(body.at("uri").as_string());
            std::string mode(body.at("mode").as_string());
            if (mode != "replace" && mode != "append" && mode != "create")
                return error_reply(400, "INVALID_ARGUMENT", "invalid mode: " + mode);
            auto it = files_.find(uri);
            if (it == files_.end()) return not_found(uri);
            std::string content(body.at("content").as_string());
            it->second = mode == "append" ? it->second + content : content;
            return ok(boost::json::object{{"uri", uri}, {"mode", mode}, {"written_bytes", content.size()},
                                          {"content_updated", true}});
        }
        if (r.method == "POST" && (path == "/api/v1/search/find" || path == "/api/v1/search/search"))
            return ok(find_locked(body));
        if (r.method == "POST" && path == "/api/v1/resources/temp_upload") {
            // multipart/form-data with one part named "file".
            auto ct = r.headers.count("content-type") ? r.headers.at("content-type") : std::string();
            auto b = ct.find("boundary=");
            if (b == std::string::npos) return error_reply(400, "INVALID_ARGUMENT", "expected multipart/form-data");
            std::string boundary = "--" + ct.substr(b + 9);
            auto start = r.body.find(boundary);
            auto head_end = r.body.find("\r\n\r\n", start);
            auto end = r.body.find("\r\n" + boundary, head_end);
            if (start == std::string::npos || head_end == std::string::npos || end == std::string::npos ||
                r.body.substr(start, head_end - start).find("name=\"file\"") == std::string::npos)
                return error_reply(400, "INVALID_ARGUMENT", "missing file part");
            std::string id = "upload_" + std::to_string(uploads_.size() + 1);
            uploads_[id] = r.body.substr(head_end + 4, end - head_end - 4);
            return ok(boost::json::object{{"temp_file_id", id}});
        }
        if (r.method == "POST" && path == "/api/v1/resources") {
            bool has_path = body.contains("path") && body.at("path").is_string();
            bool has_temp = body.contains("temp_file_id") && body.at("temp_file_id").is_string();
            if (has_path == has_temp)
                return error_reply(400, "INVALID_ARGUMENT", "exactly one of path and temp_file_id is required");
            std::string content, name;
            if (has_temp) {
                auto it = uploads_.find(std::string(body.at("temp_file_id").as_string()));
                if (it == uploads_.end()) return error_reply(404, "NOT_FOUND", "temp file not found");
                content = it->second;
                name = body.contains("source_name") ? std::string(body.at("source_name").as_string()) : "upload";
            } else {
                std::string p(body.at("path").as_string());
                if (!p.starts_with("http://") && !p.starts_with("https://"))
                    return error_reply(400, "INVALID_ARGUMENT", "host paths are not accepted: " + p);
                content = "fetched from " + p;
                name = p.substr(p.rfind('/') + 1);
            }
            std::string stem = name.substr(0, name.find('.'));
            std::string root = body.contains("to") && body.at("to").is_string() ? std::string(body.at("to").as_string())
                                                                                 : "viking://resources/" + stem;
            files_[root + "/" + name] = content;
            return ok(boost::json::object{{"status", "success"}, {"root_uri", root}});
        }
        if (r.method == "POST" && path == "/api/v1/sessions") {
            std::string id = body.contains("session_id") ? std::string(body.at("session_id").as_string()) : "s-new";
            // Assumption: creating an existing id is ALREADY_EXISTS (the adapter ignores errors here).
            if (sessions_.count(id)) return error_reply(409, "ALREADY_EXISTS", "Session already exists: " + id);
            sessions_[id];
            return ok(boost::json::object{{"session_id", id}, {"uri", "viking://session/" + id}});
        }
        if (path.starts_with("/api/v1/sessions/")) {
            std::string rest = path.substr(std::string("/api/v1/sessions/").size());
            std::string id = rest.substr(0, rest.find('/'));
            std::string action = rest.find('/') == std::string::npos ? "" : rest.substr(rest.find('/') + 1);
            auto s = sessions_.find(id);
            if (s == sessions_.end()) return error_reply(404, "NOT_FOUND", "Session not found: " + id);
            if (r.method == "POST" && action == "messages") {
                std::string role = body.contains("role") ? std::string(body.at("role").as_string()) : "";
                if (role != "user" && role != "assistant")
                    return error_reply(400, "INVALID_ARGUMENT", "role must be user or assistant");
                if (!body.contains("content") && !body.contains("parts"))
                    return error_reply(400, "INVALID_ARGUMENT", "content or parts is required");
                s->second.push_back(body);
                return ok(boost::json::object{{"session_id", id}, {"message_count", s->second.size()}});
            }
            if (r.method == "POST" && action == "commit") {
                if (s->second.empty())
                    return ok(boost::json::object{{"session_id", id}, {"status", "skipped"}, {"task_id", nullptr},
                                                  {"archive_uri", nullptr}, {"archived", false}, {"reason", "no_messages"}});
                std::string task_id = "task-" + std::to_string(tasks_.size() + 1);
                std::string archive = "viking://session/" + id + "/history/archive_" + std::to_string(tasks_.size() + 1);
                Task t{std::chrono::steady_clock::now() + commit_delay_, id, archive, 0, 0};
                for (const auto& m : s->second) (m.at("role").as_string() == "user" ? t.profile : t.preferences) += 1;
                tasks_[task_id] = t;
                s->second.clear();
                return ok(boost::json::object{{"session_id", id}, {"status", "accepted"}, {"task_id", task_id},
                                              {"archive_uri", archive}, {"archived", true}});
            }
        }
        if (r.method == "POST" && path == "/api/v1/system/wait") {
            wait_timeout = body.contains("timeout") && body.at("timeout").is_number() ? body.at("timeout").to_number<double>() : 3600.0;
            return {};
        }
        if (r.method == "GET" && path.starts_with("/api/v1/tasks/")) {
            auto it = tasks_.find(path.substr(std::string("/api/v1/tasks/").size()));
            if (it == tasks_.end()) return error_reply(404, "NOT_FOUND", "Task not found");
            const Task& t = it->second;
            bool done = std::chrono::steady_clock::now() >= t.done_at;
            boost::json::object task{{"task_id", it->first}, {"task_type", "session_commit"},
                                     {"status", done ? "completed" : "running"}};
            task["result"] = done ? boost::json::value(boost::json::object{
                                        {"session_id", t.session_id},
                                        {"archive_uri", t.archive_uri},
                                        {"memories_extracted", boost::json::object{{"profile", t.profile},
                                                                                   {"preferences", t.preferences}}}})
                                  : boost::json::value(nullptr);
            return ok(task);
        }
        return error_reply(404, "NOT_FOUND", "Not Found: " + r.method + " " + path);
    }

    mutable std::mutex mu_;
    std::string api_key_;
    std::chrono::milliseconds commit_delay_;
    std::chrono::milliseconds delay_{0};
    std::map<std::string, std::string> files_;
    std::map<std::string, std::string> uploads_;
    std::map<std::string, std::vector<boost::json::object>> sessions_;
    std::map<std::string, Task> tasks_;
    std::optional<Fault> fault_;
    std::vector<Recorded> log_;
    TestServer server_;  // last: its thread stops before the state above goes
};

}  // namespace rath::test
