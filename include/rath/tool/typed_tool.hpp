#pragma once
// A user tool in a few lines: the arguments are a Boost.Describe'd struct, the JSON
// Schema is derived from it, and the arguments are validated and converted before
// the function runs (a mismatch is a ToolArgumentError naming the field).
//
//   struct AddArgs { long long x; };
//   BOOST_DESCRIBE_STRUCT(AddArgs, (), (x))
//   auto add_one = rath::tool::make_tool<AddArgs>("add_one", "Add one to x.",
//       [](rath::Session, AddArgs a) { return boost::json::value(a.x + 1); },
//       {.parallel_safe = true, .blocking = false});
//
// Where the body runs: a body returning an awaitable runs on the runtime, like any
// coroutine (it must not block). A plain function runs on the runtime's blocking pool
// (ToolTraits::blocking, the default), so it may read files, sleep or wait; a quick
// body that never blocks can set `.blocking = false` to run on the io thread and save
// the two thread hops. Either way the Session it gets is the dispatch view of the
// session it was called for: reading its transcript never waits for the loop that
// called the tool.
//
// Thread safety: as FlowToolCall; `fn` is called concurrently when the traits make the
// tool parallel_safe or sandbox_scoped. Errors: arguments that do not match Args throw
// ToolArgumentError ("ValueError") before `fn` runs, and so do numbers that are not
// finite, do not fit the member's type (2**63 for a long long, -1 for an unsigned,
// 1e300 for an int or a float) or are outside ToolTraits::field_bounds; whatever `fn`
// throws fails the call.
#include <rath/session.hpp>
#include <rath/tool/flow_tool.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <boost/mp11/algorithm.hpp>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rath::tool {

// Inclusive limits of a numeric member (a number or an optional number), checked
// before the body runs and sent to the model as JSON Schema minimum/maximum: the
// operator's bounds, which no argument can raise.
struct NumberBounds {
    std::optional<double> minimum{};
    std::optional<double> maximum{};
};

struct ToolTraits {
    bool parallel_safe = false;
    bool sandbox_scoped = false;
    // FlowToolCall::idempotent: a second call with the same arguments changes nothing more.
    bool idempotent = false;
    // A synchronous body may block: run it on the blocking pool (false: on the io thread).
    bool blocking = true;
    std::map<std::string, std::string> field_descriptions{};  // "description" per member name
    std::map<std::string, NumberBounds> field_bounds{};       // top-level numeric members by name
};

namespace detail {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {
    using inner = T;
};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {
    using inner = T;
};
template <class T>
struct is_awaitable : std::false_type {};
template <class T, class E>
struct is_awaitable<boost::asio::awaitable<T, E>> : std::true_type {
    using inner = T;
};

template <class T>
constexpr bool described = boost::describe::has_describe_members<T>::value;

template <class T>
boost::json::object object_schema(const std::map<std::string, std::string>& descriptions = {},
                                  const std::map<std::string, NumberBounds>& bounds = {});

template <class T>
constexpr bool is_number_v = (std::is_integral_v<T> && !std::is_same_v<T, bool>) || std::is_floating_point_v<T>;

template <class T>
boost::json::object type_schema() {
    using boost::json::object;
    if constexpr (std::is_same_v<T, bool>)
        return object{{"type", "boolean"}};
    else if constexpr (std::is_integral_v<T>)
        return object{{"type", "integer"}};
    else if constexpr (std::is_floating_point_v<T>)
        return object{{"type", "number"}};
    else if constexpr (std::is_same_v<T, std::string>)
        return object{{"type", "string"}};
    else if constexpr (is_optional<T>::value) {
        auto s = type_schema<typename is_optional<T>::inner>();
        s["type"] = boost::json::array{s["type"], "null"};
        return s;
    } else if constexpr (is_vector<T>::value)
        return object{{"type", "array"}, {"items", type_schema<typename is_vector<T>::inner>()}};
    else if constexpr (std::is_same_v<T, boost::json::value>)
        return object{};
    else {
        static_assert(described<T>, "tool argument types: bool, integers, floating point, std::string, "
                                    "std::optional, std::vector, boost::json::value or a described struct");
        return object_schema<T>();
    }
}

template <class T>
boost::json::object object_schema(const std::map<std::string, std::string>& descriptions,
                                  const std::map<std::string, NumberBounds>& bounds) {
    boost::json::object props;
    boost::json::array required;
    boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_public>>([&](auto D) {
        using M = std::remove_cvref_t<decltype(std::declval<T&>().*D.pointer)>;
        auto s = type_schema<M>();
        if (auto it = descriptions.find(D.name); it != descriptions.end()) s["description"] = it->second;
        if (auto it = bounds.find(D.name); it != bounds.end()) {
            if (it->second.minimum) s["minimum"] = *it->second.minimum;
            if (it->second.maximum) s["maximum"] = *it->second.maximum;
        }
        props[D.name] = std::move(s);
        if (!is_optional<M>::value) required.emplace_back(D.name);
    });
    return boost::json::object{{"type", "object"},
                               {"properties", std::move(props)},
                               {"required", std::move(required)},
                               {"additionalProperties", false}};
}

[[noreturn]] inline void bad_argument(const std::string& where, const char* want, const boost::json::value& got) {
    static constexpr const char* names[] = {"null", "bool", "int", "int", "float", "str", "list", "dict"};
    throw ToolArgumentError("argument '" + where + "': expected " + want + ", got " +
                                names[static_cast<int>(got.kind())],
                            "ValueError");
}

inline std::string number_text(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, d);  // shortest round trip: "61", "0.5", "1e+300"
    return std::string(buf, r.ptr);
}

