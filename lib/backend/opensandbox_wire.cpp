#include "lib/backend/opensandbox_wire.hpp"

#include <rath/backend/decode.hpp>
#include <rath/backend/error.hpp>
#include <rath/config/paths.hpp>
#include <rath/config/store.hpp>

#include "net/base64.hpp"
#include "lib/text/json_parse.hpp"
#include "lib/text/pyrepr.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>

namespace rath::backend::opensandbox {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::optional<std::string> env_of(const char* name) {
    const char* v = std::getenv(name);
    if (!v) return std::nullopt;
    return std::string(v);
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

std::string trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return std::string(s);
}

const json::object* as_obj(const json::value* v) { return v && v->is_object() ? &v->get_object() : nullptr; }

std::optional<std::string> str_member(const json::object& o, std::string_view key) {
    auto* v = o.if_contains(key);
    if (!v || !v->is_string()) return std::nullopt;
    return std::string(v->get_string());
}

// The provider entry of the config's backend section that names the domain (§4.2).
const json::object* config_provider(const Environment& env) {
    auto* backend = as_obj(&env.config);
    if (!backend) return nullptr;
    auto* providers = as_obj(backend->if_contains("providers"));
    if (!providers) return nullptr;
    if (auto def = str_member(*backend, "default_provider")) {
        if (auto* p = as_obj(providers->if_contains(*def))) {
            auto d = str_member(*p, "domain");
            if (d && !trim(*d).empty()) return p;
        }
    }
    for (auto& [name, v] : *providers) {
        auto* p = as_obj(&v);
        if (!p) continue;
        auto kind = str_member(*p, "backend_kind");
        if (kind && *kind != "opensandbox") continue;
        auto d = str_member(*p, "domain");
        if (d && !trim(*d).empty()) return p;
    }
    return nullptr;
}

bool is_safe_shell_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '@' || c == '%' ||
           c == '+' || c == '=' || c == ':' || c == ',' || c == '.' || c == '/' || c == '-' || c == '_';
}

void put_map(json::object& o, std::string_view key, const std::map<std::string, std::string>& m) {
    json::object x;
    for (auto& [k, v] : m) x[k] = v;
    o[key] = std::move(x);
}

}  // namespace

// ---- environment ----

Environment read_environment() {
    Environment e;
    e.open_sandbox_domain = env_of("OPEN_SANDBOX_DOMAIN");
    e.legacy_domain = env_of("OPENSANDBOX_DOMAIN");
    e.api_key = env_of("OPEN_SANDBOX_API_KEY");
    e.strict_bind = env_of("RATH_OPENSANDBOX_STRICT_WORKSPACE_BIND");
    if (auto home = env_of("HOME"); home && !home->empty()) {
        std::error_code ec;
        e.sandbox_toml_exists = fs::exists(fs::path(*home) / ".sandbox.toml", ec);
    }
    try {
        auto doc = config::ConfigStore::load()->document();
        if (auto* b = doc.if_contains("backend")) e.config = *b;
    } catch (const std::exception&) {
        // An unreadable config gives no domain; availability falls back to env.
    }
    return e;
}

std::optional<std::string> resolve_domain(const Environment& env) {
    for (auto* v : {&env.open_sandbox_domain, &env.legacy_domain})
        if (*v && !trim(**v).empty()) return trim(**v);
    if (auto* p = config_provider(env)) return trim(*str_member(*p, "domain"));
    return std::nullopt;
}

std::optional<std::string> resolve_api_key(const Environment& env) {
    if (env.api_key && !env.api_key->empty()) return env.api_key;
    bool from_env = (env.open_sandbox_domain && !trim(*env.open_sandbox_domain).empty()) ||
                    (env.legacy_domain && !trim(*env.legacy_domain).empty());
    if (from_env) return std::nullopt;
    if (auto* p = config_provider(env)) return str_member(*p, "api_key");
    return std::nullopt;
}

