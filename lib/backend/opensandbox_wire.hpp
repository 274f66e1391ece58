#pragma once
// The pure half of the `opensandbox` backend (backend_tools.md §4): what goes on the
// wire and how answers become results, as functions and small state machines that
// need no socket. The lifecycle API is alibaba/OpenSandbox specs/sandbox-lifecycle.yml
// (0.1.0), execd is specs/execd-api.yaml (1.0.0).
//
// Thread safety: pure functions, except workspace_volume (creates a directory). The
// decoder and the accumulator hold one stream's state; use each from one thread at a
// time. Errors: nothing throws except where stated (std::bad_alloc aside).
#include <rath/backend/payload.hpp>
#include <rath/backend/result.hpp>
#include <rath/backend/spec.hpp>
#include <rath/net/sse.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::backend::opensandbox {

inline constexpr int execd_port = 44772;
inline constexpr std::string_view api_key_header = "OPEN-SANDBOX-API-KEY";
inline constexpr std::string_view workspace_root = "/workspace";
inline constexpr std::string_view workspace_volume_name = "rath-workspace";
// [UPSTREAM] defaults (§4.3): the v1.0.2 image is no longer pullable.
inline constexpr std::string_view default_image = "opensandbox/code-interpreter:v1.1.0";
inline constexpr std::string_view default_entrypoint = "/opt/code-interpreter/code-interpreter.sh";

// ---- environment and configuration (§4.2) ----

// What availability and the domain are decided from; `config` is the config
// document's `backend` section (null when there is none).
struct Environment {
    std::optional<std::string> open_sandbox_domain;  // OPEN_SANDBOX_DOMAIN
    std::optional<std::string> legacy_domain;        // OPENSANDBOX_DOMAIN
    std::optional<std::string> api_key;              // OPEN_SANDBOX_API_KEY
    std::optional<std::string> strict_bind;          // RATH_OPENSANDBOX_STRICT_WORKSPACE_BIND
    bool sandbox_toml_exists = false;                // ~/.sandbox.toml
    boost::json::value config{};                     // config.json "backend" section
};

// The process environment, ~/.sandbox.toml and the config file (read once per call;
// no network, no subprocess). A config file that cannot be read counts as absent.
[[nodiscard]] Environment read_environment();

// Env first (OPEN_SANDBOX_DOMAIN, then OPENSANDBOX_DOMAIN), then the config's
// backend.default_provider entry's domain, else the first provider whose backend_kind
// is "opensandbox". nullopt when none gives a non-empty domain.
[[nodiscard]] std::optional<std::string> resolve_domain(const Environment& env);
// OPEN_SANDBOX_API_KEY, else the api_key of the provider resolve_domain took from config.
[[nodiscard]] std::optional<std::string> resolve_api_key(const Environment& env);
// A domain from env or config, or ~/.sandbox.toml (the server's local config) exists.
[[nodiscard]] bool is_available(const Environment& env);
// "1", "true", "yes" in any case.
[[nodiscard]] bool strict_bind(const Environment& env);

// "http://host:port" for a bare "host:port" domain (with `protocol`); a domain that
// already names its scheme is kept. No trailing slash.
[[nodiscard]] std::string base_url(std::string_view domain, std::string_view protocol = "http");

// ---- paths, commands, modes (§4.4, §4.5) ----

// Absolute paths as they are; "." and "./" are /workspace; a leading "./" is dropped and
// any other relative path goes under /workspace/. No ".." normalisation: the container
// is the boundary.
[[nodiscard]] std::string map_path(std::string_view path);
// POSIX shell quoting (Python's shlex.quote): safe words bare, anything else in single quotes.
[[nodiscard]] std::string shell_quote(std::string_view word);
// The command text execd runs with `sh -c`: a string as is, an argv joined quoted.
[[nodiscard]] std::string command_text(const Command& cmd);
// The argv local reports in a timeout message: ["/bin/sh", "-c", s] or the list.
[[nodiscard]] std::vector<std::string> display_argv(const Command& cmd);

// ---- kernel wake-up at open (§4.7) ----

