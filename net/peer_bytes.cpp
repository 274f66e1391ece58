#include <rath/net/peer_bytes.hpp>

namespace rath::net {

std::string quote_peer_bytes(std::string_view bytes, std::size_t max_bytes) {
    static constexpr char hex[] = "0123456789abcdef";
    const std::string_view head = bytes.substr(0, max_bytes);
    std::string out;
    out.reserve(head.size() + 24);
    out.push_back('"');
    for (const char ch : head) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out.append("\\\""); break;
            case '\\': out.append("\\\\"); break;
            case '\t': out.append("\\t"); break;
            case '\r': out.append("\\r"); break;
            case '\n': out.append("\\n"); break;
            default:
                if (c >= 0x20 && c < 0x7f) {
                    out.push_back(ch);
                } else {
                    out.append("\\x");
                    out.push_back(hex[c >> 4]);
                    out.push_back(hex[c & 15]);
                }
        }
    }
    out.push_back('"');
    if (head.size() < bytes.size()) out.append("\u2026(").append(std::to_string(bytes.size())).append(" bytes)");
    return out;
}

}  // namespace rath::net
