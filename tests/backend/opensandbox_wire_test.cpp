// The pure half of the opensandbox backend (backend_tools.md §4): path and payload
// mapping, the bind and retry classifiers, the volume builder, domain resolution,
// answer parsing and the execd event stream state machine. No sockets.
#include "lib/backend/opensandbox_wire.hpp"

#include "lib/text/json_parse.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

#include <rath/backend/error.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace os = rath::backend::opensandbox;
namespace rb = rath::backend;
namespace fs = std::filesystem;

namespace {

boost::json::object parsed(const std::string& text) {
    auto v = rath::detail::parse_json(text);
    REQUIRE(v);
    REQUIRE(v->is_object());
    return v->get_object();
}

std::vector<os::ExecdEvent> decode_all(std::string_view body, std::size_t step) {
    std::vector<os::ExecdEvent> out;
    os::ExecdDecoder d;
    for (std::size_t i = 0; i < body.size(); i += step)
        d.feed(body.substr(i, step), [&](os::ExecdEvent&& e) { out.push_back(std::move(e)); });
    d.finish([&](os::ExecdEvent&& e) { out.push_back(std::move(e)); });
    return out;
}

struct TempDir {
    fs::path p;
    TempDir() {
        std::string t = (fs::temp_directory_path() / "rath-os-wire-XXXXXX").string();
        REQUIRE(::mkdtemp(t.data()));
        p = t;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(p, ec);
    }
};

}  // namespace

TEST_CASE("paths map into the container workspace without normalisation") {
    CHECK(os::map_path("/etc/passwd") == "/etc/passwd");
    CHECK(os::map_path(".") == "/workspace");
    CHECK(os::map_path("./") == "/workspace");
    CHECK(os::map_path("") == "/workspace");
    CHECK(os::map_path("./a/b.txt") == "/workspace/a/b.txt");
    CHECK(os::map_path("a.txt") == "/workspace/a.txt");
    CHECK(os::map_path("../x") == "/workspace/../x");
}

TEST_CASE("an argv is joined into one POSIX-shell-quoted command text") {
    CHECK(os::shell_quote("plain-word_1.txt") == "plain-word_1.txt");
    CHECK(os::shell_quote("") == "''");
    CHECK(os::shell_quote("a b") == "'a b'");
    CHECK(os::shell_quote("it's") == "'it'\"'\"'s'");
    CHECK(os::command_text(rb::Command{std::string("echo $HOME | wc")}) == "echo $HOME | wc");
    CHECK(os::command_text(rb::Command{std::vector<std::string>{"python3", "-c", "print('hi')"}}) ==
          "python3 -c 'print('\"'\"'hi'\"'\"')'");
    CHECK(os::display_argv(rb::Command{std::string("sleep 5")}) == std::vector<std::string>{"/bin/sh", "-c", "sleep 5"});
}

TEST_CASE("a file mode is sent as its octal digits written in decimal") {
    CHECK(os::mode_as_octal_digits(0644) == 644);
    CHECK(os::mode_as_octal_digits(0755) == 755);
    CHECK(os::mode_as_octal_digits(0600) == 600);
    CHECK(os::mode_as_octal_digits(04755) == 4755);
    CHECK(os::mode_as_octal_digits(0) == 0);
}

TEST_CASE("the command body carries cwd, a millisecond timeout and the environment") {
    auto o = parsed(os::run_command_body("ls -la", "/workspace/sub", 1500, std::map<std::string, std::string>{{"A", "1"}}));
    CHECK(o.at("command").as_string() == "ls -la");
    CHECK(o.at("cwd").as_string() == "/workspace/sub");
    CHECK(o.at("background").as_bool() == false);
    CHECK(o.at("timeout").as_int64() == 1500);
    CHECK(o.at("envs").as_object().at("A").as_string() == "1");
    auto bare = parsed(os::run_command_body("true", "/workspace", std::nullopt, std::nullopt));
    CHECK_FALSE(bare.contains("timeout"));
    CHECK_FALSE(bare.contains("envs"));
    auto code = parsed(os::run_code_body("1+1", "python"));
    CHECK(code.at("code").as_string() == "1+1");
    CHECK(code.at("context").as_object().at("language").as_string() == "python");
    CHECK_FALSE(code.at("context").as_object().contains("id"));
}

