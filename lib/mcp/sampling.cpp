#include <rath/mcp/sampling.hpp>

#include <rath/llm/chat_client.hpp>
#include <rath/llm/registry.hpp>
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>

#include <boost/json/array.hpp>

namespace rath::mcp {

namespace json = boost::json;
namespace asio = boost::asio;

namespace {

std::string message_text(const json::value& content) {
    auto block_text = [](const json::value& b) -> std::string {
        if (!b.is_object()) throw McpError("a sampling message content block is not an object");
        const auto& o = b.get_object();
        auto t = o.find("type");
        if (t == o.end() || !t->value().is_string() || t->value().get_string() != "text")
            throw McpError("sampling with " +
                           (t != o.end() && t->value().is_string() ? std::string(t->value().get_string()) : std::string("untyped")) +
                           " content is not supported: rath's chat messages carry text");
        auto x = o.find("text");
        return x != o.end() && x->value().is_string() ? std::string(x->value().get_string()) : std::string();
    };
    if (content.is_array()) {
        std::string out;
        for (const auto& b : content.get_array()) {
            if (!out.empty()) out += "\n";
            out += block_text(b);
        }
        return out;
    }
    return block_text(content);
}

}  // namespace

std::vector<llm::Message> sampling_messages(const SamplingRequest& request) {
    std::vector<llm::Message> out;
    const auto& p = request.params;
    if (auto s = p.find("systemPrompt"); s != p.end() && s->value().is_string())
        out.push_back(llm::Message::system(std::string(s->value().get_string())));
    auto m = p.find("messages");
    if (m == p.end() || !m->value().is_array()) throw McpError("sampling/createMessage without a messages array");
    for (const auto& mv : m->value().get_array()) {
        if (!mv.is_object()) throw McpError("a sampling message is not an object");
        const auto& mo = mv.get_object();
        auto role = mo.find("role");
        auto content = mo.find("content");
        if (role == mo.end() || !role->value().is_string() || content == mo.end())
            throw McpError("a sampling message needs a role and content");
        std::string r(role->value().get_string());
        if (r == "user")
            out.push_back(llm::Message::user(message_text(content->value())));
        else if (r == "assistant")
            out.push_back(llm::Message::assistant(message_text(content->value())));
        else
            throw McpError("a sampling message has the unknown role " + r);
    }
    return out;
}

SamplingHandler sampling_through(const llm::Provider& provider, SamplingPermission allow) {
    std::shared_ptr<llm::ChatClient> client = llm::chat_client_for(provider);
    return [client, allow = std::move(allow)](SamplingRequest request) -> asio::awaitable<json::object> {
        // Human in the loop (client/sampling.mdx "User Interaction Model"): nothing
        // reaches the model unless the user's policy says so.
        if (!allow || !allow(request)) throw McpError("User rejected sampling request");
        llm::ChatRequest chat;
        chat.messages = sampling_messages(request);
        const auto& p = request.params;
        if (auto it = p.find("maxTokens"); it != p.end() && it->value().is_number())
            chat.sampling.max_tokens = it->value().to_number<std::int64_t>();
        if (auto it = p.find("temperature"); it != p.end() && it->value().is_number())
            chat.sampling.temperature = it->value().to_number<double>();
        if (auto it = p.find("stopSequences"); it != p.end() && it->value().is_array()) {
            std::vector<std::string> stops;
            for (const auto& s : it->value().get_array())
                if (s.is_string()) stops.emplace_back(s.get_string());
            if (!stops.empty()) chat.sampling.stop = llm::StopSequences{std::move(stops)};
        }
        llm::ChatResponse response;
        auto op = client->async_complete(chat, response);
        co_await std::move(op);
        const auto& choice = response.primary_choice();
        std::string stop = "endTurn";
        if (choice.finish_reason == llm::FinishReason::length) stop = "maxTokens";
        co_return json::object{{"role", "assistant"},
                               {"content", json::object{{"type", "text"}, {"text", choice.message.content.value_or("")}}},
                               {"model", response.model},
                               {"stopReason", stop}};
    };
}

}  // namespace rath::mcp
