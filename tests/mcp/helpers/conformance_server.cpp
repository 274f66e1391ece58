// The server the official conformance suite (@modelcontextprotocol/conformance) tests:
// rath::mcp::Server over Streamable HTTP, serving the tools, resources and prompts the
// suite's server scenarios call by name, with the contents they check. Prints
// "listening on http://127.0.0.1:PORT/mcp" and serves until SIGINT/SIGTERM.
#include <rath/mcp/server.hpp>
#include <rath/mcp/server_http.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace json = boost::json;
namespace asio = boost::asio;
using namespace rath::mcp;

namespace {

// A 1x1 PNG and a minimal WAV, base64 (what the suite decodes and checks the type of).
constexpr const char* png_base64 =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
constexpr const char* wav_base64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

json::object result_of(json::array content) { return json::object{{"content", std::move(content)}}; }
json::object text_part(std::string text) { return json::object{{"type", "text"}, {"text", std::move(text)}}; }
json::object image_part() { return json::object{{"type", "image"}, {"data", png_base64}, {"mimeType", "image/png"}}; }
json::object resource_part(std::string uri, std::string mime, std::string text) {
    return json::object{{"type", "resource"},
                        {"resource", json::object{{"uri", std::move(uri)}, {"mimeType", std::move(mime)}, {"text", std::move(text)}}}};
}
json::object no_args() { return json::object{{"type", "object"}, {"properties", json::object{}}}; }
json::object string_arg(std::string name, std::string description) {
    return json::object{{"type", "object"},
                        {"properties", json::object{{name, json::object{{"type", "string"}, {"description", description}}}}},
                        {"required", json::array{json::value(name)}}};
}

ToolDefinition constant_tool(std::string name, std::string description, json::array content) {
    ToolDefinition t{.name = std::move(name), .description = std::move(description), .input_schema = no_args(), .handler = {}};
    t.handler = [content](json::object, CallContext&) -> asio::awaitable<json::object> { co_return result_of(content); };
    return t;
}

asio::awaitable<void> sleep_ms(int ms) {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
    co_await t.async_wait(asio::use_awaitable);
}

std::string result_line(const char* prefix, const json::value& r) {
    auto* action = r.is_object() ? r.get_object().if_contains("action") : nullptr;
    auto* content = r.is_object() ? r.get_object().if_contains("content") : nullptr;
    return std::string(prefix) + "action=" + (action && action->is_string() ? std::string(action->get_string()) : "") +
           ", content=" + json::serialize(content ? *content : json::value(json::object{}));
}

// A tool that sends elicitation/create with `schema` and reports the answer.
ToolDefinition elicitation_tool(std::string name, std::string description, std::string message, json::object schema,
                                const char* prefix, json::object input) {
    ToolDefinition t{.name = std::move(name), .description = std::move(description), .input_schema = std::move(input), .handler = {}};
    t.handler = [message, schema, prefix](json::object args, CallContext& ctx) -> asio::awaitable<json::object> {
        std::string msg = message;
        if (auto* m = args.if_contains("message"); m && m->is_string()) msg = std::string(m->get_string());
        json::value params = json::object{{"message", msg}, {"requestedSchema", schema}};
        std::string text;
        try {
            auto pending = ctx.async_request("elicitation/create", std::move(params));
            json::value r = co_await std::move(pending);
            text = result_line(prefix, r);
        } catch (const std::exception& e) {
            text = std::string("Elicitation not supported or error: ") + e.what();
        }
        co_return result_of(json::array{text_part(text)});
    };
    return t;
}

std::shared_ptr<Server> make_server() {
    auto server = std::make_shared<Server>(
        ServerOptions{.name = "rath-mcp-conformance-server", .version = "1.0.0", .sandbox_backend = std::nullopt});

    server->add_tool(constant_tool("test_simple_text", "Tests simple text content response",
                                   json::array{text_part("This is a simple text response for testing.")}));
    server->add_tool(constant_tool("test_image_content", "Tests image content response", json::array{image_part()}));
    server->add_tool(constant_tool("test_audio_content", "Tests audio content response",
                                   json::array{json::object{{"type", "audio"}, {"data", wav_base64}, {"mimeType", "audio/wav"}}}));
    server->add_tool(constant_tool("test_embedded_resource", "Tests embedded resource content response",
                                   json::array{resource_part("test://embedded-resource", "text/plain",
                                                             "This is an embedded resource content.")}));
    server->add_tool(constant_tool("test_multiple_content_types",
                                   "Tests response with multiple content types (text, image, resource)",
                                   json::array{text_part("Multiple content types test:"), image_part(),
                                               resource_part("test://mixed-content-resource", "application/json",
                                                             R"({"test":"data","value":123})")}));

    ToolDefinition logging{.name = "test_tool_with_logging",
                           .description = "Tests tool that emits log messages during execution",
                           .input_schema = no_args(), .handler = {}};
    logging.handler = [](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
        ctx.log(McpLogLevel::info, json::string("Tool execution started"));
        co_await sleep_ms(50);
        ctx.log(McpLogLevel::info, json::string("Tool processing data"));
        co_await sleep_ms(50);
        ctx.log(McpLogLevel::info, json::string("Tool execution completed"));
        co_return result_of(json::array{text_part("Tool with logging executed successfully")});
    };
    server->add_tool(std::move(logging));

    ToolDefinition progress{.name = "test_tool_with_progress",
                            .description = "Tests tool that reports progress notifications",
                            .input_schema = no_args(), .handler = {}};
    progress.handler = [](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
        for (int step : {0, 50, 100}) {
            ctx.progress(step, 100, "Completed step " + std::to_string(step) + " of 100");
            if (step != 100) co_await sleep_ms(50);
        }
        std::string token = ctx.progress_token() ? json::serialize(*ctx.progress_token()) : "none";
        co_return result_of(json::array{text_part(token)});
    };
    server->add_tool(std::move(progress));

    // server-sse-polling (SEP-1699): the stream closes mid-call and the result reaches
    // the client after it reconnects with Last-Event-ID.
    ToolDefinition reconnection{.name = "test_reconnection",
                                .description = "Tests SSE polling: closes the stream mid-call, answers after the reconnection",
                                .input_schema = no_args(), .handler = {}};
    reconnection.handler = [](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
        ctx.close_stream();
        co_await sleep_ms(100);
        co_return result_of(json::array{text_part("Reconnection test completed")});
    };
    server->add_tool(std::move(reconnection));

    ToolDefinition error{.name = "test_error_handling", .description = "Tests error response handling", .input_schema = no_args(), .handler = {}};
    error.handler = [](json::object, CallContext&) -> asio::awaitable<json::object> {
        throw std::runtime_error("This tool intentionally returns an error for testing");
        co_return json::object{};
    };
    server->add_tool(std::move(error));

    ToolDefinition sampling{.name = "test_sampling",
                            .description = "Tests server-initiated sampling (LLM completion request)",
                            .input_schema = string_arg("prompt", "The prompt to send to the LLM"), .handler = {}};
    sampling.handler = [](json::object args, CallContext& ctx) -> asio::awaitable<json::object> {
        std::string prompt = args.contains("prompt") && args.at("prompt").is_string()
                                 ? std::string(args.at("prompt").get_string())
                                 : std::string();
        json::value params = json::object{
            {"messages", json::array{json::object{{"role", "user"}, {"content", text_part(prompt)}}}}, {"maxTokens", 100}};
        std::string text;
        try {
            auto pending = ctx.async_request("sampling/createMessage", std::move(params));
            json::value r = co_await std::move(pending);
            const json::value* t = nullptr;
            if (auto* c = r.get_object().if_contains("content"); c && c->is_object()) t = c->get_object().if_contains("text");
            text = "LLM response: " + (t && t->is_string() ? std::string(t->get_string()) : std::string("No response"));
        } catch (const std::exception& e) {
            text = std::string("Sampling not supported or error: ") + e.what();
        }
        co_return result_of(json::array{text_part(text)});
    };
    server->add_tool(std::move(sampling));

    server->add_tool(elicitation_tool(
        "test_elicitation", "Tests server-initiated elicitation (user input request)", "",
        json::parse(R"js({"type":"object","properties":{"response":{"type":"string","description":"User's response"}},"required":["response"]}
)js")
            .as_object(),
        "User response: ", string_arg("message", "The message to show the user")));
    server->add_tool(elicitation_tool(
        "test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034",
        "Please review and update the form fields with defaults",
        json::parse(R"js({"type":"object","properties":{
            "name":{"type":"string","description":"User name","default":"John Doe"},
            "age":{"type":"integer","description":"User age","default":30},
            "score":{"type":"number","description":"User score","default":95.5},
            "status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
            "verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}
)js")
            .as_object(),
        "Elicitation completed: ", no_args()));
    server->add_tool(elicitation_tool(
        "test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330",
        "Please select options from the enum fields",
        json::parse(R"js({"type":"object","properties":{
            "untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
            "titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[
                {"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
            "legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],
                "enumNames":["Option One","Option Two","Option Three"]},
            "untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,
                "items":{"type":"string","enum":["option1","option2","option3"]}},
            "titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,
                "items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},
                                  {"const":"value3","title":"Third Choice"}]}}},"required":[]}
)js")
            .as_object(),
        "Elicitation completed: ", no_args()));

    ToolDefinition schema2020{
        .name = "json_schema_2020_12_tool",
        .description = "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        .input_schema = json::parse(R"js({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
            "$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
            "properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}
)js")
                            .as_object(), .handler = {}};
    schema2020.handler = [](json::object args, CallContext&) -> asio::awaitable<json::object> {
        co_return result_of(json::array{text_part("JSON Schema 2020-12 tool called with: " + json::serialize(args))});
    };
    server->add_tool(std::move(schema2020));

    auto text_resource = [](std::string uri, std::string text) {
        return [uri, text](std::string) -> asio::awaitable<json::array> {
            co_return json::array{json::object{{"uri", uri}, {"mimeType", "text/plain"}, {"text", text}}};
        };
    };
    server->add_resource(ResourceDefinition{.uri = "test://static-text", .name = "static-text",
                                            .title = "Static Text Resource",
                                            .description = "A static text resource for testing",
                                            .mime_type = "text/plain",
                                            .read = text_resource("test://static-text",
                                                                  "This is the content of the static text resource.")});
    server->add_resource(ResourceDefinition{
        .uri = "test://static-binary", .name = "static-binary", .title = "Static Binary Resource",
        .description = "A static binary resource (image) for testing", .mime_type = "image/png",
        .read = [](std::string) -> asio::awaitable<json::array> {
            co_return json::array{json::object{{"uri", "test://static-binary"}, {"mimeType", "image/png"}, {"blob", png_base64}}};
        }});
    server->add_resource(ResourceDefinition{.uri = "test://watched-resource", .name = "watched-resource",
                                            .title = "Watched Resource",
                                            .description = "A resource clients may subscribe to",
                                            .mime_type = "text/plain",
                                            .read = text_resource("test://watched-resource", "Watched resource content")});
    server->add_resource_template(ResourceTemplateDefinition{
        .uri_template = "test://template/{id}/data", .name = "template", .title = "Resource Template",
        .description = "A resource template with parameter substitution", .mime_type = "application/json",
        .read = [](std::string uri, json::object vars) -> asio::awaitable<json::array> {
            json::object data{{"id", vars.at("id")}, {"templateTest", true},
                              {"data", "Data for ID: " + std::string(vars.at("id").as_string())}};
            co_return json::array{json::object{{"uri", uri}, {"mimeType", "application/json"}, {"text", json::serialize(data)}}};
        }});

    auto user = [](json::object content) { return json::object{{"role", "user"}, {"content", std::move(content)}}; };
    server->add_prompt(PromptDefinition{
        .name = "test_simple_prompt", .title = "Simple Test Prompt", .description = "A simple prompt without arguments",
        .get = [user](json::object) -> asio::awaitable<json::array> {
            co_return json::array{user(text_part("This is a simple prompt for testing."))};
        }});
    server->add_prompt(PromptDefinition{
        .name = "test_prompt_with_arguments", .title = "Prompt With Arguments",
        .description = "A prompt with required arguments",
        .arguments = {PromptArgument{"arg1", "First test argument", true}, PromptArgument{"arg2", "Second test argument", true}},
        .get = [user](json::object a) -> asio::awaitable<json::array> {
            auto s = [&](const char* k) { return a.at(k).is_string() ? std::string(a.at(k).get_string()) : json::serialize(a.at(k)); };
            co_return json::array{user(text_part("Prompt with arguments: arg1='" + s("arg1") + "', arg2='" + s("arg2") + "'"))};
        }});
    server->add_prompt(PromptDefinition{
        .name = "test_prompt_with_embedded_resource", .title = "Prompt With Embedded Resource",
        .description = "A prompt that includes an embedded resource",
        .arguments = {PromptArgument{"resourceUri", "URI of the resource to embed", true}},
        .get = [user](json::object a) -> asio::awaitable<json::array> {
            std::string uri = a.at("resourceUri").is_string() ? std::string(a.at("resourceUri").get_string()) : "";
            co_return json::array{user(resource_part(uri, "text/plain", "Embedded resource content for testing.")),
                                  user(text_part("Please process the embedded resource above."))};
        }});
    server->add_prompt(PromptDefinition{
        .name = "test_prompt_with_image", .title = "Prompt With Image", .description = "A prompt that includes image content",
        .get = [user](json::object) -> asio::awaitable<json::array> {
            co_return json::array{user(image_part()), user(text_part("Please analyze the image above."))};
        }});
    return server;
}

}  // namespace

int main(int argc, char** argv) {
    StreamableHttpServerOptions opt;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--port" && i + 1 < argc) {
            opt.http.port = static_cast<std::uint16_t>(std::strtoul(argv[++i], nullptr, 10));
        } else {
            std::fprintf(stderr, "usage: rath-mcp-conformance-server [--port N]\n");
            return 2;
        }
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    StreamableHttpServer endpoint(make_server(), opt);
    endpoint.start();
    std::printf("listening on %s\n", endpoint.url().c_str());
    std::fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    endpoint.close();
    return 0;
}
