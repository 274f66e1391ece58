// Child process of the kill -9 durability test. Usage:
//   session_kill9_child <openrath_home> <session_id> <max_rows>
// Writes rows 0..max_rows-1 through the async writer (file I/O on the blocking pool)
// and prints "<index>\n" on stdout after each row is acknowledged. The parent kills it
// with SIGKILL at a random moment and checks that every acknowledged row is on disk.
#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/session.hpp>
#include <rath/session/persistence/async_writer.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// Deterministic content the parent can recompute: sizes vary from a few bytes to
// several pages so that some records span page boundaries.
std::string row_text(std::size_t i) {
    std::size_t len = (i * 7919) % 9000;
    return "row-" + std::to_string(i) + "-" + std::string(len, static_cast<char>('a' + i % 26));
}

boost::asio::awaitable<void> write_rows(rath::Session s, std::size_t max_rows) {
    auto w = co_await rath::persistence::AsyncSessionWriter::async_open(s);
    for (std::size_t i = 0; i < max_rows; ++i) {
        co_await w.async_write_chunk(i, rath::user_text_chunk(row_text(i)));
        std::string ack = std::to_string(i) + "\n";
        if (::write(STDOUT_FILENO, ack.data(), ack.size()) != static_cast<ssize_t>(ack.size())) std::_Exit(3);
    }
    co_await w.async_close();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s <openrath_home> <session_id> <max_rows>\n", argv[0]);
        return 2;
    }
    ::setenv("OPENRATH_HOME", argv[1], 1);
    rath::Session s(rath::ChunkTable{}, rath::SessionOptions{.id = std::string(argv[2])});
    try {
        rath::async::block_on(write_rows(s, std::strtoul(argv[3], nullptr, 10)));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kill9 child: %s\n", e.what());
        return 1;
    }
    return 0;
}