TEST_CASE("python code is wrapped so that its source travels as base64 and errors reach stderr") {
    auto w = os::wrap_python("print('x')\nraise ValueError('boom')");
    CHECK(w.find("print('x')") == std::string::npos);
    CHECK(w.find("'<rath>'") != std::string::npos);
    CHECK(w.find("__main__") != std::string::npos);
    CHECK(w.find("except SystemExit") != std::string::npos);
    CHECK(os::is_supported_language("python"));
    CHECK(os::is_supported_language("bash"));
    CHECK_FALSE(os::is_supported_language("ruby"));
    CHECK_FALSE(os::is_supported_language("Python"));
}

TEST_CASE("the upload body has a metadata part with octal-digit mode and then the file part") {
    auto m = os::upload_body("/workspace/a \"b\".txt", std::string("\x00\x01", 2), 0644, false, "BOUND");
    CHECK(m.content_type == "multipart/form-data; boundary=BOUND");
    auto meta_at = m.body.find("name=\"metadata\"");
    auto file_at = m.body.find("name=\"file\"");
    REQUIRE(meta_at != std::string::npos);
    REQUIRE(file_at != std::string::npos);
    CHECK(meta_at < file_at);
    CHECK(m.body.find("{\"path\":\"/workspace/a \\\"b\\\".txt\",\"owner\":null,\"group\":null,\"mode\":644}") !=
          std::string::npos);
    CHECK(m.body.find("filename=\"/workspace/a %22b%22.txt\"") != std::string::npos);
    CHECK(m.body.find("application/octet-stream\r\n\r\n" + std::string("\x00\x01", 2) + "\r\n--BOUND--\r\n") !=
          std::string::npos);
    CHECK(m.body.rfind("--BOUND\r\n", 0) == 0);
    auto t = os::upload_body("/workspace/t.txt", "hi", 0600, true, "B");
    CHECK(t.body.find("text/plain; charset=utf-8") != std::string::npos);
}

TEST_CASE("a create failure is a bind rejection by status 422 or by the allowlist message") {
    CHECK(os::is_bind_rejection(422, ""));
    CHECK(os::is_bind_rejection(std::nullopt, "Server said HTTP 422 Unprocessable"));
    CHECK(os::is_bind_rejection(400, "host path '/x' is not under any allowed prefix"));
    CHECK(os::is_bind_rejection(std::nullopt, "Host path /x must be under an allowed prefix"));
    CHECK_FALSE(os::is_bind_rejection(400, "image not found"));
    CHECK_FALSE(os::is_bind_rejection(500, "host path exists"));
    CHECK_FALSE(os::is_bind_rejection(std::nullopt, "connection refused"));
}

TEST_CASE("transient create failures are retried but bind rejections never") {
    CHECK(os::is_transient_create_failure(500, "internal error: ReadTimeout while pulling"));
    CHECK(os::is_transient_create_failure(std::nullopt, "HTTP connect error: Connection refused"));
    CHECK(os::is_transient_create_failure(std::nullopt, "network unreachable"));
    CHECK_FALSE(os::is_transient_create_failure(400, "image uri is required"));
    CHECK_FALSE(os::is_transient_create_failure(422, "timeout"));
    CHECK_FALSE(os::is_transient_create_failure(400, "host path not under any allowed prefix (timeout)"));
}

TEST_CASE("no working_dir requests no volume") {
    CHECK(os::workspace_volume(std::nullopt).empty());
    CHECK(os::workspace_volume(rb::SandboxSpec{}).empty());
}

