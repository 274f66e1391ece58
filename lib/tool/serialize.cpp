#include <rath/backend/decode.hpp>
#include <rath/tool/serialize.hpp>

#include "lib/text/pyjson.hpp"
#include "lib/text/pystr.hpp"
#include "lib/text/utf8.hpp"

namespace rath::tool {

namespace json = boost::json;
namespace rb = rath::backend;

namespace {

std::string with_marker(std::string text, bool truncated) {
    // Capped streams were drained past the cap; say so where the model reads it.
    if (truncated) text += "\n...(output truncated by the sandbox output cap)";
    return text;
}

json::value project_backend(const rb::DispatchResult& r) {
    return std::visit(
        [](const auto& x) -> json::value {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, rb::ToolExecutionFailure>) {
                json::object o{{"ok", false}, {"error_kind", x.kind}, {"message", x.message}};
                if (x.detail && !x.detail->empty()) o["detail"] = *x.detail;
                return o;
            } else if constexpr (std::is_same_v<T, bool>) {
                return json::object{{"ok", x}};
            } else if constexpr (std::is_same_v<T, rb::CommandResult>) {
                return json::object{{"exit_code", x.exit_code},
                                    {"stdout", with_marker(rb::decode_output(x.stdout_data), x.stdout_truncated)},
                                    {"stderr", with_marker(rb::decode_output(x.stderr_data), x.stderr_truncated)},
                                    {"elapsed_ms", x.elapsed_ms}};
            } else if constexpr (std::is_same_v<T, rb::FileContent>) {
                std::string text = x.is_text ? x.data : rb::decode_output(x.data);
                // A file longer than the backend's read cap is shown cut too, with the same marker.
                if (rath::detail::count_code_points(text) > file_content_max_chars)
                    text = rath::detail::head_code_points(text, file_content_max_chars) + "...(truncated)";
                else if (x.truncated)
                    text += "...(truncated)";
                return json::object{{"data", text}};
            } else if constexpr (std::is_same_v<T, rb::FileEntries>) {
                json::array a;
                for (std::size_t i = 0; i < x.entries.size() && i < file_entries_max; ++i)
                    a.push_back(json::object{{"name", x.entries[i].name},
                                             {"path", x.entries[i].path},
                                             {"is_dir", x.entries[i].is_dir}});
                return json::object{{"entries", std::move(a)}};
            } else if constexpr (std::is_same_v<T, rb::FileWriteResult>) {
                return json::object{{"bytes_written", x.bytes_written}};
            } else {
                static_assert(std::is_same_v<T, rb::CodeResult>);
                json::object o;
                o["text"] = x.text ? json::value(*x.text) : json::value(nullptr);
                o["stdout"] = with_marker(rb::decode_output(x.stdout_data), x.stdout_truncated);
                o["stderr"] = with_marker(rb::decode_output(x.stderr_data), x.stderr_truncated);
                o["error"] = x.error ? json::value(*x.error) : json::value(nullptr);
                return o;
            }
        },
        r);
}

}  // namespace

rb::ToolExecutionFailure tool_failure(std::string kind, std::string message, std::optional<std::string> detail) {
    return rb::ToolExecutionFailure{std::move(kind), std::move(message), std::move(detail)};
}

std::string failure_content(std::string kind, std::string message, std::optional<std::string> detail) {
    return make_dispatch_result(ToolReturn(rb::DispatchResult(tool_failure(std::move(kind), std::move(message),
                                                                           std::move(detail)))))
        .content;
}

json::value project(const ToolReturn& raw) {
    if (auto* r = std::get_if<rb::DispatchResult>(&raw)) return project_backend(*r);
    const auto& v = std::get<json::value>(raw);
    std::string text = rath::detail::pyjson_utf8(v);
    if (rath::detail::count_code_points(text) > inline_result_max_chars) {
        // Over-long inline results stay valid JSON (upstream): a cut repr plus the type.
        std::string r = rath::detail::py_repr(v);
        return json::object{{"repr", rath::detail::head_code_points(r, inline_repr_max_chars) + "...(truncated)"},
                            {"type", rath::detail::py_type(v)}};
    }
    return v;
}

ToolDispatchResult make_dispatch_result(ToolReturn raw) {
    ToolDispatchResult out;
    out.projection = project(raw);
    bool sandbox = std::holds_alternative<rb::DispatchResult>(raw);
    out.content = rath::detail::pyjson(out.projection, {.ensure_ascii = sandbox});
    out.failed = sandbox && std::holds_alternative<rb::ToolExecutionFailure>(std::get<rb::DispatchResult>(raw));
    out.raw = std::move(raw);
    return out;
}

}  // namespace rath::tool