[[noreturn]] inline void bad_number(const std::string& where, const std::string& text, bool negative) {
    throw ToolArgumentError("argument '" + where + "': " + text +
                                (negative ? " is negative" : " is not a finite number in the argument's range"),
                            "ValueError");
}

// The operator's bounds on top-level numeric members (ToolTraits::field_bounds).
template <class T>
void check_bounds(const T& args, const std::map<std::string, NumberBounds>& bounds) {
    if (bounds.empty()) return;
    boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_public>>([&](auto D) {
        using M = std::remove_cvref_t<decltype(args.*D.pointer)>;
        auto it = bounds.find(D.name);
        if (it == bounds.end()) return;
        std::optional<double> value;
        if constexpr (is_number_v<M>) {
            value = static_cast<double>(args.*D.pointer);
        } else if constexpr (is_optional<M>::value) {
            if constexpr (is_number_v<typename is_optional<M>::inner>)
                if (args.*D.pointer) value = static_cast<double>(*(args.*D.pointer));
        }
        if (!value) return;
        const auto& b = it->second;
        if (b.minimum && *value < *b.minimum)
            throw ToolArgumentError("argument '" + std::string(D.name) + "': " + number_text(*value) +
                                        " is below the minimum of " + number_text(*b.minimum),
                                    "ValueError");
        if (b.maximum && *value > *b.maximum)
            throw ToolArgumentError("argument '" + std::string(D.name) + "': " + number_text(*value) +
                                        " is over the maximum of " + number_text(*b.maximum),
                                    "ValueError");
    });
}

template <class T>
T from_json(const boost::json::value& v, const std::string& where);

