// A small real MCP server over stdio for the client tests: one process, blocking I/O
// (it is a child, not part of the runtime), a thread per tools/call so that slow
// calls, progress and server-to-client requests overlap as with real servers.
// `--mode` makes it misbehave in one specific way (see main()).
#include <rath/mcp/jsonrpc.hpp>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace json = boost::json;
using namespace rath::mcp::jsonrpc;

namespace {

std::mutex out_mutex;
std::string mode = "normal";
std::string refuse_version;    // answer initialize for this revision with an error
std::string answer_version;    // answer initialize with this revision whatever was asked
bool inline_calls = false;     // answer tools/call in the read loop instead of a thread

std::mutex state_mutex;
std::condition_variable state_cv;
std::set<std::int64_t> cancelled;                 // request ids the client cancelled
std::map<std::int64_t, json::value> answers;      // answers to our own requests
std::int64_t next_own_id = 1000000;
bool extra_tool = false;
std::atomic<int> active_slow{0}, peak_slow{0};  // slow calls running at once, and the most seen

void write_line(const std::string& text) {
    std::lock_guard lock(out_mutex);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

void send(const Message& m) { write_line(serialize(m)); }

json::object text_result(const std::string& text, bool is_error = false) {
    json::object r{{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
    if (is_error) r["isError"] = true;
    return r;
}

// Sends a request to the client and waits for its answer (result or error object).
json::value ask_client(const std::string& method, json::object params) {
    std::int64_t id;
    {
        std::lock_guard lock(state_mutex);
        id = next_own_id++;
    }
    send(Request{Id{id}, method, json::value(std::move(params))});
    std::unique_lock lock(state_mutex);
    state_cv.wait(lock, [&] { return answers.count(id) > 0; });
    auto v = answers[id];
    answers.erase(id);
    return v;
}

json::array tool_list() {
    auto obj = [](const char* name, json::object props, json::array required) {
        return json::object{{"name", name},
                            {"description", std::string("test tool ") + name},
                            {"inputSchema", json::object{{"type", "object"}, {"properties", std::move(props)}, {"required", std::move(required)}}}};
    };
    json::array tools{
        obj("echo", {{"text", {{"type", "string"}}}}, {"text"}),
        obj("add", {{"a", {{"type", "number"}}}, {"b", {{"type", "number"}}}}, {"a", "b"}),
        obj("slow", {{"ms", {{"type", "integer"}}}}, {}),
        obj("progress", {{"steps", {{"type", "integer"}}}}, {}),
        obj("log", {{"message", {{"type", "string"}}}}, {}),
        obj("fail", {}, {}),
        obj("blocks", {}, {}),
        obj("sample", {{"prompt", {{"type", "string"}}}}, {}),
        obj("elicit", {}, {}),
        obj("roots", {}, {}),
        obj("crash", {}, {}),
        obj("big", {{"bytes", {{"type", "integer"}}}}, {}),
        obj("change_tools", {}, {}),
        obj("cancelled_ids", {}, {}),
        obj("stderr", {{"lines", {{"type", "integer"}}}}, {}),
        obj("pid", {}, {}),
        obj("meta", {}, {}),
        obj("peak_slow", {}, {}),
    };
    // Behaviour hints (the client keeps them; rath derives FlowToolCall::idempotent).
    tools[0].as_object()["annotations"] = json::object{{"readOnlyHint", true}};
    tools[1].as_object()["annotations"] = json::object{{"readOnlyHint", false}, {"idempotentHint", true}};
    tools[2].as_object()["annotations"] = json::object{{"readOnlyHint", false}, {"idempotentHint", false}};
    if (extra_tool) tools.push_back(obj("extra", {}, {}));
    if (mode == "bad-schema") {
        tools.push_back(json::object{{"name", "bad_type"},
                                     {"inputSchema", json::object{{"type", "object"}, {"properties", json::object{{"x", json::object{{"type", "nonsense"}}}}}}}});
        tools.push_back(json::object{{"name", "bad_shape"}, {"inputSchema", "not a schema"}});
    }
    return tools;
}

void call_tool(Id id, json::object params) {
    const std::string name = params.contains("name") ? std::string(params["name"].as_string()) : "";
    json::object args = params.contains("arguments") && params["arguments"].is_object() ? params["arguments"].as_object() : json::object{};
    json::value token = nullptr;
    if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].as_object().contains("progressToken"))
        token = params["_meta"].as_object()["progressToken"];
    auto integer = [&](const char* k, std::int64_t d) { return args.contains(k) ? args[k].to_number<std::int64_t>() : d; };
    auto reply = [&](json::object r) { send(Result{id, std::move(r)}); };

    if (mode == "garbage") write_line("this is not json {");
    if (mode == "unknown-id") send(Result{Id{std::int64_t{987654}}, json::object{}});
    if (mode == "flood") {
        std::string huge(100u << 20, 'x');
        std::lock_guard lock(out_mutex);
        std::fwrite("{\"jsonrpc\":\"2.0\",\"id\":", 1, 22, stdout);
        std::fwrite(huge.data(), 1, huge.size(), stdout);
        std::fflush(stdout);
        return;
    }

    if (name == "echo") {
        reply(text_result(args.contains("text") ? std::string(args["text"].as_string()) : ""));
    } else if (name == "add") {
        double sum = args["a"].to_number<double>() + args["b"].to_number<double>();
        auto r = text_result(json::serialize(json::object{{"sum", sum}}));
        r["structuredContent"] = json::object{{"sum", sum}};
        reply(r);
    } else if (name == "slow") {
        {
            // Counted as running until just before the answer leaves, so that a client
            // that waits for the answer never sees two at once.
            struct Active {
                Active() {
                    const int now = ++active_slow;
                    int seen = peak_slow.load();
                    while (seen < now && !peak_slow.compare_exchange_weak(seen, now)) {
                    }
                }
                ~Active() { --active_slow; }
            } active;
            // "announce": true reports progress 0 first, naming the request's id.
            if (args.contains("announce") && !token.is_null())
                send(Notification{"notifications/progress",
                                  json::object{{"progressToken", token}, {"progress", 0},
                                               {"message", "request " + std::to_string(std::get<std::int64_t>(id))}}});
            auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(integer("ms", 1000));
            while (std::chrono::steady_clock::now() < until) {
                {
                    std::lock_guard lock(state_mutex);
                    if (cancelled.count(std::get<std::int64_t>(id))) return;  // cancelled: no answer
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        }
        reply(text_result("slept"));
    } else if (name == "progress") {
        const auto steps = integer("steps", 3);
        const auto delay = std::chrono::milliseconds(integer("delay_ms", 0));
        // "log": true also sends a log message before each step.
        const bool logs = args.contains("log") && args["log"].is_bool() && args["log"].as_bool();
        for (std::int64_t i = 1; i <= steps; ++i) {
            if (delay.count() > 0) std::this_thread::sleep_for(delay);
            if (logs)
                send(Notification{"notifications/message",
                                  json::object{{"level", "info"}, {"logger", "steps"}, {"data", "before step " + std::to_string(i)}}});
            if (!token.is_null())
                send(Notification{"notifications/progress",
                                  json::object{{"progressToken", token}, {"progress", i}, {"total", steps}, {"message", "step " + std::to_string(i)}}});
        }
        reply(text_result("done " + std::to_string(steps)));
    } else if (name == "log") {
        send(Notification{"notifications/message",
                          json::object{{"level", "warning"}, {"logger", "test"}, {"data", args.contains("message") ? args["message"] : json::value("hi")}}});
        reply(text_result("logged"));
    } else if (name == "fail") {
        reply(text_result("the tool failed on purpose", true));
    } else if (name == "blocks") {
        reply(json::object{{"content", json::array{
            json::object{{"type", "text"}, {"text", "several blocks"}},
            json::object{{"type", "image"}, {"data", "iVBORw0KGgo="}, {"mimeType", "image/png"}},
            json::object{{"type", "audio"}, {"data", "UklGRg=="}, {"mimeType", "audio/wav"}},
            json::object{{"type", "resource"}, {"resource", json::object{{"uri", "test://r/1"}, {"mimeType", "text/plain"}, {"text", "embedded text"}}}},
            json::object{{"type", "resource_link"}, {"uri", "file:///x/y.txt"}, {"name", "y.txt"}, {"mimeType", "text/plain"}},
        }}});
    } else if (name == "sample") {
        auto answer = ask_client("sampling/createMessage",
                                 json::object{{"messages", json::array{json::object{{"role", "user"}, {"content", json::object{{"type", "text"}, {"text", args.contains("prompt") ? args["prompt"] : json::value("hello")}}}}}},
                                              {"maxTokens", 50}});
        if (answer.is_object() && answer.as_object().contains("content"))
            reply(text_result("sampled: " + std::string(answer.as_object()["content"].as_object()["text"].as_string())));
        else
            reply(text_result("sampling refused: " + json::serialize(answer), true));
    } else if (name == "elicit") {
        json::object schema{{"type", "object"},
                            {"properties", json::object{{"name", json::object{{"type", "string"}}},
                                                        {"color", json::object{{"type", "string"}, {"default", "blue"}}},
                                                        {"count", json::object{{"type", "integer"}, {"default", 3}}}}}};
        auto answer = ask_client("elicitation/create", json::object{{"message", "Who are you?"}, {"requestedSchema", schema}});
        reply(text_result(json::serialize(answer)));
    } else if (name == "roots") {
        reply(text_result(json::serialize(ask_client("roots/list", json::object{}))));
    } else if (name == "crash") {
        std::_Exit(3);
    } else if (name == "big") {
        reply(text_result(std::string(static_cast<std::size_t>(integer("bytes", 1000)), 'b')));
    } else if (name == "change_tools") {
        {
            std::lock_guard lock(state_mutex);
            extra_tool = true;
        }
        send(Notification{"notifications/tools/list_changed", std::nullopt});
        reply(text_result("changed"));
    } else if (name == "meta") {
        // The request's _meta as the client sent it (trace context, progress token).
        json::value meta = params.contains("_meta") ? params["_meta"] : json::value(json::object{});
        reply(text_result(json::serialize(meta)));
    } else if (name == "peak_slow") {
        reply(text_result(std::to_string(peak_slow.load())));
    } else if (name == "cancelled_ids") {
        json::array ids;
        {
            std::lock_guard lock(state_mutex);
            for (auto c : cancelled) ids.push_back(c);
        }
        reply(text_result(json::serialize(ids)));
    } else if (name == "stderr") {
        for (std::int64_t i = 0; i < integer("lines", 1); ++i) std::fprintf(stderr, "stderr line %lld\n", static_cast<long long>(i));
        std::fflush(stderr);
        reply(text_result("wrote"));
    } else if (name == "pid") {
        reply(text_result(std::to_string(::getpid())));
    } else {
        send(make_error(id, error_code::invalid_params, "Unknown tool: " + name));
    }
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i];
        if (k == "--mode") mode = argv[i + 1];
        if (k == "--refuse-version") refuse_version = argv[i + 1];
        if (k == "--answer-version") answer_version = argv[i + 1];
        if (k == "--inline") inline_calls = std::string(argv[i + 1]) == "1";
        if (k == "--starts-file") {
            // Appends this start's steady-clock time (ns; CLOCK_MONOTONIC, one clock for
            // every process of the machine) for the restart backoff test.
            std::FILE* f = std::fopen(argv[i + 1], "a");
            if (!f) return 2;
            std::fprintf(f, "%lld\n",
                         static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                    std::chrono::steady_clock::now().time_since_epoch())
                                                    .count()));
            std::fclose(f);
        }
    }
    std::vector<std::thread> workers;
    std::string line;
    while (std::getline(std::cin, line)) {
        auto parsed = parse(line);
        for (auto& m : parsed.messages) {
            if (auto* r = std::get_if<Request>(&m)) {
                if (mode == "silent") continue;
                if (r->method == "initialize") {
                    if (mode == "exit-init") std::_Exit(7);
                    if (mode == "partial") {
                        std::fputs(R"({"jsonrpc":"2.0","id":0,"res)", stdout);
                        std::fflush(stdout);
                        std::_Exit(0);
                    }
                    std::string v(r->params->as_object().at("protocolVersion").as_string());
                    if (!refuse_version.empty() && v == refuse_version) {
                        send(make_error(r->id, error_code::invalid_params, "Unsupported protocol version",
                                        json::object{{"supported", json::array{"2025-06-18"}}, {"requested", v}}));
                        continue;
                    }
                    if (!answer_version.empty()) v = answer_version;
                    send(Result{r->id, json::object{{"protocolVersion", v},
                                                    {"capabilities", json::object{{"tools", json::object{{"listChanged", true}}}, {"logging", json::object{}}}},
                                                    {"serverInfo", json::object{{"name", "rath-test-server"}, {"version", "1.0.0"}}},
                                                    {"instructions", "test server"}}});
                } else if (r->method == "ping") {
                    send(Result{r->id, json::object{}});
                } else if (r->method == "tools/list") {
                    // Pages of five tools; the cursor is the index of the next one.
                    std::size_t from = 0;
                    if (r->params && r->params->is_object() && r->params->as_object().contains("cursor"))
                        from = std::stoul(std::string(r->params->as_object().at("cursor").as_string()));
                    json::array all;
                    {
                        std::lock_guard lock(state_mutex);
                        all = tool_list();
                    }
                    json::array page;
                    for (std::size_t i = from; i < all.size() && i < from + 5; ++i) page.push_back(all[i]);
                    json::object res{{"tools", page}};
                    if (from + 5 < all.size()) res["nextCursor"] = std::to_string(from + 5);
                    send(Result{r->id, res});
                } else if (r->method == "tools/call" && inline_calls) {
                    // --inline: answered in the read loop (for the throughput bench).
                    call_tool(r->id, r->params ? r->params->as_object() : json::object{});
                } else if (r->method == "tools/call") {
                    workers.emplace_back(call_tool, r->id, r->params ? r->params->as_object() : json::object{});
                } else {
                    send(make_error(r->id, error_code::method_not_found, "Method not found"));
                }
            } else if (auto* n = std::get_if<Notification>(&m)) {
                if (n->method == "notifications/cancelled" && n->params) {
                    std::lock_guard lock(state_mutex);
                    cancelled.insert(n->params->as_object().at("requestId").as_int64());
                }
            } else if (auto* res = std::get_if<Result>(&m)) {
                std::lock_guard lock(state_mutex);
                answers[std::get<std::int64_t>(res->id)] = res->result;
                state_cv.notify_all();
            } else if (auto* err = std::get_if<ErrorResponse>(&m)) {
                std::lock_guard lock(state_mutex);
                if (err->id) answers[std::get<std::int64_t>(*err->id)] = json::object{{"error", err->error.message}, {"code", err->error.code}};
                state_cv.notify_all();
            }
        }
    }
    for (auto& w : workers) w.detach();
    std::_Exit(0);
}
