#include "lib/text/pystr.hpp"

#include "lib/text/pyrepr.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace rath::detail {

namespace {

void append_repr(std::string& out, const boost::json::value& v) {
    switch (v.kind()) {
        case boost::json::kind::null: out += "None"; return;
        case boost::json::kind::bool_: out += v.get_bool() ? "True" : "False"; return;
        case boost::json::kind::int64: out += std::to_string(v.get_int64()); return;
        case boost::json::kind::uint64: out += std::to_string(v.get_uint64()); return;
        case boost::json::kind::double_: out += pyfloat_repr(v.get_double()); return;
        case boost::json::kind::string: out += pyrepr(v.get_string()); return;
        case boost::json::kind::array: {
            out += '[';
            bool first = true;
            for (const auto& e : v.get_array()) {
                if (!first) out += ", ";
                first = false;
                append_repr(out, e);
            }
            out += ']';
            return;
        }
        case boost::json::kind::object: {
            out += '{';
            bool first = true;
            for (const auto& kv : v.get_object()) {
                if (!first) out += ", ";
                first = false;
                out += pyrepr(kv.key());
                out += ": ";
                append_repr(out, kv.value());
            }
            out += '}';
            return;
        }
    }
}

}  // namespace

std::string py_repr(const boost::json::value& v) {
    std::string out;
    append_repr(out, v);
    return out;
}

std::string py_str(const boost::json::value& v) {
    if (v.is_string()) return std::string(v.get_string());
    return py_repr(v);
}

const char* py_type(const boost::json::value& v) noexcept {
    switch (v.kind()) {
        case boost::json::kind::null: return "NoneType";
        case boost::json::kind::bool_: return "bool";
        case boost::json::kind::int64:
        case boost::json::kind::uint64: return "int";
        case boost::json::kind::double_: return "float";
        case boost::json::kind::string: return "str";
        case boost::json::kind::array: return "list";
        case boost::json::kind::object: return "dict";
    }
    return "object";
}

std::string py_strip(std::string_view s) {
    auto b = s.find_first_not_of(" \t\r\n\f\v");
    if (b == std::string_view::npos) return {};
    auto e = s.find_last_not_of(" \t\r\n\f\v");
    return std::string(s.substr(b, e - b + 1));
}

}  // namespace rath::detail