// The IPython startup file written at open, under
// ${IPYTHONDIR:-$HOME/.ipython}/profile_default/startup/. When an ipykernel starts in
// the sandbox it flushes the kernel's shell stream once, so that a request already
// waiting on the shell socket is handled instead of stalling until the next event.
// Outside ipykernel (plain python, IPython without a kernel) it does nothing.
inline constexpr std::string_view kernel_wakeup_file = "00-rath-kernel-wakeup.py";
[[nodiscard]] std::string_view kernel_wakeup_source();
// The one shell command open runs: with `make_workspace` (no bind) it first creates
// /workspace (failing the command when it cannot), then writes the startup file (best
// effort: an image without a writable home still opens).
[[nodiscard]] std::string open_command(bool make_workspace);
// 0644 -> 644: execd reads the decimal digits of `mode` as octal digits.
[[nodiscard]] int mode_as_octal_digits(int mode) noexcept;
// Query-string escaping of one value (RFC 3986 unreserved kept).
[[nodiscard]] std::string url_escape(std::string_view s);

// POST /command body. `timeout_ms` is the server-side kill deadline.
[[nodiscard]] std::string run_command_body(std::string_view command, std::string_view cwd,
                                           std::optional<std::int64_t> timeout_ms,
                                           const std::optional<std::map<std::string, std::string>>& envs);
// POST /code body with the language's default context (execd keeps one per language).
[[nodiscard]] std::string run_code_body(std::string_view code, std::string_view language);
// Python source wrapped so that errors always reach stderr (§4.5): base64 of the
// original, compiled as "<rath>" and run as __main__; a traceback is printed and the
// exception re-raised (SystemExit passes).
[[nodiscard]] std::string wrap_python(std::string_view code);
// Languages a code run may name (§4.5).
[[nodiscard]] bool is_supported_language(std::string_view language) noexcept;

// A multipart/form-data body for POST /files/upload: a `metadata` part
// ({"path","owner":null,"group":null,"mode":<octal digits>}) and a `file` part.
struct Multipart {
    std::string content_type;  // with the boundary
    std::string body;
};
[[nodiscard]] Multipart upload_body(std::string_view path, std::string_view data, int mode, bool is_text,
                                    std::string_view boundary);

// ---- sandbox creation (§4.1, §4.3) ----

struct Volume {
    std::string name;
    std::string host_path;
    std::string mount_path;
    bool read_only = false;
    bool operator==(const Volume&) const = default;
};

// The workspace bind of §4.3: none without a working_dir; otherwise `~` expanded, made
// absolute against the process cwd, symlinks resolved (non-strict), created with its
// parents and checked to be a directory, mounted as rath-workspace at /workspace.
// Throws BackendError("BackendSandboxSpec.working_dir='<wd>' did not resolve to a
// directory (<resolved>)") or std::filesystem::filesystem_error when it cannot be made.
[[nodiscard]] std::vector<Volume> workspace_volume(const std::optional<SandboxSpec>& spec);

struct CreateRequest {
    std::string image{default_image};
    std::vector<std::string> entrypoint{std::string(default_entrypoint)};
    std::optional<std::map<std::string, std::string>> env;
    std::chrono::seconds timeout{600};
    std::map<std::string, std::string> resource_limits{{"cpu", "1"}, {"memory", "2Gi"}};
    std::map<std::string, std::string> metadata;
    std::vector<Volume> volumes;
};
// Spec fields over the defaults; the lifetime is clamped to the API's 60..86400 s.
[[nodiscard]] CreateRequest create_request(const std::optional<SandboxSpec>& spec, std::vector<Volume> volumes);
[[nodiscard]] std::string create_body(const CreateRequest& r);

// ---- answers ----

// A parsed ErrorResponse (or whatever the body held, as the message).
struct ApiError {
    int status = 0;
    std::string code;
    std::string message;
};
[[nodiscard]] ApiError parse_error(int status, std::string_view body);
// "<what> failed: HTTP <status> <code>: <message>"
[[nodiscard]] std::string describe(const ApiError& e, std::string_view what);

// §4.3: a create failure is a bind rejection when the status is 422, or the lower-cased
// message contains "422", "not under any allowed prefix", or both "host path" and
// "allowed prefix".
[[nodiscard]] bool is_bind_rejection(std::optional<int> status, std::string_view message);
// §4.7: a create failure worth another attempt: the message mentions timeout,
// connectivity, network or readtimeout (any case), and it is not a bind rejection.
[[nodiscard]] bool is_transient_create_failure(std::optional<int> status, std::string_view message);

