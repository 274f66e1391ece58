#include "tools/rath-fake-llm/src/workload.hpp"

#include "tools/rath-fake-llm/src/json_out.hpp"
#include "tools/rath-fake-llm/src/text.hpp"

namespace rath::fake_llm::detail {

void make_call_id(Api api, std::atomic<std::uint64_t>& seq, std::string& out) {
    out.assign(api == Api::openai ? "call_" : "toolu_fake_");
    append_uint(out, seq.fetch_add(1, std::memory_order_relaxed) + 1);
}

void fanout_turn(const ChatRequest& req, Turn& turn, std::atomic<std::uint64_t>& seq) {
    turn.chunks = 3;  // the peers split every streamed string into 3 pieces
    if (req.last_role == "user") {
        auto& call = turn.add_call();
        make_call_id(req.api, seq, call.id);
        call.name.assign("word_count");
        call.arguments.assign("{\"text\":");
        append_json_string(call.arguments, req.last_text);
        call.arguments.push_back('}');
        turn.finish = "tool_calls";
        return;
    }
    turn.has_text = true;
    turn.text.assign("done: ");
    if (req.last_role == "tool") turn.text += req.last_text;
    turn.finish = "stop";
}

void echo_turn(const ChatRequest& req, Turn& turn) {
    turn.has_text = true;
    turn.text.assign(req.last_text);
    turn.finish = "stop";
}

std::uint64_t default_completion_tokens(const Turn& turn) {
    std::uint64_t n = turn.has_text ? count_words(turn.text) : 0;
    for (std::size_t i = 0; i < turn.call_count; ++i) n += count_words(turn.calls[i].arguments) + 8;
    return n;
}

void break_json(std::string& arguments) {
    if (!arguments.empty() && arguments.back() == '}')
        arguments.pop_back();  // an object that never closes
    else
        arguments += arguments.empty() ? "{" : "}";
}

}  // namespace rath::fake_llm::detail
