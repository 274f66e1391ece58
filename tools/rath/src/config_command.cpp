// rath config show | check: the effective configuration with where each value comes
// from, and a live check of it (keys, one cheap request per provider, MCP servers start),
// all through the library's config store, provider resolution, chat clients and MCP
// client.
#include "cli.hpp"
#include "output.hpp"

#include <rath/config/env.hpp>
#include <rath/config/paths.hpp>
#include <rath/config/store.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/message.hpp>
#include <rath/llm/request.hpp>
#include <rath/llm/provider.hpp>
#include <rath/llm/registry.hpp>
#include <rath/mcp/tools.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

namespace rath::cli {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

struct Entry {
    std::string key;
    std::string value;   // masked when secret
    std::string source;  // "flag --config", "env OPENAI_API_KEY", "file", "default"
};

std::string scalar_text(const json::value& v) {
    if (v.is_string()) return std::string(v.get_string());
    return json::serialize(v);
}

const json::value* find_path(const json::object& doc, const std::vector<std::string>& path) {
    const json::value* cur = nullptr;
    const json::object* obj = &doc;
    for (const auto& part : path) {
        if (!obj) return nullptr;
        cur = obj->if_contains(part);
        if (!cur) return nullptr;
        obj = cur->if_object();
    }
    return cur;
}

std::string join_path(const std::vector<std::string>& path) {
    std::string out;
    for (const auto& p : path) {
        if (!out.empty()) out += '.';
        out += p;
    }
    return out;
}

// Every leaf of the document: "default" when the value is the one a fresh config has
// at that path, "unset" for another null (a field the file leaves out), else "file".
void flatten(const json::value& v, std::vector<std::string>& path, const json::object& defaults,
             std::vector<Entry>& out) {
    if (const auto* o = v.if_object()) {
        if (o->empty() && !path.empty()) {
            const json::value* d = find_path(defaults, path);
            out.push_back({join_path(path), "{}", d && *d == v ? "default" : "file"});
        }
        for (const auto& [k, child] : *o) {
            path.emplace_back(k);
            flatten(child, path, defaults, out);
            path.pop_back();
        }
        return;
    }
    const json::value* d = find_path(defaults, path);
    const std::string source = d && *d == v ? "default" : v.is_null() ? "unset" : "file";
    std::string text = scalar_text(v);
    if (!path.empty() && is_secret_name(path.back()) && v.is_string() && !v.get_string().empty()) text = mask_secret(text);
    out.push_back({join_path(path), std::move(text), source});
}

config::ProviderField field_of(std::string_view field) {
    return field == "api_key"    ? config::ProviderField::api_key
           : field == "base_url" ? config::ProviderField::base_url
                                 : config::ProviderField::model;
}

// The value of `field` for a provider entry and where it comes from: the entry, else
// the first set variable of the library's fallback table, else nothing.
std::optional<std::pair<std::string, std::string>> resolve_field(const config::LlmProviderEntry& e,
                                                                 std::string_view field) {
    const std::optional<std::string>* own = field == "api_key"    ? &e.api_key
                                            : field == "base_url" ? &e.base_url
                                                                  : &e.model;
    if (*own && !(*own)->empty()) return std::pair{**own, std::string("file")};
    const bool azure = e.base_url && e.base_url->find(".azure.com") != std::string::npos;
    for (auto name : config::provider_env(e.provider_kind, field_of(field), azure))
        if (auto v = config::env(name)) return std::pair{*v, "env " + std::string(name)};
    return std::nullopt;
}

// credentials.json as JSON, null when absent or unreadable (the store warns about that).
json::value read_credentials(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return nullptr;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    return ec ? json::value(nullptr) : v;
}

std::string config_file_source(const Context& ctx) {
    if (ctx.config) return "flag --config";
    if (config::env(config::openrath_home_env))
        return "env " + std::string(config::openrath_home_env);
    if (config::is_project_local(config::resolve_config_dir())) return "project ./.openrath";
    return "default ~/.openrath";
}

std::shared_ptr<config::ConfigStore> open_store(const Context& ctx) {
    return std::make_shared<config::ConfigStore>(ctx.config_path());
}

void run_show(const Context& ctx) {
    auto store = open_store(ctx);
    std::vector<Entry> entries;
    const std::string file_source = config_file_source(ctx);
    entries.push_back({"config_file", store->path().string() + (store->loaded_from_file() ? "" : " (missing: defaults)"),
                       file_source});
    entries.push_back({"sessions_dir", ctx.sessions_dir().string(), ctx.dir ? "flag --dir" : file_source});
    std::vector<std::string> path;
    const json::object defaults = json::parse(config::default_config_text()).as_object();
    flatten(store->document(), path, defaults, entries);
    // Keys merged from credentials.json are shown with that file as their source.
    if (auto creds = read_credentials(config::credentials_path(store->path())); creds.is_object())
        for (auto& e : entries) {
            std::vector<std::string> parts;
            for (std::size_t at = 0, dot; at <= e.key.size(); at = dot + 1) {
                dot = e.key.find('.', at);
                if (dot == std::string::npos) dot = e.key.size();
                parts.push_back(e.key.substr(at, dot - at));
            }
            if (parts.size() != 4 || parts[1] != "providers" || parts[3] != "api_key") continue;
            if (find_path(creds.as_object(), {parts[0], "providers", parts[2]})) e.source = "credentials.json";
        }
    // Provider fields the entry leaves unset but the environment supplies.
    for (const auto& name : store->llm_provider_names()) {
        const auto e = store->get_llm_provider(name);
        for (std::string_view field : {"api_key", "base_url", "model"}) {
            auto r = resolve_field(e, field);
            if (!r || r->second == "file") continue;
            Entry env{"llm.providers." + name + "." + std::string(field), field == "api_key" ? mask_secret(r->first) : r->first,
                      r->second};
            auto same = std::find_if(entries.begin(), entries.end(), [&](const Entry& x) { return x.key == env.key; });
            if (same != entries.end())
                *same = std::move(env);
            else
                entries.push_back(std::move(env));
        }
    }
    if (ctx.json) {
        json::array a;
        for (const auto& e : entries) a.emplace_back(json::object{{"key", e.key}, {"value", e.value}, {"source", e.source}});
        std::cout << json::serialize(a) << '\n';
        return;
    }
    Style style(ctx.use_color());
    std::size_t width = 0;
    for (const auto& e : entries) width = std::max(width, e.key.size());
    for (const auto& e : entries)
        std::cout << pad(e.key, width + 2) << e.value << "  " << style.dim("(" + e.source + ")") << '\n';
}

struct CheckResult {
    std::string what;
    bool ok = false;
    std::string detail;
};

CheckResult check_provider(const std::shared_ptr<config::ConfigStore>& store, const std::string& name,
                           double timeout_s) {
    CheckResult r{"provider " + name, false, {}};
    const auto entry = store->get_llm_provider(name);
    const auto key = resolve_field(entry, "api_key");
    if (!key && entry.provider_kind != "litellm") {
        std::string vars;
        for (auto n : config::provider_env(entry.provider_kind, config::ProviderField::api_key))
            vars += (vars.empty() ? "" : " or ") + std::string(n);
        r.detail = "no API key (set api_key in the entry or " + vars + ")";
        return r;
    }
    const std::string key_from = key ? "key from " + key->second : "no key needed";
    try {
        llm::Provider provider = llm::Provider::from_config(name, store);
        provider.retry_max_attempts = 1;  // a check, not a run: one attempt
        llm::ChatClientOptions options;
        const auto limit = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
        options.http_options.connect_timeout = limit;
        options.http_options.read_timeout = limit;
        options.http_options.total_timeout = limit;
        auto client = llm::chat_client_for(provider, options);
        // The cheapest request every provider kind answers: one word in, one token out.
        llm::ChatRequest request;
        request.messages.push_back(llm::Message::user("ping"));
        request.sampling.max_tokens = 1;
        const auto start = std::chrono::steady_clock::now();
        auto response = client->complete(request);
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
        r.ok = true;
        r.detail = key_from + "; answered in " + std::to_string(ms) + " ms";
        if (!response.model.empty()) r.detail += " by " + response.model;
    } catch (const std::exception& e) {
        r.detail = key_from + "; request failed: " + e.what();
    }
    return r;
}

CheckResult check_mcp(const std::shared_ptr<config::ConfigStore>& store, const std::string& name) {
    CheckResult r{"mcp " + name, false, {}};
    try {
        auto tools = mcp::mcp_tools_from_config(name, store);
        r.ok = true;
        r.detail = "started; " + std::to_string(tools.size()) + " tool(s)";
    } catch (const std::exception& e) {
        r.detail = std::string("did not start: ") + e.what();
    }
    return r;
}

void run_check(const Context& ctx, double timeout_s, bool skip_network, bool skip_mcp) {
    auto store = open_store(ctx);
    std::vector<CheckResult> results;
    results.push_back({"config " + store->path().string(), true,
                       store->loaded_from_file() ? "valid" : "missing: every value is a default"});
    for (const auto& name : store->llm_provider_names()) {
        if (skip_network) {
            const auto entry = store->get_llm_provider(name);
            const auto key = resolve_field(entry, "api_key");
            const bool ok = key || entry.provider_kind == "litellm";
            results.push_back({"provider " + name, ok, ok ? (key ? "key from " + key->second : "no key needed") : "no API key"});
            continue;
        }
        results.push_back(check_provider(store, name, timeout_s));
    }
    if (!skip_mcp)
        for (const auto& [name, entry] : store->enabled_mcp_servers()) results.push_back(check_mcp(store, name));

    const auto failed = static_cast<std::size_t>(
        std::count_if(results.begin(), results.end(), [](const CheckResult& r) { return !r.ok; }));
    if (ctx.json) {
        json::array a;
        for (const auto& r : results) a.emplace_back(json::object{{"check", r.what}, {"ok", r.ok}, {"detail", r.detail}});
        std::cout << json::serialize(json::object{{"ok", failed == 0}, {"checks", std::move(a)}}) << '\n';
    } else {
        Style style(ctx.use_color());
        for (const auto& r : results)
            std::cout << (r.ok ? style.green("ok    ") : style.red("FAIL  ")) << r.what << ": " << r.detail << '\n';
        std::cout << style.bold(std::to_string(results.size() - failed) + " ok, " + std::to_string(failed) + " failed")
                  << '\n';
    }
    if (failed) throw CLI::RuntimeError(exit_failure);
}

}  // namespace

void add_config_command(CLI::App& app, Context& ctx) {
    auto* config = app.add_subcommand(
        "config", "The configuration: write it (init, set), show it with sources, check it works, list variables (env)");
    config->require_subcommand(1);
    auto* show = config->add_subcommand(
        "show", "Every effective value with its source (flag, env, file, default); secrets masked");
    show->callback([&ctx] { run_show(ctx); });

    auto timeout = std::make_shared<double>(20);
    auto offline = std::make_shared<bool>(false);
    auto no_mcp = std::make_shared<bool>(false);
    auto* check = config->add_subcommand(
        "check", "Keys present per provider, each provider answers one 1-token request, each enabled MCP server "
                 "starts; exit 1 if any check fails");
    check->add_option("--timeout", *timeout, "Seconds allowed per provider request")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    check->add_flag("--offline", *offline, "Check keys only; send no request");
    check->add_flag("--no-mcp", *no_mcp, "Do not start the MCP servers");
    check->callback([&ctx, timeout, offline, no_mcp] { run_check(ctx, *timeout, *offline, *no_mcp); });
    add_config_edit_commands(*config, ctx);
}

}  // namespace rath::cli
