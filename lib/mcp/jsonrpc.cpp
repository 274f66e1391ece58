#include <rath/mcp/jsonrpc.hpp>

#include "lib/text/json_parse.hpp"
#include "lib/text/json_string.hpp"
#include "lib/text/json_write.hpp"

#include <boost/json/object.hpp>
#include <boost/json/array.hpp>

#include <simdjson.h>

namespace rath::mcp::jsonrpc {

namespace json = boost::json;

std::string id_text(const Id& id) {
    if (const auto* i = std::get_if<std::int64_t>(&id)) return std::to_string(*i);
    std::string out;
    rath::detail::append_json_string(out, std::get<std::string>(id));
    return out;
}

json::value id_to_json(const Id& id) {
    if (const auto* i = std::get_if<std::int64_t>(&id)) return *i;
    return json::string(std::get<std::string>(id));
}

ErrorResponse make_error(std::optional<Id> id, std::int64_t code, std::string message,
                         std::optional<json::value> data) {
    return ErrorResponse{std::move(id), ErrorObject{code, std::move(message), std::move(data)}};
}

namespace {

namespace dom = simdjson::dom;

// An id as JSON-RPC/MCP allow it: a string or an integer that fits int64. A fractional
// number, a bool, null or a structure is not an id.
std::optional<Id> read_id(dom::element e) {
    switch (e.type()) {
        case dom::element_type::INT64: return Id{e.get_int64().value_unsafe()};
        case dom::element_type::STRING: return Id{std::string(e.get_string().value_unsafe())};
        default: return std::nullopt;
    }
}

ErrorResponse invalid(std::optional<Id> id, std::string why) {
    return make_error(std::move(id), error_code::invalid_request, "Invalid Request: " + why);
}

// One element of the text: a message or the reason it is not one.
void read_message(dom::element e, Parsed& out) {
    dom::object obj;
    if (e.get(obj)) {
        out.invalid.push_back(invalid(std::nullopt, "a message must be a JSON object"));
        return;
    }
    std::optional<dom::element> jsonrpc, id, method, params, result, error;
    for (dom::key_value_pair f : obj) {
        // Unknown members are ignored (forward compatibility); the first of a duplicated
        // member wins so that a later one cannot change what was already classified.
        if (f.key == "jsonrpc" && !jsonrpc) jsonrpc = f.value;
        else if (f.key == "id" && !id) id = f.value;
        else if (f.key == "method" && !method) method = f.value;
        else if (f.key == "params" && !params) params = f.value;
        else if (f.key == "result" && !result) result = f.value;
        else if (f.key == "error" && !error) error = f.value;
    }
    std::optional<Id> parsed_id;
    if (id) parsed_id = read_id(*id);
    if (!jsonrpc || !jsonrpc->is_string() || jsonrpc->get_string().value_unsafe() != version) {
        out.invalid.push_back(invalid(parsed_id, "\"jsonrpc\" must be \"2.0\""));
        return;
    }
    if (method) {
        if (!method->is_string()) {
            out.invalid.push_back(invalid(parsed_id, "\"method\" must be a string"));
            return;
        }
        std::optional<json::value> p;
        if (params) {
            if (!params->is_object() && !params->is_array()) {
                out.invalid.push_back(invalid(parsed_id, "\"params\" must be an object or an array"));
                return;
            }
            p = rath::detail::to_boost_json(*params);
        }
        std::string m(method->get_string().value_unsafe());
        if (!id) {
            out.messages.emplace_back(Notification{std::move(m), std::move(p)});
            return;
        }
        if (!parsed_id) {
            // MCP (basic/index.mdx "Requests"): the id MUST be a string or integer, not null.
            out.invalid.push_back(invalid(std::nullopt, "a request id must be a string or an integer"));
            return;
        }
        out.messages.emplace_back(Request{std::move(*parsed_id), std::move(m), std::move(p)});
        return;
    }
    if (result && error) {
        out.invalid.push_back(invalid(parsed_id, "a response carries either \"result\" or \"error\""));
        return;
    }
    if (result) {
        if (!parsed_id) {
            out.invalid.push_back(invalid(std::nullopt, "a result needs a string or integer id"));
            return;
        }
        out.messages.emplace_back(Result{std::move(*parsed_id), rath::detail::to_boost_json(*result)});
        return;
    }
    if (error) {
        dom::object eo;
        if (error->get(eo)) {
            out.invalid.push_back(invalid(parsed_id, "\"error\" must be an object"));
            return;
        }
        ErrorObject err;
        bool has_code = false, has_message = false;
        for (dom::key_value_pair f : eo) {
            if (f.key == "code" && !has_code) {
                if (f.value.type() == dom::element_type::INT64) {
                    err.code = f.value.get_int64().value_unsafe();
                    has_code = true;
                } else if (f.value.type() == dom::element_type::DOUBLE) {
                    // Some servers write codes as -32602.0; an integral double is accepted.
                    double d = f.value.get_double().value_unsafe();
                    if (d == static_cast<double>(static_cast<std::int64_t>(d))) {
                        err.code = static_cast<std::int64_t>(d);
                        has_code = true;
                    }
                }
            } else if (f.key == "message" && !has_message && f.value.is_string()) {
                err.message = std::string(f.value.get_string().value_unsafe());
                has_message = true;
            } else if (f.key == "data" && !err.data) {
                err.data = rath::detail::to_boost_json(f.value);
            }
        }
        if (!has_code) {
            out.invalid.push_back(invalid(parsed_id, "an error object needs an integer \"code\""));
            return;
        }
        // A missing or non-string message is tolerated (the code still says what failed).
        // The id of an error response is null when the peer could not read the request's.
        out.messages.emplace_back(ErrorResponse{std::move(parsed_id), std::move(err)});
        return;
    }
    out.invalid.push_back(invalid(parsed_id, "neither a request, a notification nor a response"));
}

}  // namespace

Parsed parse(std::string_view text) {
    Parsed out;
    thread_local dom::parser parser;
    simdjson::padded_string padded(text);
    dom::element root;
    if (auto err = parser.parse(padded).get(root)) {
        out.invalid.push_back(make_error(std::nullopt, error_code::parse_error,
                                         std::string("Parse error: ") + simdjson::error_message(err)));
        return out;
    }
    if (root.is_array()) {
        out.batch = true;
        dom::array arr = root.get_array().value_unsafe();
        if (arr.size() == 0) {
            out.invalid.push_back(invalid(std::nullopt, "an empty batch"));
            return out;
        }
        for (dom::element e : arr) read_message(e, out);
        return out;
    }
    read_message(root, out);
    return out;
}

namespace {

void append_id(std::string& out, const Id& id) {
    if (const auto* i = std::get_if<std::int64_t>(&id))
        out += std::to_string(*i);
    else
        rath::detail::append_json_string(out, std::get<std::string>(id));
}

void append_message(std::string& out, const Message& m) {
    out += R"({"jsonrpc":"2.0",)";
    std::visit(
        [&](const auto& msg) {
            using T = std::decay_t<decltype(msg)>;
            if constexpr (std::is_same_v<T, Request>) {
                out += R"("id":)";
                append_id(out, msg.id);
                out += R"(,"method":)";
                rath::detail::append_json_string(out, msg.method);
                if (msg.params) {
                    out += R"(,"params":)";
                    rath::detail::append_json_value(out, *msg.params);
                }
            } else if constexpr (std::is_same_v<T, Notification>) {
                out += R"("method":)";
                rath::detail::append_json_string(out, msg.method);
                if (msg.params) {
                    out += R"(,"params":)";
                    rath::detail::append_json_value(out, *msg.params);
                }
            } else if constexpr (std::is_same_v<T, Result>) {
                out += R"("id":)";
                append_id(out, msg.id);
                out += R"(,"result":)";
                rath::detail::append_json_value(out, msg.result);
            } else {
                out += R"("id":)";
                if (msg.id)
                    append_id(out, *msg.id);
                else
                    out += "null";
                out += R"(,"error":{"code":)";
                out += std::to_string(msg.error.code);
                out += R"(,"message":)";
                rath::detail::append_json_string(out, msg.error.message);
                if (msg.error.data) {
                    out += R"(,"data":)";
                    rath::detail::append_json_value(out, *msg.error.data);
                }
                out += '}';
            }
        },
        m);
    out += '}';
}

}  // namespace

std::string serialize(const Message& message) {
    std::string out;
    append_message(out, message);
    return out;
}

std::string serialize_batch(const std::vector<Message>& messages) {
    if (messages.empty()) return {};
    std::string out = "[";
    for (std::size_t i = 0; i < messages.size(); ++i) {
        if (i) out += ',';
        append_message(out, messages[i]);
    }
    out += ']';
    return out;
}

json::value to_json(const Message& message) {
    json::object o;
    o["jsonrpc"] = "2.0";
    std::visit(
        [&](const auto& msg) {
            using T = std::decay_t<decltype(msg)>;
            if constexpr (std::is_same_v<T, Request>) {
                o["id"] = id_to_json(msg.id);
                o["method"] = msg.method;
                if (msg.params) o["params"] = *msg.params;
            } else if constexpr (std::is_same_v<T, Notification>) {
                o["method"] = msg.method;
                if (msg.params) o["params"] = *msg.params;
            } else if constexpr (std::is_same_v<T, Result>) {
                o["id"] = id_to_json(msg.id);
                o["result"] = msg.result;
            } else {
                o["id"] = msg.id ? id_to_json(*msg.id) : json::value(nullptr);
                json::object e;
                e["code"] = msg.error.code;
                e["message"] = msg.error.message;
                if (msg.error.data) e["data"] = *msg.error.data;
                o["error"] = std::move(e);
            }
        },
        message);
    return o;
}

}  // namespace rath::mcp::jsonrpc
