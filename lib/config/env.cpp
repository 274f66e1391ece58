#include <rath/config/env.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>

namespace rath::config {

namespace {

using K = EnvKind;

// Sorted by name (declared_env() promises it; a test checks it).
constexpr std::array<EnvVar, 29> table{{
    {"ANTHROPIC_API_KEY", K::secret, "Anthropic key when the provider entry has none", ""},
    {"ANTHROPIC_BASE_URL", K::routing, "Anthropic endpoint", "https://api.anthropic.com"},
    {"ANTHROPIC_DEFAULT_MODEL", K::routing, "Anthropic model when neither request nor provider names one", ""},
    {"ATLASCLOUD_API_KEY", K::secret, "Atlas Cloud key", ""},
    {"ATLASCLOUD_DEFAULT_MODEL", K::routing, "Atlas Cloud model", "qwen/qwen3.5-flash"},
    {"ATLAS_CLOUD_API_KEY", K::secret, "Atlas Cloud key (alternative spelling)", ""},
    {"AZURE_API_KEY", K::secret, "Azure OpenAI key (after AZURE_OPENAI_API_KEY)", ""},
    {"AZURE_OPENAI_API_KEY", K::secret, "Azure OpenAI key; OpenAI key fallback", ""},
    {"AZURE_OPENAI_API_VERSION", K::routing, "api-version of legacy Azure deployments", "2024-10-21"},
    {"AZURE_OPENAI_ENDPOINT", K::routing, "OpenAI-compatible endpoint (after OPENAI_BASE_URL)", ""},
    {"LITELLM_API_BASE", K::routing, "LiteLLM proxy endpoint", ""},
    {"LITELLM_API_KEY", K::secret, "LiteLLM proxy key", ""},
    {"LITELLM_MODEL", K::routing, "LiteLLM model", ""},
    {"NO_COLOR", K::flag, "rath command: no colours on a terminal", ""},
    {"OPENAI_API_KEY", K::secret, "OpenAI-compatible key (chat, embeddings, VLM)", ""},
    {"OPENAI_API_VERSION", K::routing, "api-version of legacy Azure deployments", "2024-10-21"},
    {"OPENAI_BASE_URL", K::routing, "OpenAI-compatible endpoint", "https://api.openai.com/v1"},
    {"OPENAI_DEFAULT_MODEL", K::routing, "OpenAI model when neither request nor provider names one", ""},
    {"OPENAI_ORG_ID", K::routing, "OpenAI-Organization header", ""},
    {"OPENAI_PROJECT_ID", K::routing, "OpenAI-Project header", ""},
    {"OPENRATH_HOME", K::routing, "config directory (config.json, credentials.json, sessions/)",
     "./.openrath if present, else ~/.openrath"},
    {"OPENRATH_RECORD_LLM", K::flag, "record each agent run's model calls beside its transcript (rath replay)", ""},
    {"OPENSANDBOX_DOMAIN", K::routing, "OpenSandbox server (legacy spelling of OPEN_SANDBOX_DOMAIN)", ""},
    {"OPEN_SANDBOX_API_KEY", K::secret, "OpenSandbox lifecycle API key", ""},
    {"OPEN_SANDBOX_DOMAIN", K::routing, "OpenSandbox server host[:port] or URL", ""},
    {"RATH_EXAMPLES_OFFLINE", K::flag, "examples: always use the fake LLM server", ""},
    {"RATH_OPENSANDBOX_STRICT_WORKSPACE_BIND", K::flag, "refuse an OpenSandbox sandbox without the workspace bind",
     ""},
    {"RATH_PG_CONNINFO", K::secret, "rath-worker: libpq connection string of the run queue's database (may hold a password)",
     ""},
    {"RATH_THREADS", K::routing, "io threads of the default runtime", "one per core"},
}};

std::string_view trim(std::string_view s) {
    constexpr std::string_view ws = " \t\r\n\f\v";
    const auto b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

constexpr std::string_view openai_key[] = {"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"};
constexpr std::string_view azure_key[] = {"AZURE_OPENAI_API_KEY", "AZURE_API_KEY", "OPENAI_API_KEY"};
constexpr std::string_view openai_base[] = {"OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT"};
constexpr std::string_view openai_model[] = {"OPENAI_DEFAULT_MODEL"};
constexpr std::string_view anthropic_key[] = {"ANTHROPIC_API_KEY"};
constexpr std::string_view anthropic_base[] = {"ANTHROPIC_BASE_URL"};
constexpr std::string_view anthropic_model[] = {"ANTHROPIC_DEFAULT_MODEL"};
constexpr std::string_view litellm_key[] = {"LITELLM_API_KEY"};
constexpr std::string_view litellm_base[] = {"LITELLM_API_BASE"};
constexpr std::string_view litellm_model[] = {"LITELLM_MODEL"};
constexpr std::string_view atlas_key[] = {"ATLASCLOUD_API_KEY", "ATLAS_CLOUD_API_KEY"};
constexpr std::string_view atlas_model[] = {"ATLASCLOUD_DEFAULT_MODEL"};

}  // namespace

std::string_view to_string(EnvKind k) noexcept {
    switch (k) {
        case EnvKind::secret: return "secret";
        case EnvKind::routing: return "routing";
        case EnvKind::flag: return "flag";
    }
    return "routing";
}

std::span<const EnvVar> declared_env() noexcept { return table; }

const EnvVar& declared(std::string_view name) {
    auto it = std::lower_bound(table.begin(), table.end(), name,
                               [](const EnvVar& v, std::string_view n) { return v.name < n; });
    if (it != table.end() && it->name == name) return *it;
    std::string names;
    for (const auto& v : table) names += (names.empty() ? "'" : ", '") + std::string(v.name) + "'";
    throw ConfigError("'" + std::string(name) + "' is not a declared OpenRath environment variable; declared: [" +
                      names + "]");
}

std::optional<std::string> env(std::string_view name) {
    const EnvVar& v = declared(name);
    const char* raw = std::getenv(std::string(v.name).c_str());
    if (!raw) return std::nullopt;
    const std::string_view t = trim(raw);
    if (t.empty()) return std::nullopt;
    return std::string(t);
}

bool env_flag(std::string_view name) {
    auto v = env(name);
    if (!v) return false;
    std::string s = *v;
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s == "1" || s == "true" || s == "yes" || s == "on";
}

std::span<const std::string_view> provider_env(std::string_view kind, ProviderField field, bool azure) noexcept {
    using F = ProviderField;
    if (kind == "openai") {
        if (field == F::api_key) return azure ? std::span<const std::string_view>(azure_key) : openai_key;
        return field == F::base_url ? std::span<const std::string_view>(openai_base) : openai_model;
    }
    if (kind == "anthropic")
        return field == F::api_key    ? std::span<const std::string_view>(anthropic_key)
               : field == F::base_url ? anthropic_base
                                      : anthropic_model;
    if (kind == "litellm")
        return field == F::api_key    ? std::span<const std::string_view>(litellm_key)
               : field == F::base_url ? litellm_base
                                      : litellm_model;
    if (kind == "atlascloud") {
        if (field == F::api_key) return atlas_key;
        if (field == F::model) return atlas_model;
    }
    return {};
}

}  // namespace rath::config
