#include <rath/config/store.hpp>
#include <rath/memory/spec.hpp>

namespace rath::memory {

MemoryStoreSpec MemoryStoreSpec::from_config(std::optional<std::string> name) {
    auto cfg = rath::config::ConfigStore::load();
    auto entry = cfg->get_memory_provider(name ? std::optional<std::string_view>(*name) : std::nullopt);
    MemoryStoreSpec spec;
    boost::json::object options;
    if (entry.path) options["path"] = *entry.path;
    if (entry.embedding_provider) options["embedding_provider"] = *entry.embedding_provider;
    if (entry.chat_provider) options["chat_provider"] = *entry.chat_provider;
    if (!options.empty()) spec.options = std::move(options);
    return spec;
}

}  // namespace rath::memory
