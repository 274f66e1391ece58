#include "lib/config/atomic_file.hpp"

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace rath::detail {

AtomicWriteError write_file_atomically(const std::filesystem::path& target, std::string_view bytes,
                                       const AtomicWrite& how) {
    using Stage = AtomicWriteError::Stage;
    const std::filesystem::path dir = target.parent_path();
    std::string tmpl = (dir / std::string(how.temp_name)).string();
    const auto xs = how.temp_name.rfind("XXXXXX");
    const int suffix = xs == std::string_view::npos ? 0 : static_cast<int>(how.temp_name.size() - xs - 6);
    int fd = ::mkstemps(tmpl.data(), suffix);
    if (fd < 0) return {Stage::create, errno};
    auto fail = [&](Stage stage, int e) {
        ::close(fd);
        ::unlink(tmpl.c_str());
        return AtomicWriteError{stage, e};
    };
    std::size_t off = 0;
    while (off < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(Stage::write, errno);
        }
        off += static_cast<std::size_t>(n);
    }
    if (::fchmod(fd, how.mode) != 0) return fail(Stage::write, errno);
    if (how.durable && ::fsync(fd) != 0) return fail(Stage::write, errno);
    ::close(fd);
    if (::rename(tmpl.c_str(), target.c_str()) != 0) {
        int e = errno;
        ::unlink(tmpl.c_str());
        return {Stage::rename, e};
    }
    if (how.durable) {
        int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            ::fsync(dfd);
            ::close(dfd);
        }
    }
    return {};
}

}  // namespace rath::detail
