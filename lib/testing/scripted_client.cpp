#include <rath/testing/scripted_client.hpp>

#include <rath/llm/error.hpp>
#include <rath/llm/stream_accumulator.hpp>

namespace rath::testing {

using namespace rath::llm;

ScriptedReply ScriptedReply::text(std::string text) {
    ChatResponse r;
    ChatChoice c;
    c.message.content = std::move(text);
    r.choices.push_back(std::move(c));
    return ScriptedReply{.response = std::move(r)};
}

ScriptedReply ScriptedReply::tool_call(std::string id, std::string name, std::string arguments) {
    ChatResponse r;
    ChatChoice c;
    c.finish_reason = FinishReason::tool_calls;
    ToolCallPart p;
    p.id = std::move(id);
    p.function.name = std::move(name);
    p.function.arguments = std::move(arguments);
    auto parsed = parse_tool_arguments(p.function.arguments);
    p.function.arguments_parsed = std::move(parsed.value);
    p.function.arguments_parse_error = parsed.parse_error;
    c.message.tool_calls = std::vector<ToolCallPart>{std::move(p)};
    r.choices.push_back(std::move(c));
    return ScriptedReply{.response = std::move(r)};
}

ScriptedChatClient::ScriptedChatClient(Provider provider, ChatClientOptions options)
    : ChatClient(options.runtime), provider_(std::move(provider)) {}

ScriptedChatClient& ScriptedChatClient::push(ScriptedReply reply) {
    std::lock_guard lk(mu_);
    queue_.push_back(std::move(reply));
    return *this;
}

ScriptedChatClient& ScriptedChatClient::rule(ScriptedReply reply) {
    std::lock_guard lk(mu_);
    rules_.push_back(std::move(reply));
    return *this;
}

void ScriptedChatClient::reset() {
    std::lock_guard lk(mu_);
    queue_.clear();
    rules_.clear();
    requests_.clear();
}

std::vector<ChatRequest> ScriptedChatClient::requests() const {
    std::lock_guard lk(mu_);
    return requests_;
}

std::size_t ScriptedChatClient::pending() const {
    std::lock_guard lk(mu_);
    return queue_.size();
}

namespace {
bool matches(const ScriptedReply& r, const ChatRequest& req) {
    const Message* last = req.messages.empty() ? nullptr : &req.messages.back();
    if (r.when_last_role && (!last || last->role != *r.when_last_role)) return false;
    if (r.when_last_contains) {
        if (!last || !last->content || last->content->find(*r.when_last_contains) == std::string::npos) return false;
    }
    return true;
}

// Deltas that reproduce a scripted response when streamed.
std::vector<StreamDelta> deltas_of(const ChatResponse& r) {
    std::vector<StreamDelta> out;
    if (r.choices.empty()) return out;
    const auto& m = r.choices.front().message;
    if (m.reasoning_content && !m.reasoning_content->empty()) out.push_back({.reasoning_delta = m.reasoning_content});
    if (m.content && !m.content->empty()) out.push_back({.content_delta = m.content});
    if (m.tool_calls) {
        int i = 0;
        for (const auto& c : *m.tool_calls) {
            out.push_back({.tool_call_index = i,
                           .tool_call_id = c.id,
                           .tool_call_name_delta = c.function.name,
                           .tool_call_args_delta = c.function.arguments});
            ++i;
        }
    }
    out.push_back({.finish_reason = r.choices.front().finish_reason});
    if (r.usage) out.push_back({.usage = r.usage});
    return out;
}
}  // namespace

ScriptedReply ScriptedChatClient::take(const ChatRequest& request) {
    std::lock_guard lk(mu_);
    requests_.push_back(request);
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        if (matches(*it, request)) {
            ScriptedReply r = std::move(*it);
            queue_.erase(it);
            return r;
        }
    }
    for (const auto& r : rules_)
        if (matches(r, request)) return r;
    std::string last = request.messages.empty() ? std::string("(no messages)")
                                                : request.messages.back().content.value_or("(no content)");
    if (last.size() > 200) last = last.substr(0, 200) + "...";
    throw ProviderConfigError("scripted client '" + provider_.to_string() +
                              "': no scripted reply matches the last message: " + last);
}

boost::asio::awaitable<void> ScriptedChatClient::do_complete(const ChatRequest& request, ChatResponse& out,
                                                             const DeltaCallback* on_delta) {
    ScriptedReply r = take(request);
    if (!on_delta) {
        if (r.error) std::rethrow_exception(r.error);
        if (r.response) {
            out = std::move(*r.response);
        } else {
            StreamAccumulator acc(provider_.model.value_or(""));
            for (const auto& d : r.deltas) acc.add(d);
            out = acc.result();
        }
        if (out.model.empty()) out.model = request.model.value_or(provider_.model.value_or(""));
        co_return;
    }
    std::vector<StreamDelta> deltas = !r.deltas.empty() ? r.deltas : (r.response ? deltas_of(*r.response) : std::vector<StreamDelta>{});
    StreamAccumulator acc(request.model.value_or(provider_.model.value_or("")));
    for (const auto& d : deltas) {
        acc.add(d);
        (*on_delta)(d);
    }
    if (r.error) std::rethrow_exception(r.error);
    out = acc.result();
}

}  // namespace rath::testing
