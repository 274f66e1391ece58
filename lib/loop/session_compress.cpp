// run_session_compress (session.md §3).
#include <rath/loop/session_compress.hpp>

#include <rath/async/runtime.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/registry.hpp>
#include <rath/loop/loop_step.hpp>
#include <rath/session/messages.hpp>
#include <rath/session/persistence/async_writer.hpp>

#include "lib/loop/effective_provider.hpp"
#include "lib/loop/operator_output.hpp"
#include "lib/session/session_state.hpp"
#include "lib/text/pystr.hpp"

#include <boost/json.hpp>

#include <stdexcept>

namespace rath {

namespace asio = boost::asio;

const char* const default_compress_instruction =
    "The messages above are a conversation transcript (system/agent context followed by user-visible turns). "
    "Compress them into a shorter narrative that preserves facts, user goals, and open tasks. Output plain text "
    "only, suitable as the sole replacement user-side transcript \xE2\x80\x94 no role labels.";

namespace {

struct CompressState {
    Session out, user, agent;
    CompressOptions opt;
    async::Lazy<void> done{};
};

// Publishes the output's one row and usage, then sets st->done.
asio::awaitable<void> compress_body(std::shared_ptr<CompressState> st) {
    co_await st->user.async_synchronize();
    co_await st->agent.async_synchronize();
    auto& opt = st->opt;
    if (opt.executor && opt.on_event)
        throw std::invalid_argument(
            "on_event with a custom executor is not supported; wire streaming inside your executor's "
            "async_complete instead.");

    std::string instruction = opt.compress_instruction ? detail::py_strip(*opt.compress_instruction)
                                                       : std::string(default_compress_instruction);
    std::vector<llm::Message> messages = chunk_table_to_messages(st->agent.chunks());
    auto user_msgs = chunk_table_to_messages(st->user.chunks());
    messages.insert(messages.end(), user_msgs.begin(), user_msgs.end());
    messages.push_back(llm::Message::user(instruction));

    llm::Provider provider = opt.provider;
    provider.sampling.tool_choice.reset();  // forced: tools are disabled
    llm::ChatRequest req = make_chat_request(std::move(messages), std::nullopt, provider, "none");

    llm::ChatResponse resp;
    if (opt.executor) {
        co_await opt.executor->async_complete(req, resp);
    } else {
        auto client = opt.client ? opt.client : llm::chat_client_for(opt.provider);
        const llm::DeltaCallback* on_delta = opt.on_event ? &opt.on_event : nullptr;
        co_await client->async_complete(req, resp, on_delta);
    }
    const auto& choice = resp.primary_choice();
    if (choice.message.tool_calls && !choice.message.tool_calls->empty())
        throw std::runtime_error("run_session_compress: model returned tool calls but tools are disabled");
    auto fr = choice.finish_reason;
    if (!llm::is_final_answer(fr))
        throw std::runtime_error("run_session_compress: unexpected finish_reason='" + std::string(llm::to_string(fr)) +
                                 "'");
    std::string content = choice.message.content ? detail::py_strip(*choice.message.content) : std::string();
    if (content.empty()) throw std::runtime_error("run_session_compress: empty model content");

    ChunkTable rows{user_text_chunk(content)};
    detail::SessionAccess::publish(st->out, rows, resp.usage);
    if (opt.persist || opt.persist_path) {
        persistence::AsyncWriterOptions wo;
        if (opt.persist_path) wo.writer.path = *opt.persist_path;
        wo.writer.sandbox_handle_id = opt.sandbox_handle_id;
        wo.runtime = opt.runtime;
        auto writer = co_await persistence::AsyncSessionWriter::async_open(st->out, wo);
        co_await writer.async_write_chunk(0, rows[0]);
        co_await writer.async_close();
    }
    st->done.set_value();
}

Session make_compress_output(const Session& user, const Session& agent) {
    return detail::make_operator_output(user, agent, ChunkTable{}, "run_session_compress",
                                        LineageKind::op_session_compress,
                                        {{"compression.lossy", true}, {"compression.rows_out", 1}});
}

}  // namespace

Session run_session_compress(const Session& user, const Session& agent, CompressOptions options) {
    if (auto bound = detail::session_provider_for(options.provider, user, options.executor || options.client,
                                                  "run_session_compress"))
        options.provider = std::move(*bound);
    async::Runtime& rt = options.runtime ? *options.runtime : async::Runtime::default_runtime();
    Session out = make_compress_output(user, agent);
    if (options.register_sessions) detail::register_operator_sessions(user, agent, out);
    auto st = std::make_shared<CompressState>(CompressState{out, user, agent, std::move(options)});
    detail::SessionAccess::set_pending(out, st->done);
    rt.submit_into(compress_body(st), st->done);
    return out;
}

asio::awaitable<Session> async_run_session_compress(Session user, Session agent, CompressOptions options) {
    if (auto bound = detail::session_provider_for(options.provider, user, options.executor || options.client,
                                                  "run_session_compress"))
        options.provider = std::move(*bound);
    Session out = make_compress_output(user, agent);
    if (options.register_sessions) detail::register_operator_sessions(user, agent, out);
    auto st = std::make_shared<CompressState>(CompressState{out, user, agent, std::move(options)});
    detail::SessionAccess::set_pending(out, st->done);
    try {
        co_await compress_body(st);
    } catch (...) {
        st->done.set_exception(std::current_exception());
    }
    out.synchronize();  // finished: never waits; rethrows the error, once
    co_return out;
}

}  // namespace rath
