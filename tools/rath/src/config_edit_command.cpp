// rath config init | set | env: write config.json (keys go to credentials.json through
// the library's store), change one value, and list the environment variables rath reads.
#include "cli.hpp"
#include "output.hpp"

#include <rath/config/env.hpp>
#include <rath/config/store.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <termios.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace rath::cli {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// "a.b.c" -> {"a","b","c"}; empty parts are a usage error.
std::vector<std::string> split_key(const std::string& key) {
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(key);
    while (std::getline(in, part, '.')) {
        if (part.empty()) throw CLI::ValidationError("KEY", "'" + key + "' has an empty part; write e.g. llm.default_provider");
        parts.push_back(part);
    }
    if (parts.empty()) throw CLI::ValidationError("KEY", "the key is empty");
    return parts;
}

// VALUE as JSON when it is a JSON document (42, true, null, ["a"], {"x":1}), else the
// text itself: `set llm.providers.p.model gpt-4o` needs no quotes.
json::value parse_value(const std::string& text, bool as_string) {
    if (as_string) return json::value(text);
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec) return json::value(text);
    return v;
}

void set_path(json::object& doc, const std::vector<std::string>& path, json::value v) {
    json::object* at = &doc;
    for (std::size_t i = 0; i + 1 < path.size(); ++i) {
        json::value& next = (*at)[path[i]];
        if (next.is_null()) next = json::object{};
        if (!next.is_object()) {
            std::string where;
            for (std::size_t j = 0; j <= i; ++j) where += (j ? "." : "") + path[j];
            throw CommandError(where + " is not an object; cannot set a key inside it");
        }
        at = &next.as_object();
    }
    (*at)[path.back()] = std::move(v);
}

std::string shown(const std::vector<std::string>& path, const json::value& v) {
    if (is_secret_name(path.back()) && v.is_string()) return mask_secret(v.get_string());
    return json::serialize(v);
}

void run_set(const Context& ctx, const std::string& key, const std::string& value, bool as_string) {
    const auto path = split_key(key);
    config::ConfigStore store(ctx.config_path());
    json::object doc = store.document();
    json::value v = parse_value(value, as_string);
    const std::string text = shown(path, v);
    set_path(doc, path, std::move(v));
    try {
        store.set_document(std::move(doc));
    } catch (const config::ConfigError& e) {
        throw CommandError(std::string("not set: ") + e.what());
    }
    store.save();
    if (ctx.json) {
        std::cout << json::serialize(json::object{{"key", key}, {"value", text}, {"file", store.path().string()}}) << '\n';
        return;
    }
    std::cout << key << " = " << text << "  (" << store.path().string() << ")\n";
}

struct InitOptions {
    std::string provider = "default";
    std::string kind = "openai";
    std::string model;
    std::string base_url;
    std::string api_key;
    std::string api_key_env;
    std::string memory_path;
    std::vector<std::string> mcp;  // NAME=COMMAND WITH ARGS
    std::string sandbox_domain;
    bool force = false;
    bool interactive = false;
};

// One line from stdin after a prompt on stderr; `def` when the answer is empty. Without
// echo for secrets when stdin is a terminal.
std::string ask(const std::string& question, const std::string& def, bool secret = false) {
    std::cerr << question << (def.empty() ? "" : " [" + def + "]") << ": " << std::flush;
    termios old{};
    const bool tty = ::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &old) == 0;
    if (secret && tty) {
        termios quiet = old;
        quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
        ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
    }
    std::string line;
    const bool got = static_cast<bool>(std::getline(std::cin, line));
    if (secret && tty) {
        ::tcsetattr(STDIN_FILENO, TCSANOW, &old);
        std::cerr << '\n';
    }
    if (!got) throw CommandError("config init: input ended before every question was answered");
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    return line.empty() ? def : line;
}