TEST_CASE("a nested working_dir is created and bound as rath-workspace at /workspace") {
    TempDir t;
    auto nested = t.p / "a" / "b";
    auto v = os::workspace_volume(rb::SandboxSpec::from_working_dir(nested.string()));
    REQUIRE(v.size() == 1);
    CHECK(v[0].name == "rath-workspace");
    CHECK(v[0].mount_path == "/workspace");
    CHECK(v[0].host_path == fs::canonical(nested).string());
    CHECK(fs::is_directory(nested));
    // A file where the directory should be is refused.
    std::ofstream(t.p / "file") << "x";
    CHECK_THROWS_AS((void)os::workspace_volume(rb::SandboxSpec::from_working_dir((t.p / "file").string())),
                    rb::BackendError);
}

TEST_CASE("a relative working_dir resolves against the process cwd") {
    auto v = os::workspace_volume(rb::SandboxSpec::from_working_dir("."));
    REQUIRE(v.size() == 1);
    CHECK(v[0].host_path == fs::canonical(fs::current_path()).string());
}

TEST_CASE("the create request takes spec fields over the defaults and clamps the lifetime") {
    auto d = os::create_request(std::nullopt, {});
    CHECK(d.image == "opensandbox/code-interpreter:v1.1.0");
    CHECK(d.entrypoint == std::vector<std::string>{"/opt/code-interpreter/code-interpreter.sh"});
    CHECK(d.timeout == std::chrono::seconds(600));
    rb::SandboxSpec s;
    s.image = "rootfs:minimal";
    s.entrypoint = std::vector<std::string>{"tail", "-f", "/dev/null"};
    s.env = std::map<std::string, std::string>{{"K", "V"}};
    s.timeout = std::chrono::duration<double>(5);
    auto r = os::create_request(s, {os::Volume{"rath-workspace", "/h", "/workspace", false}});
    CHECK(r.image == "rootfs:minimal");
    CHECK(r.timeout == std::chrono::seconds(60));
    s.timeout = std::chrono::duration<double>(1e6);
    CHECK(os::create_request(s, {}).timeout == std::chrono::seconds(86400));
    auto o = parsed(os::create_body(r));
    CHECK(o.at("image").as_object().at("uri").as_string() == "rootfs:minimal");
    CHECK(o.at("timeout").as_int64() == 60);
    CHECK(o.at("entrypoint").as_array().size() == 3);
    CHECK(o.at("env").as_object().at("K").as_string() == "V");
    CHECK(o.at("resourceLimits").as_object().at("memory").as_string() == "2Gi");
    auto& vol = o.at("volumes").as_array().at(0).as_object();
    CHECK(vol.at("name").as_string() == "rath-workspace");
    CHECK(vol.at("host").as_object().at("path").as_string() == "/h");
    CHECK(vol.at("mountPath").as_string() == "/workspace");
    CHECK(vol.at("readOnly").as_bool() == false);
    CHECK_FALSE(parsed(os::create_body(d)).contains("volumes"));
}

TEST_CASE("the domain comes from env before config, and config prefers the default provider") {
    os::Environment env;
    CHECK_FALSE(os::resolve_domain(env));
    CHECK_FALSE(os::is_available(env));
    env.sandbox_toml_exists = true;
    CHECK(os::is_available(env));
    env.sandbox_toml_exists = false;
    env.config = boost::json::parse(R"({"default_provider":"b","providers":{
        "a":{"backend_kind":"opensandbox","domain":"a:1","api_key":"ka"},
        "l":{"backend_kind":"local","domain":"l:1"},
        "b":{"backend_kind":"opensandbox","domain":"b:2","api_key":"kb"}}})");
    CHECK(os::resolve_domain(env) == std::optional<std::string>("b:2"));
    CHECK(os::resolve_api_key(env) == std::optional<std::string>("kb"));
    CHECK(os::is_available(env));
    env.config.as_object()["default_provider"] = "missing";
    CHECK(os::resolve_domain(env) == std::optional<std::string>("a:1"));
    env.legacy_domain = "legacy:3";
    CHECK(os::resolve_domain(env) == std::optional<std::string>("legacy:3"));
    CHECK_FALSE(os::resolve_api_key(env));  // a key from config never goes to an env domain
    env.open_sandbox_domain = "  ";
    CHECK(os::resolve_domain(env) == std::optional<std::string>("legacy:3"));
    env.open_sandbox_domain = "new:4";
    env.api_key = "k";
    CHECK(os::resolve_domain(env) == std::optional<std::string>("new:4"));
    CHECK(os::resolve_api_key(env) == std::optional<std::string>("k"));
    CHECK(os::base_url("new:4") == "http://new:4");
    CHECK(os::base_url("https://x.example/") == "https://x.example");
}

