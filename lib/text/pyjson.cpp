#include "lib/text/pyjson.hpp"

#include "lib/text/json_string.hpp"
#include "lib/text/json_write.hpp"
#include "lib/text/pyrepr.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <cmath>

namespace rath::detail {

namespace {

struct Writer {
    std::string& out;
    const PyJsonOptions& o;
    JsonStringOptions strings{.replace_invalid_utf8 = true,
                              .ensure_ascii = o.ensure_ascii,
                              .escape_line_separators = o.escape_line_separators};

    void newline(unsigned depth) {
        out += '\n';
        out.append(static_cast<std::size_t>(*o.indent) * depth, ' ');
    }
    // Before the member at `index` of a container at `depth`.
    void separate(std::size_t index, unsigned depth) {
        if (index > 0) out += o.compact || o.indent ? "," : ", ";
        if (o.indent) newline(depth + 1);
    }
    void close(std::size_t size, unsigned depth, char bracket) {
        if (o.indent && size > 0) newline(depth);
        out += bracket;
    }

    void value(const boost::json::value& v, unsigned depth) {
        switch (v.kind()) {
            case boost::json::kind::null:
            case boost::json::kind::bool_:
            case boost::json::kind::int64:
            case boost::json::kind::uint64: append_json_literal(out, v); return;
            case boost::json::kind::double_: {
                const double d = v.get_double();
                if (std::isnan(d))
                    out += "NaN";
                else if (std::isinf(d))
                    out += d > 0 ? "Infinity" : "-Infinity";
                else
                    out += pyfloat_repr(d);
                return;
            }
            case boost::json::kind::string: append_json_string(out, v.get_string(), strings); return;
            case boost::json::kind::array: {
                const auto& a = v.get_array();
                out += '[';
                for (std::size_t i = 0; i < a.size(); ++i) {
                    separate(i, depth);
                    value(a[i], depth + 1);
                }
                close(a.size(), depth, ']');
                return;
            }
            case boost::json::kind::object: {
                const auto& obj = v.get_object();
                out += '{';
                std::size_t i = 0;
                for (const auto& kv : obj) {
                    separate(i++, depth);
                    append_json_string(out, kv.key(), strings);
                    out += o.compact ? ":" : ": ";
                    value(kv.value(), depth + 1);
                }
                close(obj.size(), depth, '}');
                return;
            }
        }
    }
};

}  // namespace

void pyjson_append(std::string& out, const boost::json::value& v, const PyJsonOptions& o) {
    Writer{out, o}.value(v, 0);
}

std::string pyjson(const boost::json::value& v, const PyJsonOptions& opts) {
    std::string out;
    pyjson_append(out, v, opts);
    return out;
}

}  // namespace rath::detail
