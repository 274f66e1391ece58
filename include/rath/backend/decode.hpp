#pragma once
// Byte decoding for captured output and file reads (backend_tools.md §3.7, §3.4).
// Every function may be called from any thread; set_legacy_codec applies to the
// decode_output calls that start after it.
#include <optional>
#include <string>
#include <string_view>

namespace rath::backend {

// decode(bytes): strict UTF-8; otherwise the legacy codec (iconv name, from
// set_legacy_codec() or else the codeset of LC_ALL / LC_CTYPE / LANG) with U+FFFD
// replacements; otherwise latin-1. Always returns valid UTF-8.
[[nodiscard]] std::string decode_output(std::string_view bytes);

// Overrides the legacy codec used by decode_output ("" restores the locale default).
void set_legacy_codec(std::string codec);

// True when `s` is well-formed UTF-8.
[[nodiscard]] bool is_valid_utf8(std::string_view s) noexcept;

struct DecodeError {
    std::string message;  // Python-like text naming the codec and byte offset
};

// Strict text decoding of a file in `encoding` (any iconv name; "utf-8" and its
// aliases are handled natively) into UTF-8, with universal-newline translation
// (CRLF and CR become LF) when `translate_newlines`.
[[nodiscard]] std::optional<std::string> decode_text(std::string_view bytes, std::string_view encoding,
                                                     bool translate_newlines, DecodeError* error = nullptr);

}  // namespace rath::backend