TEST_CASE("strict workspace bind reads 1 true yes in any case") {
    os::Environment env;
    CHECK_FALSE(os::strict_bind(env));
    for (auto v : {"1", "true", "YES", " True "}) {
        env.strict_bind = v;
        CHECK(os::strict_bind(env));
    }
    for (auto v : {"no", "0", "", "on"}) {
        env.strict_bind = v;
        CHECK_FALSE(os::strict_bind(env));
    }
}

TEST_CASE("states parse with unknown ones kept and only Terminated and Failed count as gone") {
    CHECK(os::parse_state("Running") == os::SandboxState::running);
    CHECK(os::parse_state("Resuming") == os::SandboxState::resuming);
    CHECK(os::parse_state("Hibernating") == os::SandboxState::unknown);
    auto st = os::parse_status(boost::json::parse(
        R"({"id":"x","status":{"state":"Hibernating","reason":"r","message":"m"}})"));
    REQUIRE(st);
    CHECK(st->raw_state == "Hibernating");
    CHECK(st->state == os::SandboxState::unknown);
    CHECK_FALSE(os::is_gone(st->state));
    CHECK(os::is_gone(os::SandboxState::failed));
    CHECK(os::is_gone(os::SandboxState::terminated));
    CHECK_FALSE(os::parse_status(boost::json::parse(R"({"id":"x"})")));
}

TEST_CASE("endpoints, errors, listings and info answers parse") {
    auto ep = os::parse_endpoint(R"({"endpoint":"127.0.0.1:5000/sandboxes/ab/port/44772","headers":{"X-EXECD-ACCESS-TOKEN":"t"}})");
    REQUIRE(ep);
    CHECK(ep->url == "http://127.0.0.1:5000/sandboxes/ab/port/44772");
    REQUIRE(ep->headers.size() == 1);
    CHECK(ep->headers[0].second == "t");
    CHECK_FALSE(os::parse_endpoint(R"({"headers":{}})"));
    CHECK_FALSE(os::parse_endpoint("not json"));

    auto e = os::parse_error(404, R"({"code":"NOT_FOUND","message":"sandbox x not found"})");
    CHECK(e.code == "NOT_FOUND");
    CHECK(os::describe(e, "GET sandbox") == "GET sandbox failed: HTTP 404 NOT_FOUND: sandbox x not found");
    CHECK(os::parse_error(502, "Bad Gateway\n").message == "Bad Gateway");

    auto l = os::parse_listing(R"([
        {"path":"/workspace/c","type":"file","mode":644},
        {"path":"/workspace/a","type":"directory","mode":755},
        {"path":"/workspace/a/nested.txt","type":"file","mode":644},
        {"path":"/workspace/b","mode":644},
        {"path":"/elsewhere/z","mode":644}])",
                               "/workspace/");
    REQUIRE(l);
    REQUIRE(l->entries.size() == 3);
    CHECK(l->entries[0] == rb::FileEntry{"a", "/workspace/a", true});
    CHECK(l->entries[1] == rb::FileEntry{"b", "/workspace/b", false});
    CHECK(l->entries[2] == rb::FileEntry{"c", "/workspace/c", false});
    CHECK_FALSE(os::parse_listing("{}", "/workspace"));

    CHECK(os::info_has(R"({"/workspace/a":{"path":"/workspace/a"}})", "/workspace/a"));
    CHECK_FALSE(os::info_has(R"({"/workspace/a":{}})", "/workspace/b"));
    CHECK_FALSE(os::info_has("[]", "/workspace/a"));
}