template <class T>
T from_json(const boost::json::value& v, const std::string& where) {
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_bool()) bad_argument(where, "boolean", v);
        return v.get_bool();
    } else if constexpr (std::is_integral_v<T>) {
        // Every conversion is range-checked first: a model's 2**63 or 1e300 is an
        // error, never a wrapped or undefined value.
        if (v.is_int64()) {
            if (std::in_range<T>(v.get_int64())) return static_cast<T>(v.get_int64());
            bad_number(where, std::to_string(v.get_int64()), std::is_unsigned_v<T> && v.get_int64() < 0);
        }
        if (v.is_uint64()) {
            if (std::in_range<T>(v.get_uint64())) return static_cast<T>(v.get_uint64());
            bad_number(where, std::to_string(v.get_uint64()), false);
        }
        if (v.is_double()) {
            double d = v.get_double();
            if (!std::isfinite(d)) bad_number(where, number_text(d), false);
            if (d == std::trunc(d)) {
                // [lo, 2**digits): both ends exact in a double, so the cast below is defined.
                const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);
                const double lo = std::is_signed_v<T> ? -hi : 0.0;
                if (d >= lo && d < hi) return static_cast<T>(d);
                bad_number(where, number_text(d), std::is_unsigned_v<T> && d < 0);
            }
        }
        bad_argument(where, "integer", v);
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number()) bad_argument(where, "number", v);
        double d = v.to_number<double>();
        if (!std::isfinite(d) || std::fabs(d) > static_cast<double>(std::numeric_limits<T>::max()))
            bad_number(where, number_text(d), false);
        return static_cast<T>(d);
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!v.is_string()) bad_argument(where, "string", v);
        return std::string(v.get_string());
    } else if constexpr (is_optional<T>::value) {
        if (v.is_null()) return std::nullopt;
        return from_json<typename is_optional<T>::inner>(v, where);
    } else if constexpr (is_vector<T>::value) {
        if (!v.is_array()) bad_argument(where, "array", v);
        T out;
        std::size_t i = 0;
        for (auto& x : v.get_array())
            out.push_back(from_json<typename is_vector<T>::inner>(x, where + "[" + std::to_string(i++) + "]"));
        return out;
    } else if constexpr (std::is_same_v<T, boost::json::value>) {
        return v;
    } else {
        if (!v.is_object()) bad_argument(where, "object", v);
        const auto& o = v.get_object();
        T out{};
        std::size_t known = 0;
        boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_public>>([&](auto D) {
            using M = std::remove_cvref_t<decltype(out.*D.pointer)>;
            std::string name = where.empty() ? D.name : where + "." + D.name;
            auto it = o.find(D.name);
            if (it == o.end()) {
                if constexpr (!is_optional<M>::value)
                    throw ToolArgumentError("missing required argument '" + name + "'", "ValueError");
                return;
            }
            ++known;
            out.*D.pointer = from_json<M>(it->value(), name);
        });
        if (known != o.size())
            for (auto& [k, _] : o) {
                bool found = false;
                boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_public>>(
                    [&](auto D) { found = found || k == D.name; });
                if (!found)
                    throw ToolArgumentError("unexpected argument '" + (where.empty() ? std::string(k) : where + "." + std::string(k)) + "'",
                                            "ValueError");
            }
        return out;
    }
}

template <class R>
boost::json::value result_to_json(R&& r) {
    using T = std::remove_cvref_t<R>;
    if constexpr (std::is_same_v<T, boost::json::value>)
        return std::forward<R>(r);
    else if constexpr (described<T>)
        return boost::json::value_from(std::forward<R>(r));
    else
        return boost::json::value(std::forward<R>(r));
}

template <class Args, class F>
class TypedTool final : public FlowToolCall {
public:
    TypedTool(std::string name, std::string description, F fn, ToolTraits traits)
        : FlowToolCall(std::move(name), std::move(description),
                       object_schema<Args>(traits.field_descriptions, traits.field_bounds)),
          fn_(std::move(fn)),
          traits_(std::move(traits)) {}
    bool parallel_safe() const override { return traits_.parallel_safe; }
    bool sandbox_scoped() const override { return traits_.sandbox_scoped; }
    bool idempotent() const override { return traits_.idempotent; }

    [[nodiscard]] boost::asio::awaitable<ToolReturn> async_call(Session session,
                                                                boost::json::object arguments) override {
        Args args = from_json<Args>(boost::json::value(std::move(arguments)), "");  // validated before the call
        check_bounds(args, traits_.field_bounds);
        using R = std::invoke_result_t<F&, Session, Args>;
        if constexpr (is_awaitable<R>::value) {
            auto pending = fn_(std::move(session), std::move(args));
            auto r = co_await std::move(pending);
            co_return ToolReturn(result_to_json(std::move(r)));
        } else if (traits_.blocking) {
            // Named, not a temporary in the co_await expression (GCC 12).
            std::function<ToolReturn()> body = [this, &session, &args] {
                return ToolReturn(result_to_json(fn_(std::move(session), std::move(args))));
            };
            co_return co_await run_blocking(std::move(body));
        } else {
            co_return ToolReturn(result_to_json(fn_(std::move(session), std::move(args))));
        }
    }

private:
    F fn_;
    ToolTraits traits_;
};

}  // namespace detail

// Schema of a described argument struct (what make_tool sends as `parameters`).
template <class Args>
[[nodiscard]] boost::json::object schema_of(const std::map<std::string, std::string>& descriptions = {},
                                            const std::map<std::string, NumberBounds>& bounds = {}) {
    return detail::object_schema<Args>(descriptions, bounds);
}

// `fn(Session, Args)` returns a JSON value, a described struct, a number, a string,
// or an awaitable of one of those.
template <class Args, class F>
[[nodiscard]] FlowToolPtr make_tool(std::string name, std::string description, F fn, ToolTraits traits = {}) {
    return std::make_shared<detail::TypedTool<Args, F>>(std::move(name), std::move(description), std::move(fn),
                                                         std::move(traits));
}

}  // namespace rath::tool
