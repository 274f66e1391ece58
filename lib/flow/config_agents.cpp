#include <rath/flow/config_agents.hpp>

#include <rath/llm/provider.hpp>
#include <rath/mcp/tools.hpp>

#include <boost/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace rath::flow {

namespace json = boost::json;

namespace {

std::optional<std::string> optional_string(const config::ConfigStore& store, const json::object& o,
                                           std::string_view key, const std::string& where) {
    auto* v = o.if_contains(key);
    if (!v || v->is_null()) return std::nullopt;
    if (!v->is_string())
        throw config::ConfigError(store.path().string() + ": " + where + "." + std::string(key) + " must be a string");
    return std::string(v->get_string());
}

// A list of strings under `key` (none when absent or null).
std::vector<std::string> optional_names(const config::ConfigStore& store, const json::object& o, std::string_view key,
                                        const std::string& where, std::string_view what) {
    std::vector<std::string> out;
    auto* m = o.if_contains(key);
    if (!m || m->is_null()) return out;
    const auto bad = [&] {
        return config::ConfigError(store.path().string() + ": " + where + "." + std::string(key) + " must be a list of " +
                                   std::string(what));
    };
    if (!m->is_array()) throw bad();
    for (const auto& n : m->get_array()) {
        if (!n.is_string()) throw bad();
        out.emplace_back(n.get_string());
    }
    return out;
}

}  // namespace

std::vector<ConfigAgent> read_config_agents(const config::ConfigStore& store) {
    std::vector<ConfigAgent> out;
    auto doc = store.document();
    auto* section = doc.if_contains("agents");
    if (!section) return out;
    const std::string file = store.path().string();
    if (!section->is_object()) throw config::ConfigError(file + ": \"agents\" must be an object");
    for (auto& [name, v] : section->get_object()) {
        std::string where = "agents." + std::string(name);
        if (!v.is_object()) throw config::ConfigError(file + ": " + where + " must be an object");
        const auto& o = v.get_object();
        ConfigAgent a;
        a.name = name;
        auto prompt = optional_string(store, o, "system_prompt", where);
        if (!prompt) throw config::ConfigError(file + ": " + where + ".system_prompt is required");
        a.system_prompt = *prompt;
        a.provider = optional_string(store, o, "provider", where);
        a.model = optional_string(store, o, "model", where);
        a.description = optional_string(store, o, "description", where);
        if (auto* r = o.if_contains("max_tool_rounds"); r && !r->is_null()) {
            if (!r->is_int64() || r->get_int64() < 1 || r->get_int64() > 10000)
                throw config::ConfigError(file + ": " + where + ".max_tool_rounds must be an integer in [1, 10000]");
            a.max_tool_rounds = static_cast<int>(r->get_int64());
        }
        a.mcp = optional_names(store, o, "mcp", where, "MCP server names");
        a.tools = optional_names(store, o, "tools", where, "tool names");
        a.backend = optional_string(store, o, "backend", where);
        if (auto* t = o.if_contains("idempotent_tools"); t && !t->is_null()) {
            if (!t->is_object())
                throw config::ConfigError(file + ": " + where + ".idempotent_tools must be an object of booleans");
            for (auto& [tool, flag] : t->get_object()) {
                if (!flag.is_bool())
                    throw config::ConfigError(file + ": " + where + ".idempotent_tools." + std::string(tool) +
                                              " must be true or false");
                a.idempotent_tools[std::string(tool)] = flag.get_bool();
            }
        }
        out.push_back(std::move(a));
    }
    return out;
}

ConfigAgent find_config_agent(const config::ConfigStore& store, std::string_view name) {
    auto agents = read_config_agents(store);
    for (auto& a : agents)
        if (a.name == name) return a;
    std::string names;
    for (auto& a : agents) names += (names.empty() ? "'" : ", '") + a.name + "'";
    throw config::ConfigLookupError("agent '" + std::string(name) + "' not found in " + store.path().string() +
                                    "; available: [" + names + "]");
}

std::vector<tool::FlowToolPtr> linked_config_tools(const ConfigAgent& entry, const config::ConfigStore& store,
                                                   const tool::ToolSet& linked_tools) {
    const std::string where = store.path().string() + ": agents." + entry.name;
    std::vector<tool::FlowToolPtr> out;
    std::set<std::string, std::less<>> names;
    for (const auto& wanted : entry.tools) {
        tool::FlowToolPtr found;
        for (const auto& t : linked_tools)
            if (t->name() == wanted) found = t;
        if (!found) {
            std::string have;
            for (const auto& t : linked_tools) have += (have.empty() ? "'" : ", '") + t->name() + "'";
            throw config::ConfigLookupError(where + ": tool '" + wanted + "' is not linked into this program; it links [" +
                                            have + "] (C++ tools reach a worker through rath/cluster/worker.hpp, tools "
                                            "in other languages through \"mcp\")");
        }
        if (!names.insert(wanted).second)
            throw config::ConfigError(where + ": tool '" + wanted + "' is named twice or has the name of another tool of the agent");
        out.push_back(std::move(found));
    }
    return out;
}

AgentOptions config_agent_options(const ConfigAgent& entry, const std::shared_ptr<config::ConfigStore>& store,
                                  const tool::ToolSet& linked_tools) {
    AgentOptions ao;
    ao.loop.provider = llm::Provider::from_config(entry.provider, store);
    if (entry.model) ao.loop.provider.model = entry.model;
    ao.loop.max_tool_rounds = entry.max_tool_rounds;
    ao.description = entry.description.value_or("");
    std::vector<tool::FlowToolPtr> tools(ao.loop.tools.begin(), ao.loop.tools.end());
    std::set<std::string, std::less<>> names;
    for (const auto& t : tools) names.insert(t->name());
    const std::string where = store->path().string() + ": agents." + entry.name;
    for (auto& t : linked_config_tools(entry, *store, linked_tools)) {
        names.insert(t->name());
        tools.push_back(std::move(t));
    }
    for (const auto& server : entry.mcp)
        for (auto& t : mcp::mcp_tools_from_config(server, store)) {
            if (!names.insert(t->name()).second)
                throw config::ConfigError(where + ": tool '" + t->name() +
                                          "' of MCP server '" + server +
                                          "' has the name of another tool of the agent; give the server a tool_prefix");
            tools.push_back(std::move(t));
        }
    ao.loop.tools = tool::ToolSet(std::move(tools));
    return ao;
}

Agent make_config_agent(const ConfigAgent& entry, const std::shared_ptr<config::ConfigStore>& store,
                        const tool::ToolSet& linked_tools) {
    return Agent(entry.system_prompt, config_agent_options(entry, store, linked_tools));
}

}  // namespace rath::flow
