#include <rath/backend/spec.hpp>
#include <rath/backend/error.hpp>

#include <boost/json.hpp>

namespace rath::backend {

namespace json = boost::json;

// Every key is written, unset ones as null (backend_tools.md §5.2); empty collections
// stay empty (upstream behaviour).
json::object SandboxSpec::to_json() const {
    json::object o;
    o["image"] = image ? json::value(*image) : json::value(nullptr);
    if (entrypoint) {
        json::array a;
        for (auto& e : *entrypoint) a.emplace_back(e);
        o["entrypoint"] = std::move(a);
    } else {
        o["entrypoint"] = nullptr;
    }
    if (env) {
        json::object e;
        for (auto& [k, v] : *env) e[k] = v;
        o["env"] = std::move(e);
    } else {
        o["env"] = nullptr;
    }
    o["timeout_seconds"] = timeout ? json::value(timeout->count()) : json::value(nullptr);
    o["working_dir"] = working_dir ? json::value(*working_dir) : json::value(nullptr);
    return o;
}

SandboxSpec SandboxSpec::from_json(const json::value& v) {
    auto bad = [](const std::string& key, const char* want) {
        return BackendError("sandbox spec: key '" + key + "' must be " + want);
    };
    if (v.is_null()) return {};
    if (!v.is_object()) throw BackendError("sandbox spec: expected a JSON object");
    SandboxSpec s;
    for (auto& [k, val] : v.as_object()) {
        std::string key(k);
        if (key == "image") {
            if (!val.is_null()) {
                if (!val.is_string()) throw bad(key, "a string or null");
                s.image = std::string(val.as_string());
            }
        } else if (key == "entrypoint") {
            if (!val.is_null()) {
                if (!val.is_array()) throw bad(key, "a list of strings or null");
                std::vector<std::string> ep;
                for (auto& e : val.as_array()) {
                    if (!e.is_string()) throw bad(key, "a list of strings or null");
                    ep.emplace_back(e.as_string());
                }
                s.entrypoint = std::move(ep);
            }
        } else if (key == "env") {
            if (!val.is_null()) {
                if (!val.is_object()) throw bad(key, "an object of strings or null");
                std::map<std::string, std::string> env;
                for (auto& [ek, ev] : val.as_object()) {
                    if (!ev.is_string()) throw bad(key + "." + std::string(ek), "a string");
                    env[std::string(ek)] = std::string(ev.as_string());
                }
                s.env = std::move(env);
            }
        } else if (key == "timeout_seconds" || key == "timeout") {  // "timeout": early rath writers
            if (!val.is_null()) {
                if (!val.is_number()) throw bad(key, "a number of seconds or null");
                s.timeout = std::chrono::duration<double>(val.to_number<double>());
            }
        } else if (key == "working_dir") {
            if (!val.is_null()) {
                if (!val.is_string()) throw bad(key, "a string or null");
                s.working_dir = std::string(val.as_string());
            }
        }
        // Unknown keys are ignored: newer writers may add fields.
    }
    return s;
}

}  // namespace rath::backend