TEST_CASE("execd streams decode the same in both framings split at every byte") {
    const std::string bare =
        "{\"type\":\"init\",\"text\":\"cmd-1\",\"timestamp\":1}\n\n"
        "{\"type\":\"stdout\",\"text\":\"hello: world\\n\",\"timestamp\":2}\n\n"
        "{\"type\":\"stderr\",\"text\":\"warn\",\"timestamp\":3}\n\n"
        "{\"type\":\"ping\",\"timestamp\":4}\n\n"
        "{\"type\":\"execution_complete\",\"execution_time\":42,\"timestamp\":5}\n\n";
    std::string sse;
    for (std::size_t at = 0; at < bare.size();) {
        auto nl = bare.find("\n\n", at);
        sse += "data: " + bare.substr(at, nl - at) + "\r\n\r\n";
        at = nl + 2;
    }
    sse = ": keep-alive\n\nevent: message\n" + sse;
    for (const std::string* body : std::vector<const std::string*>{&bare, &sse}) {
        for (std::size_t step : std::vector<std::size_t>{1, 7, body->size()}) {
            auto events = decode_all(*body, step);
            REQUIRE(events.size() == 5);
            CHECK(events[0].type == "init");
            CHECK(events[1].text == "hello: world\n");
            CHECK(events[4].execution_time == std::optional<std::int64_t>(42));
            os::Execution x;
            for (auto& e : events) x.add(e);
            CHECK(x.finished());
            CHECK(x.id() == "cmd-1");
            auto r = x.command_result();
            CHECK(r.exit_code == 0);
            CHECK(r.stdout_data == "hello: world\n");
            CHECK(r.stderr_data == "warn");
            CHECK(r.elapsed_ms == 42.0);
        }
    }
}

TEST_CASE("a stream cut mid-event leaves the execution unfinished and skips the broken line") {
    const std::string body = "{\"type\":\"stdout\",\"text\":\"a\",\"timestamp\":1}\n\n{\"type\":\"execution_comp";
    auto events = decode_all(body, 3);
    REQUIRE(events.size() == 1);
    os::Execution x;
    for (auto& e : events) x.add(e);
    CHECK_FALSE(x.finished());
    CHECK(x.saw_output());
}

TEST_CASE("the exit code comes from the error event and non-integer errors keep their text") {
    os::Execution x;
    x.add(*os::parse_event(R"({"type":"stdout","text":"partial","timestamp":1})"));
    x.add(*os::parse_event(
        R"({"type":"error","error":{"ename":"CommandExecError","evalue":"7","traceback":["exit status 7"]},"timestamp":2})"));
    CHECK(x.finished());
    CHECK(x.command_result().exit_code == 7);
    os::Execution k;
    k.add(*os::parse_event(R"({"type":"error","error":{"ename":"CommandExecError","evalue":"signal: killed"},"timestamp":2})"));
    CHECK(k.command_result().exit_code == -9);
    CHECK(k.command_result().stderr_data == "signal: killed");
    os::Execution none;
    none.add(*os::parse_event(R"({"type":"execution_complete","timestamp":2})"));
    CHECK(none.command_result().exit_code == 0);
    CHECK(none.command_result().elapsed_ms == 0.0);
    CHECK_FALSE(os::parse_event(R"({"text":"no type"})"));
    CHECK_FALSE(os::parse_event("[1,2]"));
}

