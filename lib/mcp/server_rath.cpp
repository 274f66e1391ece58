// rath's own things as MCP tools: FlowToolCalls through the dispatcher, and agents and
// workflows run on a new session whose transcript becomes a resource.
#include <rath/flow/workflow.hpp>
#include <rath/mcp/server.hpp>
#include <rath/session.hpp>
#include <rath/session/persistence/records.hpp>
#include <rath/tool/dispatch.hpp>

#include "lib/mcp/server_impl.hpp"
#include "lib/session/session_state.hpp"
#include "lib/tool/tool_call_scope.hpp"

#include <boost/json/serialize.hpp>

namespace rath::mcp {

namespace json = boost::json;
namespace asio = boost::asio;

namespace {
json::object dispatch_result(const tool::ToolDispatchResult& r);
std::shared_ptr<rath::detail::ToolCallScope> reports_to_client(const CallContext& ctx, const std::string& tool);

// Closes a call's report scope when the handler ends, however it ends.
// (A constructor, not aggregate initialization: it is made in a coroutine body.)
struct ScopeCloser {
    explicit ScopeCloser(std::shared_ptr<rath::detail::ToolCallScope> s) : scope(std::move(s)) {}
    ScopeCloser(const ScopeCloser&) = delete;
    ScopeCloser& operator=(const ScopeCloser&) = delete;
    ~ScopeCloser() { scope->close(); }
    std::shared_ptr<rath::detail::ToolCallScope> scope;
};
json::object workflow_result(const std::string& text, const TranscriptEntry& entry);
std::string transcript_text(const Session& s, const ChunkTable& rows);
}  // namespace

void Server::add_tool(tool::FlowToolPtr tool) {
    if (!tool) throw std::invalid_argument("add_tool: null tool");
    ToolDefinition def;
    def.name = tool->name();
    def.description = tool->description();
    def.input_schema = tool->parameters();
    if (!def.input_schema.contains("type")) def.input_schema["type"] = "object";
    auto* runtime = impl_->options.runtime;
    def.handler = [tool, runtime](json::object arguments, CallContext& ctx) -> asio::awaitable<json::object> {
        // The dispatcher applies the policy, the lanes and the error conversion, exactly
        // as for a model's call; its tool-result body is what the MCP client reads.
        // What the tool reports through its session (rath/tool/tool_event.hpp) reaches
        // this request's client as notifications/progress and notifications/message.
        ScopeCloser reports(reports_to_client(ctx, tool->name()));
        Session session = rath::detail::SessionAccess::for_tool_call(ctx.session().rath_session(), reports.scope);
        auto pending = tool::async_dispatch_flow_tool(std::move(session), tool, std::move(arguments), runtime);
        tool::ToolDispatchResult r = co_await std::move(pending);
        co_return dispatch_result(r);
    };
    add_tool(std::move(def));
}

namespace {

std::shared_ptr<rath::detail::ToolCallScope> reports_to_client(const CallContext& ctx, const std::string& tool) {
    auto forward = std::make_shared<const std::function<void(const llm::StreamDelta&)>>(
        [ctx](const llm::StreamDelta& d) {
            if (!d.tool_event) return;
            const auto& e = *d.tool_event;
            if (e.kind == tool::ToolEvent::Kind::progress)
                ctx.progress(e.progress, e.total, e.message.empty() ? std::nullopt : std::optional<std::string>(e.message));
            else
                ctx.log(parse_log_level(e.level).value_or(McpLogLevel::info), json::string(e.message), e.logger);
        });
    return std::make_shared<rath::detail::ToolCallScope>(std::make_shared<rath::detail::ToolEventSink>(std::move(forward)), tool,
                                                   std::string());
}

// JSON built outside coroutine bodies (GCC 12 and braced initializers in coroutines).
json::object dispatch_result(const tool::ToolDispatchResult& r) {
    json::object out{{"content", json::array{json::object{{"type", "text"}, {"text", r.content}}}}};
    if (r.failed)
        out["isError"] = true;
    else if (r.projection.is_object())
        out["structuredContent"] = r.projection;
    return out;
}

json::object workflow_result(const std::string& text, const TranscriptEntry& entry) {
    json::object resource{{"uri", entry.uri}, {"mimeType", "application/x-ndjson"}, {"text", entry.text}};
    return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", text}},
                                                json::object{{"type", "resource"}, {"resource", std::move(resource)}}}}};
}

std::string transcript_text(const Session& s, const ChunkTable& rows) {
    std::string created = persistence::iso_utc_now();
    std::string out = persistence::record_line(persistence::make_header_record(s, std::nullopt, created));
    for (std::size_t i = 0; i < rows.size(); ++i) out += persistence::record_line(persistence::make_chunk_record(i, *rows[i]));
    out += persistence::record_line(persistence::make_trailer_record(created, rows.size(), s.usage()));
    return out;
}

}  // namespace

void Server::add_workflow(std::string name, std::string description, std::shared_ptr<flow::Workflow> workflow) {
    if (!workflow) throw std::invalid_argument("add_workflow: null workflow");
    ToolDefinition def;
    def.name = name;
    def.description = std::move(description);
    def.input_schema = json::object{
        {"type", "object"},
        {"properties",
         json::object{{"message", json::object{{"type", "string"}, {"description", "The user message to run on."}}}}},
        {"required", json::array{"message"}}};
    Impl* impl = impl_.get();
    def.handler = [workflow, impl, name](json::object arguments, CallContext& ctx) -> asio::awaitable<json::object> {
        auto* m = arguments.if_contains("message");
        if (!m || !m->is_string()) throw std::invalid_argument("argument 'message' must be a string");
        ctx.progress(0, 1, "running " + name);
        Session in = Session::from_user_message(std::string(m->get_string()));
        // The run's sandbox is the one the server's options name (the built-in tools
        // an agent calls need one).
        if (impl->options.sandbox_backend) {
            if (impl->options.sandbox_working_dir)
                in.to(*impl->options.sandbox_backend, *impl->options.sandbox_working_dir);
            else
                in.to(*impl->options.sandbox_backend);
        }
        auto forward = workflow->async_forward(std::move(in));
        Session out = co_await std::move(forward);
        co_await out.async_synchronize();  // the run's error fails the call (isError)
        ChunkTable rows = co_await out.async_chunks();
        TranscriptEntry entry{"rath://sessions/" + out.id(), name + " session " + out.id(), transcript_text(out, rows)};
        json::object result = workflow_result(out.text().value_or(""), entry);
        impl->add_transcript(std::move(entry));
        ctx.progress(1, 1, name + " finished");
        co_return result;
    };
    add_tool(std::move(def));
}

}  // namespace rath::mcp
