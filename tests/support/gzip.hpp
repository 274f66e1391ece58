#pragma once
// gzip encoding for test servers (zlib), whole or as a stream fed piece by piece, so a
// test can serve a body that inflates to gigabytes without ever holding it.
#include <zlib.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace rath::test {

class GzipWriter {
public:
    GzipWriter() {
        if (deflateInit2(&z_, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK)
            throw std::runtime_error("deflateInit2 failed");
    }
    ~GzipWriter() { deflateEnd(&z_); }
    GzipWriter(const GzipWriter&) = delete;
    GzipWriter& operator=(const GzipWriter&) = delete;

    // Compresses `in` and returns the bytes ready so far (`finish` ends the member;
    // `flush` makes everything given so far decodable).
    std::string put(std::string_view in, bool finish = false, bool flush = false) {
        std::string out;
        z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
        z_.avail_in = static_cast<uInt>(in.size());
        const int mode = finish ? Z_FINISH : flush ? Z_SYNC_FLUSH : Z_NO_FLUSH;
        for (;;) {
            char buf[16384];
            z_.next_out = reinterpret_cast<Bytef*>(buf);
            z_.avail_out = sizeof buf;
            const int rc = deflate(&z_, mode);
            out.append(buf, sizeof buf - z_.avail_out);
            if (rc == Z_STREAM_END) break;
            if (z_.avail_in == 0 && z_.avail_out != 0) break;
        }
        return out;
    }

private:
    z_stream z_{};
};

inline std::string gzip(std::string_view text) {
    GzipWriter w;
    return w.put(text, true);
}

}  // namespace rath::test
