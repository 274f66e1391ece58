#pragma once
// Session helpers (backend_tools.md §6.1): build a payload and dispatch it on the
// session's sandbox (opened lazily by require_sandbox). They return the backend
// result unchanged.
//
// They bypass the tool dispatcher (no policy, no lane). Cancellation and errors: those
// of Session::async_require_sandbox and Backend::async_dispatch; the sync forms block
// and throw rath::async::DeadlockError on a runtime io thread.
#include <rath/backend/payload.hpp>
#include <rath/backend/result.hpp>

#include <boost/asio/awaitable.hpp>

#include <map>
#include <optional>
#include <string>

namespace rath {
class Session;
}

namespace rath::tool {

[[nodiscard]] boost::asio::awaitable<backend::DispatchResult> async_flow_tool_dispatch(Session session,
                                                                                       backend::Payload payload);
[[nodiscard]] backend::DispatchResult flow_tool_dispatch(const Session& session, backend::Payload payload);

[[nodiscard]] backend::DispatchResult flow_tool_command_run(const Session& session, backend::Command cmd,
                                                            std::optional<std::map<std::string, std::string>> env = {},
                                                            std::optional<std::string> cwd = {},
                                                            std::optional<std::string> stdin_data = {},
                                                            std::optional<double> timeout = {});
[[nodiscard]] backend::DispatchResult flow_tool_files_read(const Session& session, std::string path,
                                                           std::optional<std::string> encoding = std::string("utf-8"));
[[nodiscard]] backend::DispatchResult flow_tool_files_write(const Session& session, std::string path, std::string data,
                                                            int mode = 0644);
[[nodiscard]] backend::DispatchResult flow_tool_files_list(const Session& session, std::string path);
[[nodiscard]] backend::DispatchResult flow_tool_files_exists(const Session& session, std::string path);
[[nodiscard]] backend::DispatchResult flow_tool_code_run(const Session& session, std::string code,
                                                         std::string language = "python",
                                                         std::optional<double> timeout = {});

}  // namespace rath::tool
