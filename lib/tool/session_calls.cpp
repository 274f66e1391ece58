#include <rath/tool/session_calls.hpp>

#include <rath/async/block_on.hpp>
#include <rath/backend/backend.hpp>
#include <rath/session.hpp>

namespace rath::tool {

namespace rb = rath::backend;

boost::asio::awaitable<rb::DispatchResult> async_flow_tool_dispatch(Session session, rb::Payload payload) {
    auto sb = co_await session.async_require_sandbox();  // opens lazily (session.md §1.6)
    co_return co_await sb->async_dispatch(std::move(payload));
}

rb::DispatchResult flow_tool_dispatch(const Session& session, rb::Payload payload) {
    return session.require_sandbox()->dispatch(std::move(payload));
}

rb::DispatchResult flow_tool_command_run(const Session& session, rb::Command cmd,
                                         std::optional<std::map<std::string, std::string>> env, std::optional<std::string> cwd,
                                         std::optional<std::string> stdin_data, std::optional<double> timeout) {
    return flow_tool_dispatch(session, rb::CommandRun{.cmd = std::move(cmd),
                                                      .env = std::move(env),
                                                      .cwd = std::move(cwd),
                                                      .stdin_data = std::move(stdin_data),
                                                      .timeout = timeout});
}

rb::DispatchResult flow_tool_files_read(const Session& session, std::string path, std::optional<std::string> encoding) {
    return flow_tool_dispatch(session, rb::FilesRead{.path = std::move(path), .encoding = std::move(encoding)});
}

rb::DispatchResult flow_tool_files_write(const Session& session, std::string path, std::string data, int mode) {
    return flow_tool_dispatch(session, rb::FilesWrite{.path = std::move(path), .data = std::move(data), .mode = mode});
}

rb::DispatchResult flow_tool_files_list(const Session& session, std::string path) {
    return flow_tool_dispatch(session, rb::FilesList{.path = std::move(path)});
}

rb::DispatchResult flow_tool_files_exists(const Session& session, std::string path) {
    return flow_tool_dispatch(session, rb::FilesExists{.path = std::move(path)});
}

rb::DispatchResult flow_tool_code_run(const Session& session, std::string code, std::string language,
                                      std::optional<double> timeout) {
    return flow_tool_dispatch(session, rb::CodeRun{.code = std::move(code), .language = std::move(language), .timeout = timeout});
}

}  // namespace rath::tool
