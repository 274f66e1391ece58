#pragma once
// Script: the parsed, validated behaviour document of rath-fake-llm's script mode
// (rules matched on the last message, then an ordered list of responses). The
// format is documented in tools/rath-fake-llm/README.md. Parsing never throws
// anything but ScriptError (file, line, what is wrong).
#include <rath/fake_llm/error.hpp>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string_view>

namespace rath::fake_llm {

namespace detail {
struct ScriptData;
}

class Script {
public:
    // `source_name` is what errors call the document (a file name, or "<script>").
    static Script parse(std::string_view json, std::string_view source_name = "<script>");
    // Reads and parses a file. Blocking: call it off the io threads.
    static Script load(const std::filesystem::path& file);

    std::size_t rule_count() const noexcept;
    std::size_t response_count() const noexcept;

    // The immutable parsed form, shared by every server that runs this script.
    const std::shared_ptr<const detail::ScriptData>& data() const noexcept { return data_; }

private:
    explicit Script(std::shared_ptr<const detail::ScriptData> d) : data_(std::move(d)) {}
    std::shared_ptr<const detail::ScriptData> data_;
};

}  // namespace rath::fake_llm
