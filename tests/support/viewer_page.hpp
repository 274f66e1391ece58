#pragma once
// Reading a lineage viewer page (rath::lineage::export_html) the way the page reads
// itself: the text of its <script type="application/json" id="rath-data"> block.
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace rath::test {

// The raw JSON text of the page's data block; throws when the page has none.
inline std::string_view viewer_data_text(std::string_view html) {
    constexpr std::string_view open = "<script type=\"application/json\" id=\"rath-data\">";
    const auto at = html.find(open);
    if (at == std::string_view::npos) throw std::runtime_error("no rath-data block in the page");
    const auto from = at + open.size();
    const auto end = html.find("</script>", from);
    if (end == std::string_view::npos) throw std::runtime_error("the rath-data block is not closed");
    return html.substr(from, end - from);
}

// The data block parsed (throws boost::system::system_error when it is not JSON).
inline boost::json::value viewer_data(std::string_view html) { return boost::json::parse(viewer_data_text(html)); }

}  // namespace rath::test