enum class SandboxState { pending, running, pausing, paused, resuming, stopping, terminated, failed, unknown };
struct SandboxStatus {
    SandboxState state = SandboxState::unknown;
    std::string raw_state;  // as the server spelled it (unknown states are kept)
    std::string reason;
    std::string message;
};
[[nodiscard]] SandboxState parse_state(std::string_view s) noexcept;
// The `status` member of a Sandbox or CreateSandboxResponse; nullopt when absent.
[[nodiscard]] std::optional<SandboxStatus> parse_status(const boost::json::value& sandbox);
// Terminated or Failed: nothing will run there again.
[[nodiscard]] bool is_gone(SandboxState s) noexcept;

struct Endpoint {
    std::string url;  // <protocol>://<endpoint>, no trailing slash
    std::vector<std::pair<std::string, std::string>> headers;
};
// nullopt when the body is not an Endpoint.
[[nodiscard]] std::optional<Endpoint> parse_endpoint(std::string_view body, std::string_view protocol = "http");

// GET /files/search answer -> the direct children of `dir` (execd may return nested
// matches), is_dir from `type` when the server sends it, else from `mode` (which holds
// only permission digits, so false). Sorted by name. nullopt when not a JSON array.
[[nodiscard]] std::optional<FileEntries> parse_listing(std::string_view body, std::string_view dir);
// GET /files/info answer: true when the map has `path`.
[[nodiscard]] bool info_has(std::string_view body, std::string_view path);

// ---- execd event streams ----

struct ExecdEvent {
    std::string type;
    std::string text;
    std::optional<std::string> result_text;  // results["text/plain"] or results["text"]
    std::optional<std::string> ename, evalue;
    std::vector<std::string> traceback;
    std::optional<std::int64_t> execution_time;  // ms
};

// Turns the bytes of a /command or /code answer into events: `data: {json}` lines and
// bare JSON lines (net::SseParser in its execd dialect), one event per JSON line.
// Lines that are not JSON objects are skipped (as the SDK does). Throws
// net::SseError when a line or event exceeds `limits`.
class ExecdDecoder {
public:
    explicit ExecdDecoder(net::SseLimits limits = {});
    void feed(std::string_view bytes, const std::function<void(ExecdEvent&&)>& on_event);
    // End of the body: a final line without its terminator still counts.
    void finish(const std::function<void(ExecdEvent&&)>& on_event);

private:
    void emit(std::string_view data, const std::function<void(ExecdEvent&&)>& on_event);
    net::SseParser parser_;
};

// Parses one JSON event text; nullopt when it is not an object with a string `type`.
[[nodiscard]] std::optional<ExecdEvent> parse_event(std::string_view json);

// What one execution's events add up to.
class Execution {
public:
    // Bytes kept per stream; past it the rest is counted and dropped.
    explicit Execution(std::size_t max_output_bytes = std::size_t{16} << 20) : cap_(max_output_bytes) {}
    void add(const ExecdEvent& e);

    // execution_complete or error arrived: the execution is over.
    [[nodiscard]] bool finished() const noexcept { return complete_ || error_; }
    [[nodiscard]] const std::string& id() const noexcept { return id_; }
    [[nodiscard]] bool saw_output() const noexcept { return !out_.empty() || !err_.empty(); }
    [[nodiscard]] bool has_error() const noexcept { return error_; }

    // §4.5: stdout/stderr concatenated; exit code from an error event's evalue when it
    // is an integer (execd's CommandExecError), 0 when none; elapsed from
    // execution_complete or 0.
    [[nodiscard]] CommandResult command_result() const;
    // text = first result; error = the error event (ename: evalue, traceback) if any,
    // else stderr decoded when non-empty, else null.
    [[nodiscard]] CodeResult code_result() const;

private:
    void append(std::string& to, bool& truncated, std::string_view text) const;
    std::size_t cap_;
    std::string id_, out_, err_;
    bool out_trunc_ = false, err_trunc_ = false;
    std::optional<std::string> first_result_;
    bool error_ = false, complete_ = false;
    std::string ename_, evalue_;
    std::vector<std::string> traceback_;
    double elapsed_ms_ = 0;
};

// §4.7 empty-stdout race: run once more only when the command finished with exit 0 (or
// none), no error, no output at all, and its text contains "print(".
[[nodiscard]] bool should_rerun_empty(const Execution& e, std::string_view command) noexcept;

}  // namespace rath::backend::opensandbox