bool is_available(const Environment& env) { return resolve_domain(env).has_value() || env.sandbox_toml_exists; }

bool strict_bind(const Environment& env) {
    if (!env.strict_bind) return false;
    auto v = lower(trim(*env.strict_bind));
    return v == "1" || v == "true" || v == "yes";
}

std::string base_url(std::string_view domain, std::string_view protocol) {
    std::string d = trim(domain);
    while (!d.empty() && d.back() == '/') d.pop_back();
    if (d.find("://") != std::string::npos) return d;
    return std::string(protocol) + "://" + d;
}

// ---- paths and commands ----

std::string map_path(std::string_view path) {
    if (!path.empty() && path.front() == '/') return std::string(path);
    if (path.empty() || path == "." || path == "./") return std::string(workspace_root);
    if (path.substr(0, 2) == "./") path.remove_prefix(2);
    return std::string(workspace_root) + "/" + std::string(path);
}

std::string shell_quote(std::string_view word) {
    if (word.empty()) return "''";
    if (std::all_of(word.begin(), word.end(), is_safe_shell_char)) return std::string(word);
    std::string out = "'";
    for (char c : word) {
        if (c == '\'')
            out += "'\"'\"'";
        else
            out += c;
    }
    out += '\'';
    return out;
}

std::string command_text(const Command& cmd) {
    if (auto* s = std::get_if<std::string>(&cmd)) return *s;
    std::string out;
    for (auto& w : std::get<std::vector<std::string>>(cmd)) {
        if (!out.empty()) out += ' ';
        out += shell_quote(w);
    }
    return out;
}

std::vector<std::string> display_argv(const Command& cmd) {
    if (auto* s = std::get_if<std::string>(&cmd)) return {"/bin/sh", "-c", *s};
    return std::get<std::vector<std::string>>(cmd);
}

std::string_view kernel_wakeup_source() {
    static constexpr std::string_view src =
        "# Written by rath when it opened this sandbox: wakes the ipykernel shell stream once\n"
        "# at kernel start, so that a request already waiting on the shell socket is handled.\n"
        "try:\n"
        "    import IPython as _rath_ipython\n"
        "    _rath_kernel = getattr(_rath_ipython.get_ipython(), 'kernel', None)\n"
        "    _rath_stream = getattr(_rath_kernel, 'shell_stream', None)\n"
        "    if _rath_stream is None:\n"
        "        _rath_stream = (getattr(_rath_kernel, 'shell_streams', None) or [None])[0]\n"
        "    if _rath_stream is not None:\n"
        "        _rath_stream.flush()\n"
        "except Exception:\n"
        "    pass\n";
    return src;
}

std::string open_command(bool make_workspace) {
    std::string cmd;
    if (make_workspace) cmd += "mkdir -p " + shell_quote(workspace_root) + " || exit 1\n";
    cmd += "d=\"${IPYTHONDIR:-$HOME/.ipython}/profile_default/startup\"\n";
    cmd += "{ mkdir -p \"$d\" && printf '%s' " + shell_quote(kernel_wakeup_source()) + " > \"$d/" +
           std::string(kernel_wakeup_file) + "\"; } 2>/dev/null\n";
    cmd += "exit 0\n";
    return cmd;
}

int mode_as_octal_digits(int mode) noexcept {
    int out = 0, scale = 1;
    mode &= 07777;
    while (mode > 0) {
        out += (mode & 7) * scale;
        scale *= 10;
        mode >>= 3;
    }
    return out;
}

