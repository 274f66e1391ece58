// The lineage viewer export: the page template (lib/session/viewer/lineage_viewer.html,
// built into the library by cmake/RathEmbedText.cmake) with the graph's data put in
// its JSON block.
#include <rath/session/graph.hpp>
#include <rath/version.hpp>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace rath::lineage {

namespace detail {
// Generated from lib/session/viewer/lineage_viewer.html.
std::string_view lineage_viewer_template() noexcept;
}  // namespace detail

namespace {

// Where the data goes: the whole content of <script type="application/json" id="rath-data">.
constexpr std::string_view data_marker = "/*RATH_DATA*/";

// JSON text can hold '<' only inside strings, where \u003c means the same character;
// written that way no transcript text can end the script block ("</script>") or open
// an HTML comment ("<!--") in it.
void append_script_safe(std::string& out, std::string_view json) {
    out.reserve(out.size() + json.size());
    for (char c : json) {
        if (c == '<')
            out += "\\u003c";
        else
            out += c;
    }
}

}  // namespace

std::string export_html_string(const SessionGraph& sessions, const HtmlOptions& options) {
    // Sessions share rows by reference (a fork shares all of its parent's): each row
    // goes into the page once and a session lists the indices of its own.
    boost::json::array rows;
    std::unordered_map<const ChunkRow*, std::size_t> row_index;
    boost::json::array nodes;
    std::unordered_set<std::string> seen;
    for (const auto& s : sessions) {
        if (!seen.insert(s.id()).second) continue;  // the first occurrence of an id wins
        boost::json::object node = session_to_jsonl_row(s);  // waits for a pending session
        boost::json::array transcript;
        for (const auto& row : s.chunks()) {
            auto [it, added] = row_index.try_emplace(row.get(), rows.size());
            if (added) {
                boost::json::object r;
                r["kind"] = to_string(row->kind());
                r["payload"] = row->payload();
                rows.emplace_back(std::move(r));
            }
            transcript.emplace_back(it->second);
        }
        node["rows"] = std::move(transcript);
        nodes.emplace_back(std::move(node));
    }
    boost::json::object data;
    data["schema_version"] = 1;
    data["title"] = options.title;
    data["generator"] = "rath " + std::string(version());
    data["rows"] = std::move(rows);
    data["sessions"] = std::move(nodes);

    const std::string_view page = detail::lineage_viewer_template();
    const std::size_t at = page.find(data_marker);
    if (at == std::string_view::npos) throw std::logic_error("lineage viewer template lacks its data marker");
    std::string out;
    out.reserve(page.size());
    out.append(page.substr(0, at));
    append_script_safe(out, boost::json::serialize(data));
    out.append(page.substr(at + data_marker.size()));
    return out;
}

}  // namespace rath::lineage
