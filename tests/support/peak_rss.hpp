#pragma once
// Peak resident-set growth for the tests that prove a cap holds before data is buffered
// (multi-GB bodies, files and floods that must never be held whole).
#include <cstddef>
#include <fstream>
#include <string>

namespace rath::test {

inline constexpr std::size_t mib = std::size_t{1} << 20;

// kB of a /proc/self/status line ("VmHWM:", "VmRSS:"); 0 when absent.
inline std::size_t status_kb(const std::string& key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size()));
    return 0;
}

// The process's peak resident set from here on: the kernel's high-water mark, reset
// (clear_refs "5") so that an earlier test's peak does not hide this one's. Where the
// reset is refused, the current resident set stands in for the peak.
class PeakRss {
public:
    PeakRss() {
        std::ofstream reset("/proc/self/clear_refs");
        reset << "5";
        reset.flush();
        resettable_ = reset.good();
        start_kb_ = status_kb("VmRSS:");
    }
    // Growth of the peak (or the current set) since construction, in bytes.
    [[nodiscard]] std::size_t growth() const {
        const std::size_t now = resettable_ ? status_kb("VmHWM:") : status_kb("VmRSS:");
        return now > start_kb_ ? (now - start_kb_) * 1024 : 0;
    }

private:
    bool resettable_ = false;
    std::size_t start_kb_ = 0;
};

// The growth a test allows. Sanitizer builds add shadow memory and keep freed blocks in
// quarantine (ASan holds up to 256 MiB of them), so there the bound only shows that
// nothing near the multi-GB input was held; the release build checks the tight bound.
[[nodiscard]] constexpr std::size_t rss_budget(std::size_t release_bound) noexcept {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return release_bound * 4 + 512 * mib;
#else
    return release_bound;
#endif
}

}  // namespace rath::test