std::string url_escape(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~' || c == '/') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

std::string run_command_body(std::string_view command, std::string_view cwd, std::optional<std::int64_t> timeout_ms,
                             const std::optional<std::map<std::string, std::string>>& envs) {
    json::object o;
    o["command"] = command;
    o["cwd"] = cwd;
    o["background"] = false;
    if (timeout_ms) o["timeout"] = *timeout_ms;
    if (envs) put_map(o, "envs", *envs);
    return json::serialize(o);
}

std::string run_code_body(std::string_view code, std::string_view language) {
    json::object o;
    o["code"] = code;
    json::object ctx;
    ctx["language"] = language;
    o["context"] = std::move(ctx);
    return json::serialize(o);
}

std::string wrap_python(std::string_view code) {
    // No user text appears in the prelude: the source travels as base64.
    return "import base64 as _rath_b64, sys as _rath_sys, traceback as _rath_tb\n"
           "_rath_src = _rath_b64.b64decode('" +
           net::detail::base64_encode(code) +
           "').decode('utf-8')\n"
           "_rath_globals = {'__name__': '__main__', '__builtins__': __builtins__}\n"
           "try:\n"
           "    exec(compile(_rath_src, '<rath>', 'exec'), _rath_globals)\n"
           "except SystemExit:\n"
           "    raise\n"
           "except BaseException:\n"
           "    _rath_tb.print_exc(file=_rath_sys.stderr)\n"
           "    _rath_sys.stderr.flush()\n"
           "    raise\n";
}

bool is_supported_language(std::string_view l) noexcept {
    return l == "bash" || l == "go" || l == "java" || l == "javascript" || l == "python" || l == "typescript";
}

Multipart upload_body(std::string_view path, std::string_view data, int mode, bool is_text, std::string_view boundary) {
    json::object meta;
    meta["path"] = path;
    meta["owner"] = nullptr;
    meta["group"] = nullptr;
    meta["mode"] = mode_as_octal_digits(mode);
    Multipart m;
    m.content_type = "multipart/form-data; boundary=" + std::string(boundary);
    std::string& b = m.body;
    b.reserve(data.size() + 512);
    b += "--";
    b += boundary;
    b += "\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
         "Content-Type: application/json\r\n\r\n";
    b += json::serialize(meta);
    b += "\r\n--";
    b += boundary;
    // The file name is the path, as the SDK sends it; quotes and line breaks would end
    // the header, so they are escaped the way browsers do.
    std::string fname;
    for (char c : path) {
        if (c == '"')
            fname += "%22";
        else if (c == '\r')
            fname += "%0D";
        else if (c == '\n')
            fname += "%0A";
        else
            fname += c;
    }
    b += "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + fname + "\"\r\n";
    b += is_text ? "Content-Type: text/plain; charset=utf-8\r\n\r\n" : "Content-Type: application/octet-stream\r\n\r\n";
    b += data;
    b += "\r\n--";
    b += boundary;
    b += "--\r\n";
    return m;
}

// ---- creation ----

std::vector<Volume> workspace_volume(const std::optional<SandboxSpec>& spec) {
    if (!spec || !spec->working_dir) return {};
    const std::string& wd = *spec->working_dir;
    fs::path p = config::expand_user(wd);
    p = fs::absolute(p);
    fs::path resolved = fs::weakly_canonical(p);
    std::error_code ec;
    fs::create_directories(resolved, ec);
    if (!fs::is_directory(resolved))
        throw BackendError("BackendSandboxSpec.working_dir=" + rath::detail::pyrepr(wd) +
                           " did not resolve to a directory (" + resolved.string() + ")");
    return {Volume{std::string(workspace_volume_name), resolved.string(), std::string(workspace_root), false}};
}

CreateRequest create_request(const std::optional<SandboxSpec>& spec, std::vector<Volume> volumes) {
    CreateRequest r;
    if (spec) {
        if (spec->image && !spec->image->empty()) r.image = *spec->image;
        if (spec->entrypoint && !spec->entrypoint->empty()) r.entrypoint = *spec->entrypoint;
        if (spec->env) r.env = spec->env;
        if (spec->timeout) {
            double s = spec->timeout->count();
            s = std::clamp(s, 60.0, 86400.0);
            r.timeout = std::chrono::seconds(static_cast<long long>(s));
        }
    }
    r.volumes = std::move(volumes);
    return r;
}

std::string create_body(const CreateRequest& r) {
    json::object o;
    json::object image;
    image["uri"] = r.image;
    o["image"] = std::move(image);
    o["timeout"] = static_cast<std::int64_t>(r.timeout.count());
    put_map(o, "resourceLimits", r.resource_limits);
    json::array ep;
    for (auto& a : r.entrypoint) ep.emplace_back(a);
    o["entrypoint"] = std::move(ep);
    if (r.env) put_map(o, "env", *r.env);
    if (!r.metadata.empty()) put_map(o, "metadata", r.metadata);
    if (!r.volumes.empty()) {
        json::array vs;
        for (auto& v : r.volumes) {
            json::object vo;
            vo["name"] = v.name;
            json::object host;
            host["path"] = v.host_path;
            vo["host"] = std::move(host);
            vo["mountPath"] = v.mount_path;
            vo["readOnly"] = v.read_only;
            vs.emplace_back(std::move(vo));
        }
        o["volumes"] = std::move(vs);
    }
    return json::serialize(o);
}

// ---- answers ----

ApiError parse_error(int status, std::string_view body) {
    ApiError e;
    e.status = status;
    if (auto v = rath::detail::parse_json(body); v && v->is_object()) {
        auto& o = v->get_object();
        if (auto c = str_member(o, "code")) e.code = *c;
        if (auto m = str_member(o, "message")) e.message = *m;
        if (auto d = str_member(o, "detail"); d && e.message.empty()) e.message = *d;  // FastAPI's form
        if (!e.code.empty() || !e.message.empty()) return e;
    }
    e.message = trim(body.substr(0, std::min<std::size_t>(body.size(), 512)));
    return e;
}

std::string describe(const ApiError& e, std::string_view what) {
    std::string s = std::string(what) + " failed: HTTP " + std::to_string(e.status);
    if (!e.code.empty()) s += " " + e.code;
    if (!e.message.empty()) s += ": " + e.message;
    return s;
}

bool is_bind_rejection(std::optional<int> status, std::string_view message) {
    if (status && *status == 422) return true;
    auto m = lower(message);
    if (m.find("422") != std::string::npos) return true;
    if (m.find("not under any allowed prefix") != std::string::npos) return true;
    return m.find("host path") != std::string::npos && m.find("allowed prefix") != std::string::npos;
}

bool is_transient_create_failure(std::optional<int> status, std::string_view message) {
    if (is_bind_rejection(status, message)) return false;
    auto m = lower(message);
    for (auto w : {"timeout", "timed out", "connectivity", "network", "readtimeout", "connect"})
        if (m.find(w) != std::string::npos) return true;
    return false;
}

SandboxState parse_state(std::string_view s) noexcept {
    if (s == "Pending") return SandboxState::pending;
    if (s == "Running") return SandboxState::running;
    if (s == "Pausing") return SandboxState::pausing;
    if (s == "Paused") return SandboxState::paused;
    if (s == "Resuming") return SandboxState::resuming;
    if (s == "Stopping") return SandboxState::stopping;
    if (s == "Terminated") return SandboxState::terminated;
    if (s == "Failed") return SandboxState::failed;
    return SandboxState::unknown;
}

std::optional<SandboxStatus> parse_status(const json::value& sandbox) {
    auto* o = as_obj(&sandbox);
    if (!o) return std::nullopt;
    auto* st = as_obj(o->if_contains("status"));
    if (!st) return std::nullopt;
    SandboxStatus s;
    s.raw_state = str_member(*st, "state").value_or("");
    s.state = parse_state(s.raw_state);
    s.reason = str_member(*st, "reason").value_or("");
    s.message = str_member(*st, "message").value_or("");
    return s;
}

bool is_gone(SandboxState s) noexcept { return s == SandboxState::terminated || s == SandboxState::failed; }

std::optional<Endpoint> parse_endpoint(std::string_view body, std::string_view protocol) {
    auto v = rath::detail::parse_json(body);
    if (!v || !v->is_object()) return std::nullopt;
    auto ep = str_member(v->get_object(), "endpoint");
    if (!ep || trim(*ep).empty()) return std::nullopt;
    Endpoint e;
    e.url = base_url(*ep, protocol);
    if (auto* h = as_obj(v->get_object().if_contains("headers")))
        for (auto& [k, hv] : *h)
            if (hv.is_string()) e.headers.emplace_back(std::string(k), std::string(hv.get_string()));
    return e;
}

std::optional<FileEntries> parse_listing(std::string_view body, std::string_view dir) {
    auto v = rath::detail::parse_json(body);
    if (!v || !v->is_array()) return std::nullopt;
    std::string base(dir);
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    const std::string prefix = base == "/" ? base : base + "/";
    FileEntries out;
    for (auto& item : v->get_array()) {
        auto* o = as_obj(&item);
        if (!o) continue;
        auto path = str_member(*o, "path");
        if (!path || path->size() <= prefix.size() || path->compare(0, prefix.size(), prefix) != 0) continue;
        std::string name = path->substr(prefix.size());
        while (!name.empty() && name.back() == '/') name.pop_back();
        if (name.empty() || name.find('/') != std::string::npos) continue;  // nested match
        bool is_dir = false;
        if (auto t = str_member(*o, "type")) {
            is_dir = *t == "directory";
        } else if (auto* m = o->if_contains("mode"); m && m->is_int64()) {
            // Octal digits written in decimal: only a server that sends the type bits
            // (040000 -> 40000 and more) can say "directory" this way.
            is_dir = m->get_int64() / 10000 % 10 == 4 && m->get_int64() >= 40000;
        }
        out.entries.push_back(FileEntry{name, *path, is_dir});
    }
    std::sort(out.entries.begin(), out.entries.end(), [](auto& a, auto& b) { return a.name < b.name; });
    out.entries.erase(std::unique(out.entries.begin(), out.entries.end(),
                                  [](auto& a, auto& b) { return a.name == b.name; }),
                      out.entries.end());
    return out;
}

bool info_has(std::string_view body, std::string_view path) {
    auto v = rath::detail::parse_json(body);
    return v && v->is_object() && v->get_object().contains(path);
}

// ---- events ----

std::optional<ExecdEvent> parse_event(std::string_view text) {
    auto v = rath::detail::parse_json(text);
    if (!v || !v->is_object()) return std::nullopt;
    auto& o = v->get_object();
    auto type = str_member(o, "type");
    if (!type) return std::nullopt;
    ExecdEvent e;
    e.type = std::move(*type);
    e.text = str_member(o, "text").value_or("");
    if (auto* r = as_obj(o.if_contains("results"))) {
        if (auto t = str_member(*r, "text/plain"))
            e.result_text = std::move(t);
        else if (auto t2 = str_member(*r, "text"))
            e.result_text = std::move(t2);
    }
    if (auto* err = as_obj(o.if_contains("error"))) {
        e.ename = str_member(*err, "ename").value_or("");
        e.evalue = str_member(*err, "evalue").value_or("");
        if (auto* tb = err->if_contains("traceback")) {
            if (tb->is_array()) {
                for (auto& line : tb->get_array())
                    e.traceback.push_back(line.is_string() ? std::string(line.get_string()) : json::serialize(line));
            } else if (tb->is_string()) {
                e.traceback.emplace_back(tb->get_string());
            }
        }
    }
    if (auto* t = o.if_contains("execution_time")) {
        if (t->is_int64())
            e.execution_time = t->get_int64();
        else if (t->is_uint64())
            e.execution_time = static_cast<std::int64_t>(t->get_uint64());
        else if (t->is_double())
            e.execution_time = static_cast<std::int64_t>(t->get_double());
    }
    return e;
}

ExecdDecoder::ExecdDecoder(net::SseLimits limits) : parser_(limits) { parser_.accept_bare_json_lines(true); }

void ExecdDecoder::emit(std::string_view data, const std::function<void(ExecdEvent&&)>& on_event) {
    // One JSON object per line (JSON text holds no raw newline).
    while (!data.empty()) {
        auto nl = data.find('\n');
        auto line = data.substr(0, nl);
        if (auto e = parse_event(line)) on_event(std::move(*e));
        if (nl == std::string_view::npos) break;
        data.remove_prefix(nl + 1);
    }
}

void ExecdDecoder::feed(std::string_view bytes, const std::function<void(ExecdEvent&&)>& on_event) {
    parser_.feed(bytes, [&](net::SseEvent& e) { emit(e.data, on_event); });
}

void ExecdDecoder::finish(const std::function<void(ExecdEvent&&)>& on_event) {
    parser_.finish([&](net::SseEvent& e) { emit(e.data, on_event); });
}

void Execution::append(std::string& to, bool& truncated, std::string_view text) const {
    if (to.size() >= cap_) {
        truncated = truncated || !text.empty();
        return;
    }
    std::size_t room = cap_ - to.size();
    if (text.size() > room) {
        to.append(text.substr(0, room));
        truncated = true;
    } else {
        to.append(text);
    }
}

void Execution::add(const ExecdEvent& e) {
    if (e.type == "init") {
        id_ = e.text;
    } else if (e.type == "stdout") {
        append(out_, out_trunc_, e.text);
    } else if (e.type == "stderr") {
        append(err_, err_trunc_, e.text);
    } else if (e.type == "result") {
        if (!first_result_ && e.result_text) first_result_ = e.result_text;
    } else if (e.type == "error") {
        error_ = true;
        ename_ = e.ename.value_or("");
        evalue_ = e.evalue.value_or("");
        traceback_ = e.traceback;
    } else if (e.type == "execution_complete") {
        complete_ = true;
        elapsed_ms_ = static_cast<double>(e.execution_time.value_or(0));
    }
    // status, ping, execution_count and unknown types carry nothing a result needs.
}

CommandResult Execution::command_result() const {
    CommandResult r;
    r.stdout_data = out_;
    r.stderr_data = err_;
    r.stdout_truncated = out_trunc_;
    r.stderr_truncated = err_trunc_;
    r.elapsed_ms = elapsed_ms_;
    if (error_) {
        int code = 0;
        auto* b = evalue_.data();
        auto [p, ec] = std::from_chars(b, b + evalue_.size(), code);
        // A start failure or a signal has no integer value: report it like a shell would.
        if (ec == std::errc() && p == b + evalue_.size())
            r.exit_code = code;
        else {
            r.exit_code = evalue_.find("signal: killed") != std::string::npos ? -9 : 1;
            if (!evalue_.empty()) {
                if (!r.stderr_data.empty() && r.stderr_data.back() != '\n') r.stderr_data += '\n';
                r.stderr_data += evalue_;
            }
        }
    }
    return r;
}

CodeResult Execution::code_result() const {
    CodeResult r;
    r.text = first_result_;
    r.stdout_data = out_;
    r.stderr_data = err_;
    r.stdout_truncated = out_trunc_;
    r.stderr_truncated = err_trunc_;
    if (error_) {
        std::string msg = ename_;
        if (!evalue_.empty()) msg += (msg.empty() ? "" : ": ") + evalue_;
        if (msg.empty()) msg = "code execution failed";
        r.error = msg;
    } else if (!err_.empty()) {
        r.error = decode_output(err_);
    }
    return r;
}

bool should_rerun_empty(const Execution& e, std::string_view command) noexcept {
    if (e.has_error() || e.saw_output()) return false;
    return command.find("print(") != std::string_view::npos;
}

}  // namespace rath::backend::opensandbox