std::vector<std::string> split_words(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

void run_init(const Context& ctx, InitOptions o) {
    const fs::path path = ctx.config_path();
    std::error_code ec;
    if (fs::exists(path, ec) && !o.force)
        throw CommandError(path.string() + " exists; change it with `rath config set`, or pass --force to update it");
    if (o.interactive) {
        o.provider = ask("provider name", o.provider);
        o.kind = ask("provider kind (openai, anthropic, litellm, atlascloud)", o.kind);
        o.model = ask("model (empty: the provider's default variable)", o.model);
        o.base_url = ask("base URL (empty: the provider's default)", o.base_url);
        if (o.api_key.empty() && o.api_key_env.empty())
            o.api_key = ask("API key (empty: from the environment; stored in credentials.json)", "", true);
        o.memory_path = ask("local memory store directory (empty: none)", o.memory_path);
        o.sandbox_domain = ask("OpenSandbox server host:port (empty: local sandboxes)", o.sandbox_domain);
    }
    if (!o.api_key_env.empty()) {
        const char* v = std::getenv(o.api_key_env.c_str());
        if (!v || !*v) throw CommandError("--api-key-env " + o.api_key_env + " is not set");
        o.api_key = v;
    }

    config::ConfigStore store(path);
    json::object doc = store.document();
    auto opt = [](const std::string& s) { return s.empty() ? json::value(nullptr) : json::value(s); };
    json::object entry{{"provider_kind", o.kind}, {"model", opt(o.model)}, {"api_key", opt(o.api_key)},
                       {"base_url", opt(o.base_url)}};
    set_path(doc, {"llm", "providers", o.provider}, std::move(entry));
    set_path(doc, {"llm", "default_provider"}, json::value(o.provider));
    if (!o.memory_path.empty()) {
        set_path(doc, {"memory", "providers", "local"},
                 json::object{{"backend_kind", "local"}, {"path", o.memory_path}, {"chat_provider", o.provider}});
        set_path(doc, {"memory", "default_provider"}, json::value("local"));
    }
    if (!o.mcp.empty()) {
        json::array enabled;
        for (const auto& spec : o.mcp) {
            const auto eq = spec.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
                throw CLI::ValidationError("--mcp", "expected NAME=COMMAND ARGS..., got '" + spec + "'");
            json::array command;
            for (auto& w : split_words(spec.substr(eq + 1))) command.emplace_back(w);
            const std::string name = spec.substr(0, eq);
            set_path(doc, {"mcp", "servers", name}, json::object{{"command", std::move(command)}});
            enabled.emplace_back(name);
        }
        set_path(doc, {"mcp", "default_enabled"}, std::move(enabled));
    }
    if (!o.sandbox_domain.empty()) {
        set_path(doc, {"backend", "providers", "opensandbox"},
                 json::object{{"backend_kind", "opensandbox"}, {"domain", o.sandbox_domain}});
        set_path(doc, {"backend", "default_provider"}, json::value("opensandbox"));
    }
    try {
        store.set_document(std::move(doc));
    } catch (const config::ConfigError& e) {
        throw CommandError(std::string("not written: ") + e.what());
    }
    store.save();
    const fs::path creds = config::credentials_path(store.path());
    const bool has_creds = fs::exists(creds, ec);
    if (ctx.json) {
        std::cout << json::serialize(json::object{{"config", store.path().string()},
                                                  {"credentials", has_creds ? json::value(creds.string()) : nullptr},
                                                  {"default_provider", o.provider}})
                  << '\n';
        return;
    }
    std::cout << "wrote " << store.path().string() << " (provider '" << o.provider << "', " << o.kind << ")\n";
    if (has_creds) std::cout << "keys in " << creds.string() << " (mode 0600)\n";
    std::cout << "next: rath config check\n";
}

void run_env(const Context& ctx) {
    const auto vars = config::declared_env();
    if (ctx.json) {
        json::array a;
        for (const auto& v : vars) {
            auto value = config::env(v.name);
            json::value shown_value = nullptr;
            if (value) shown_value = v.kind == config::EnvKind::secret ? mask_secret(*value) : *value;
            a.emplace_back(json::object{{"name", v.name},
                                        {"kind", config::to_string(v.kind)},
                                        {"used_for", v.used_for},
                                        {"default", v.default_value},
                                        {"value", std::move(shown_value)}});
        }
        std::cout << json::serialize(a) << '\n';
        return;
    }
    Style style(ctx.use_color());
    std::size_t width = 0;
    for (const auto& v : vars) width = std::max(width, v.name.size());
    for (const auto& v : vars) {
        auto value = config::env(v.name);
        std::string state = value ? (v.kind == config::EnvKind::secret ? mask_secret(*value) : *value) : "-";
        std::cout << pad(v.name, width + 2) << pad(config::to_string(v.kind), 9) << pad(state, 28) << v.used_for;
        if (!v.default_value.empty()) std::cout << style.dim(" (default " + std::string(v.default_value) + ")");
        std::cout << '\n';
    }
}

}  // namespace

void add_config_edit_commands(CLI::App& config, Context& ctx) {
    auto o = std::make_shared<InitOptions>();
    auto* init = config.add_subcommand(
        "init", "Write config.json from flags, or by asking (--interactive): a provider (made the default), "
                "optionally a local memory store, MCP servers and an OpenSandbox server. Keys go to credentials.json");
    init->add_option("--provider", o->provider, "Provider entry name")->capture_default_str();
    init->add_option("--kind", o->kind, "Provider kind")
        ->check(CLI::IsMember({"openai", "anthropic", "litellm", "atlascloud"}))
        ->capture_default_str();
    init->add_option("--model", o->model, "Model id");
    init->add_option("--base-url", o->base_url, "Endpoint (default: the kind's)");
    init->add_option("--api-key", o->api_key, "API key (visible in the process list; prefer --api-key-env)");
    init->add_option("--api-key-env", o->api_key_env, "Read the API key from this environment variable");
    init->add_option("--memory-path", o->memory_path, "Directory of a local memory store (memory provider 'local')");
    init->add_option("--mcp", o->mcp, "An MCP server NAME=COMMAND ARGS..., enabled by default; repeatable");
    init->add_option("--sandbox-domain", o->sandbox_domain, "OpenSandbox server host:port (backend provider)");
    init->add_flag("--force", o->force, "Update an existing config.json instead of refusing");
    init->add_flag("--interactive,-i", o->interactive, "Ask for each value on the terminal (flags give the defaults)");
    init->callback([&ctx, o] { run_init(ctx, *o); });

    auto key = std::make_shared<std::string>();
    auto value = std::make_shared<std::string>();
    auto as_string = std::make_shared<bool>(false);
    auto* set = config.add_subcommand(
        "set", "Set one value by its dotted path (llm.providers.main.model gpt-4o); VALUE is JSON when it parses, "
               "else text. Validated before it is saved; keys go to credentials.json");
    set->add_option("KEY", *key, "Dotted path, e.g. llm.default_provider")->required();
    set->add_option("VALUE", *value, "New value (JSON or text; null clears a field)")->required();
    set->add_flag("--string", *as_string, "Store VALUE as text even when it parses as JSON");
    set->callback([&ctx, key, value, as_string] { run_set(ctx, *key, *value, *as_string); });

    auto* env = config.add_subcommand(
        "env", "The environment variables rath reads: kind, use, default and current value (secrets masked)");
    env->callback([&ctx] { run_env(ctx); });
}

}  // namespace rath::cli
