#include "net/read_buffer.hpp"

#include <cstring>
#include <memory>

namespace rath::net::detail {

char* thread_read_buffer() {
    thread_local std::unique_ptr<char[]> buffer;
    if (!buffer) buffer = std::make_unique<char[]>(thread_read_size);
    return buffer.get();
}

void keep_unparsed(boost::beast::flat_buffer& pending, const char* data, std::size_t n) {
    if (n == 0) return;
    auto room = pending.prepare(n);
    std::memcpy(room.data(), data, n);
    pending.commit(n);
}

}  // namespace rath::net::detail
