#include "lib/session/pystr.hpp"

#include "lib/core/pyjson.hpp"
#include "lib/core/pyrepr.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cmath>

namespace rath::detail {

namespace {
std::string float_str(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    return pyfloat_repr(d);
}
}  // namespace

std::string py_repr(const boost::json::value& v) {
    switch (v.kind()) {
        case boost::json::kind::null: return "None";
        case boost::json::kind::bool_: return v.get_bool() ? "True" : "False";
        case boost::json::kind::int64: return std::to_string(v.get_int64());
        case boost::json::kind::uint64: return std::to_string(v.get_uint64());
        case boost::json::kind::double_: return float_str(v.get_double());
        case boost::json::kind::string: return pyrepr(v.get_string());
        case boost::json::kind::array: {
            std::string out = "[";
            bool first = true;
            for (auto& e : v.get_array()) {
                if (!first) out += ", ";
                first = false;
                out += py_repr(e);
            }
            return out + "]";
        }
        case boost::json::kind::object: {
            std::string out = "{";
            bool first = true;
            for (auto& kv : v.get_object()) {
                if (!first) out += ", ";
                first = false;
                out += pyrepr(kv.key());
                out += ": ";
                out += py_repr(kv.value());
            }
            return out + "}";
        }
    }
    return "None";
}

std::string py_str(const boost::json::value& v) {
    if (v.is_string()) return std::string(v.get_string());
    return py_repr(v);
}

}  // namespace rath::detail
