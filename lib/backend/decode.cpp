#include <rath/backend/decode.hpp>

#include "lib/text/utf8.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iconv.h>
#include <mutex>
#include <vector>

namespace rath::backend {

namespace {

std::mutex g_codec_mu;
std::string g_codec;  // empty: derive from the locale environment

std::string locale_codec() {
    for (const char* var : {"LC_ALL", "LC_CTYPE", "LANG"}) {
        const char* v = std::getenv(var);
        if (!v || !*v) continue;
        std::string s(v);
        auto dot = s.find('.');
        if (dot == std::string::npos) return {};
        s = s.substr(dot + 1);
        if (auto at = s.find('@'); at != std::string::npos) s.resize(at);
        return s;
    }
    return {};
}

std::string lower_alnum(std::string_view s) {
    std::string out;
    for (char c : s)
        if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool is_utf8_name(std::string_view enc) {
    auto n = lower_alnum(enc);
    return n == "utf8" || n == "u8" || n == "utf" || n == "cp65001";
}

using rath::detail::utf8_valid_prefix;

std::string latin1_to_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size() * 2);
    for (unsigned char c : s) {
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            out += static_cast<char>(0xC0 | (c >> 6));
            out += static_cast<char>(0x80 | (c & 0x3F));
        }
    }
    return out;
}

// iconv into UTF-8. strict: fail on the first invalid sequence (its offset goes to
// *bad_at); otherwise substitute U+FFFD and skip one byte.
std::optional<std::string> iconv_to_utf8(std::string_view in, const std::string& codec, bool strict,
                                         std::size_t* bad_at, bool* unknown_codec) {
    iconv_t cd = ::iconv_open("UTF-8", codec.c_str());
    if (cd == reinterpret_cast<iconv_t>(-1)) {
        if (unknown_codec) *unknown_codec = true;
        return std::nullopt;
    }
    std::string out;
    std::vector<char> buf(4096);
    char* src = const_cast<char*>(in.data());
    std::size_t left = in.size();
    bool ok = true;
    while (left > 0) {
        char* dst = buf.data();
        std::size_t room = buf.size();
        std::size_t r = ::iconv(cd, &src, &left, &dst, &room);
        out.append(buf.data(), static_cast<std::size_t>(dst - buf.data()));
        if (r == static_cast<std::size_t>(-1)) {
            if (errno == E2BIG) continue;
            if (strict) {
                if (bad_at) *bad_at = static_cast<std::size_t>(src - in.data());
                ok = false;
                break;
            }
            out += "\xEF\xBF\xBD";
            ++src;
            --left;
            ::iconv(cd, nullptr, nullptr, nullptr, nullptr);
        }
    }
    ::iconv_close(cd);
    if (!ok) return std::nullopt;
    return out;
}

std::string translate(std::string s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\r') {
            out += '\n';
            if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
        } else {
            out += s[i];
        }
    }
    return out;
}

}  // namespace

bool is_valid_utf8(std::string_view s) noexcept { return utf8_valid_prefix(s) == s.size(); }

void set_legacy_codec(std::string codec) {
    std::lock_guard lk(g_codec_mu);
    g_codec = std::move(codec);
}

std::string decode_output(std::string_view bytes) {
    if (bytes.empty()) return {};
    if (is_valid_utf8(bytes)) return std::string(bytes);
    std::string codec;
    {
        std::lock_guard lk(g_codec_mu);
        codec = g_codec;
    }
    if (codec.empty()) codec = locale_codec();
    if (!codec.empty() && !is_utf8_name(codec)) {
        if (auto s = iconv_to_utf8(bytes, codec, false, nullptr, nullptr)) return *s;
    }
    return latin1_to_utf8(bytes);
}

std::optional<std::string> decode_text(std::string_view bytes, std::string_view encoding, bool translate_newlines,
                                       DecodeError* error) {
    std::optional<std::string> text;
    if (is_utf8_name(encoding)) {
        std::size_t ok = utf8_valid_prefix(bytes);
        // A UTF-8 BOM is kept, as Python's "utf-8" codec does (only utf-8-sig strips it).
        if (ok == bytes.size()) {
            text = std::string(bytes);
        } else if (error) {
            error->message = "'utf-8' codec can't decode byte 0x" +
                             std::string(1, "0123456789abcdef"[static_cast<unsigned char>(bytes[ok]) >> 4]) +
                             std::string(1, "0123456789abcdef"[static_cast<unsigned char>(bytes[ok]) & 15]) +
                             " in position " + std::to_string(ok) + ": invalid start byte";
        }
    } else {
        auto l = lower_alnum(encoding);
        bool unknown = false;
        std::size_t bad = 0;
        if (l == "latin1" || l == "iso88591" || l == "l1")
            text = latin1_to_utf8(bytes);
        else
            text = iconv_to_utf8(bytes, std::string(encoding), true, &bad, &unknown);
        if (!text && error) {
            error->message = unknown ? "unknown encoding: " + std::string(encoding)
                                     : "'" + std::string(encoding) + "' codec can't decode byte at position " +
                                           std::to_string(bad);
        }
    }
    if (text && translate_newlines) *text = translate(std::move(*text));
    return text;
}

}  // namespace rath::backend