TEST_CASE("a code result takes the first result text and names the error") {
    os::Execution x;
    x.add(*os::parse_event(R"({"type":"result","results":{"text/plain":"4"},"timestamp":1})"));
    x.add(*os::parse_event(R"({"type":"result","results":{"text/plain":"5"},"timestamp":1})"));
    x.add(*os::parse_event(R"({"type":"execution_complete","timestamp":2})"));
    auto ok = x.code_result();
    CHECK(ok.text == std::optional<std::string>("4"));
    CHECK_FALSE(ok.error);
    os::Execution bad;
    bad.add(*os::parse_event(R"({"type":"stderr","text":"Traceback ...\nValueError: boom\n","timestamp":1})"));
    bad.add(*os::parse_event(R"({"type":"error","error":{"ename":"ValueError","evalue":"boom","traceback":[]},"timestamp":2})"));
    CHECK(bad.code_result().error == std::optional<std::string>("ValueError: boom"));
    os::Execution warn;
    warn.add(*os::parse_event(R"({"type":"stderr","text":"careful","timestamp":1})"));
    warn.add(*os::parse_event(R"({"type":"execution_complete","timestamp":2})"));
    CHECK(warn.code_result().error == std::optional<std::string>("careful"));
}

TEST_CASE("output past the cap is dropped and flagged") {
    os::Execution x(4);
    x.add(*os::parse_event(R"({"type":"stdout","text":"abc","timestamp":1})"));
    x.add(*os::parse_event(R"({"type":"stdout","text":"def","timestamp":1})"));
    auto r = x.command_result();
    CHECK(r.stdout_data == "abcd");
    CHECK(r.stdout_truncated);
    CHECK_FALSE(r.stderr_truncated);
}

TEST_CASE("an empty successful command is rerun only when its text prints") {
    os::Execution empty;
    empty.add(*os::parse_event(R"({"type":"execution_complete","timestamp":2})"));
    CHECK(os::should_rerun_empty(empty, "python3 -c 'print(1)'"));
    CHECK_FALSE(os::should_rerun_empty(empty, "echo >> log.txt"));
    os::Execution printed;
    printed.add(*os::parse_event(R"({"type":"stdout","text":"1","timestamp":1})"));
    CHECK_FALSE(os::should_rerun_empty(printed, "python3 -c 'print(1)'"));
    os::Execution failed;
    failed.add(*os::parse_event(R"({"type":"error","error":{"evalue":"1"},"timestamp":1})"));
    CHECK_FALSE(os::should_rerun_empty(failed, "python3 -c 'print(1)'"));
}

TEST_CASE("query values are percent-escaped except unreserved characters and slashes") {
    CHECK(os::url_escape("/workspace/a b&c=d.txt") == "/workspace/a%20b%26c%3Dd.txt");
    CHECK(os::url_escape("ü") == "%C3%BC");
}

TEST_CASE("the open command writes the kernel wake-up file under IPYTHONDIR or ~/.ipython and never fails for it") {
    CHECK(os::open_command(true).rfind("mkdir -p /workspace || exit 1\n", 0) == 0);
    CHECK(os::open_command(false).find("/workspace") == std::string::npos);
    rath::test::TempDir home;
    const std::string file = "profile_default/startup/" + std::string(os::kernel_wakeup_file);
    auto run = [&](const std::string& env) {
        return std::system(("env -u IPYTHONDIR " + env + " /bin/sh -c " + os::shell_quote(os::open_command(false))).c_str());
    };
    CHECK(run("HOME=" + home.path().string()) == 0);
    CHECK(rath::test::read_file(home.path() / ".ipython" / file) == os::kernel_wakeup_source());
    CHECK(run("IPYTHONDIR=" + (home.path() / "ipy").string()) == 0);
    CHECK(rath::test::read_file(home.path() / "ipy" / file) == os::kernel_wakeup_source());
    CHECK(run("HOME=/proc/no-such-home") == 0);  // an image without a writable home still opens
}
