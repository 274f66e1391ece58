#pragma once
// ~/.openrath/config.json: schema-validated, round-trips unknown keys at every level,
// saved atomically with mode 0600, and cached process-wide by (mtime, size).
//
// Keys live apart from settings: save() moves every non-empty api_key of the llm,
// memory and backend provider entries into credentials.json beside config.json (mode
// 0600, {"<section>": {"providers": {"<name>": "<key>"}}, "version": 1}; deleted when no
// key is left), so config.json can be shown or shared. Loading merges them back into
// entries without an inline key; an inline key wins (and moves out on the next save);
// a corrupt credentials.json is ignored with one warning.
//
// Thread safety: a ConfigStore may be read and changed from any thread at once (one
// mutex per store); a change is seen by every holder of the same store but reaches the
// file only through save(). The process-wide cache of load() is thread-safe. Every
// call that touches the file blocks on I/O; nothing here is asynchronous. Errors:
// ConfigError for unreadable or invalid content and failed writes, ConfigLookupError
// for a named entry that does not exist, ConfigPathError from resolving the default
// path.
#include <rath/config/paths.hpp>
#include <rath/error.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::config {

inline constexpr int schema_version = 1;

// Invalid JSON, a non-object top level, or a schema violation (the message names
// the file and the key path).
class ConfigError : public Error {
public:
    using Error::Error;
};

// A named entry that does not exist, or no name and no default.
class ConfigLookupError : public Error {
public:
    using Error::Error;
};

struct LlmProviderEntry {
    std::string provider_kind = "openai";  // "openai" | "anthropic" | "litellm"
    std::optional<std::string> model{};
    std::optional<std::string> api_key{};
    std::optional<std::string> base_url{};
    std::optional<double> temperature{};
    std::optional<std::int64_t> max_tokens{};
    // "record": record every model call of the agent runs through this provider
    // (llm::Provider::record_llm); absent from files that do not set it.
    std::optional<bool> record{};
};

struct McpServerEntry {
    std::vector<std::string> command{};  // may be empty
    std::vector<std::pair<std::string, std::string>> env{};
};

struct MemoryProviderEntry {
    std::string backend_kind = "local";  // "local" | "milvus"
    std::optional<std::string> path{};
    std::optional<std::string> embedding_provider{};
    std::optional<std::string> chat_provider{};
};

// <dir of config_path>/credentials.json.
[[nodiscard]] std::filesystem::path credentials_path(const std::filesystem::path& config_path);

// The default document, serialised exactly as a fresh save writes it.
[[nodiscard]] std::string default_config_text();
// 2-space indent, UTF-8 unescaped, trailing newline (the config file format).
[[nodiscard]] std::string dump_pretty(const boost::json::value& v);

class ConfigStore {
public:
    // Reads `path` now. Missing file: all defaults. Throws ConfigError on bad content.
    explicit ConfigStore(std::filesystem::path path);

    // Cached store of resolve_config_path() (or `path`): the same instance while the
    // file's (mtime, size) is unchanged. Shared and mutable: changes are visible to
    // every holder. A missing file is never cached.
    [[nodiscard]] static std::shared_ptr<ConfigStore> load();
    [[nodiscard]] static std::shared_ptr<ConfigStore> load(const std::filesystem::path& path);
    static void clear_cache();

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    [[nodiscard]] std::filesystem::path dir() const { return path_.parent_path(); }
    [[nodiscard]] bool loaded_from_file() const noexcept { return from_file_; }

    // The validated document in declared key order (unknown keys kept after them).
    [[nodiscard]] boost::json::object document() const;
    // Replaces the document after validating it (throws ConfigError).
    void set_document(boost::json::object doc);

    [[nodiscard]] std::optional<std::string> default_llm_provider() const;
    [[nodiscard]] std::optional<std::string> embedding_provider() const;
    [[nodiscard]] std::optional<std::string> vlm_provider() const;
    [[nodiscard]] std::vector<std::string> llm_provider_names() const;  // file order
    [[nodiscard]] bool has_llm_provider(std::string_view name) const;
    // name unset: llm.default_provider. Errors: "no LLM provider name given ..." and
    // "LLM provider '<n>' not found in <path>; available: [...]".
    [[nodiscard]] LlmProviderEntry get_llm_provider(std::optional<std::string_view> name = std::nullopt) const;
    // The default provider if it has this kind, else the first entry of the kind.
    [[nodiscard]] std::optional<std::pair<std::string, LlmProviderEntry>> find_provider_by_kind(
        std::string_view kind) const;
    void set_llm_provider(const std::string& name, const LlmProviderEntry& entry);
    void set_default_llm_provider(std::optional<std::string> name);
    void set_embedding_provider(std::optional<std::string> name);
    void set_vlm_provider(std::optional<std::string> name);

    [[nodiscard]] MemoryProviderEntry get_memory_provider(std::optional<std::string_view> name = std::nullopt) const;
    [[nodiscard]] McpServerEntry get_mcp_server(std::string_view name) const;
    [[nodiscard]] std::vector<std::pair<std::string, McpServerEntry>> enabled_mcp_servers() const;

    // Creates the directory (+ deny-all .gitignore), amends a project .gitignore,
    // writes credentials.json (or removes it when no key is left), then a 0600 temp file
    // renamed over config.json, then evicts the cache.
    // Throws ConfigError when the file cannot be written, and
    // std::filesystem::filesystem_error when the directory cannot be created.
    void save();

private:
    std::filesystem::path path_{};
    bool from_file_ = false;
    bool migrate_inline_keys_ = false;  // config.json held keys inline when read
    mutable std::mutex mu_;
    boost::json::object doc_{};
};

}  // namespace rath::config
