#include "lib/text/json_write.hpp"

#include "lib/text/json_string.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <charconv>

namespace rath::detail {

bool append_json_literal(std::string& out, const boost::json::value& v) {
    switch (v.kind()) {
        case boost::json::kind::null: out += "null"; return true;
        case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; return true;
        case boost::json::kind::int64:
        case boost::json::kind::uint64: {
            char buf[24];
            const auto r = v.is_int64() ? std::to_chars(buf, buf + sizeof buf, v.get_int64())
                                        : std::to_chars(buf, buf + sizeof buf, v.get_uint64());
            out.append(buf, r.ptr);
            return true;
        }
        default: return false;
    }
}

void append_json_value(std::string& out, const boost::json::value& v) {
    switch (v.kind()) {
        case boost::json::kind::null:
        case boost::json::kind::bool_:
        case boost::json::kind::int64:
        case boost::json::kind::uint64: append_json_literal(out, v); return;
        // Boost.JSON has its own shortest form for doubles ("1E0"); let it write them.
        case boost::json::kind::double_: out += boost::json::serialize(v); return;
        case boost::json::kind::string: append_json_string(out, v.get_string()); return;
        case boost::json::kind::array: append_json_value(out, v.get_array()); return;
        case boost::json::kind::object: append_json_value(out, v.get_object()); return;
    }
}

void append_json_value(std::string& out, const boost::json::array& a) {
    out.push_back('[');
    bool first = true;
    for (const auto& x : a) {
        if (!first) out.push_back(',');
        first = false;
        append_json_value(out, x);
    }
    out.push_back(']');
}

void append_json_value(std::string& out, const boost::json::object& o) {
    out.push_back('{');
    bool first = true;
    for (const auto& kv : o) {
        if (!first) out.push_back(',');
        first = false;
        append_json_string(out, kv.key());
        out.push_back(':');
        append_json_value(out, kv.value());
    }
    out.push_back('}');
}

}  // namespace rath::detail
