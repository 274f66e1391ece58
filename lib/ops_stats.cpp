#include <rath/ops_stats.hpp>

#include "lib/ops_stats_record.hpp"

#include <map>
#include <mutex>
#include <utility>

namespace rath {

namespace {

// One kind of operation: (subject, outcome) -> count and total seconds. Ordered, so a
// snapshot comes out sorted; the key space is bounded by the configured servers and the
// fixed op and outcome names.
class Counters {
public:
    void add(std::string_view subject, std::string_view outcome, std::chrono::steady_clock::duration d) {
        const double s = std::chrono::duration<double>(d).count();
        std::lock_guard lk(mu_);
        auto it = cells_.find(std::pair<std::string_view, std::string_view>(subject, outcome));
        if (it == cells_.end()) it = cells_.emplace(Key{std::string(subject), std::string(outcome)}, Cell{}).first;
        ++it->second.count;
        it->second.seconds += s;
    }
    std::vector<OpStats> snapshot() const {
        std::lock_guard lk(mu_);
        std::vector<OpStats> out;
        out.reserve(cells_.size());
        for (const auto& [k, c] : cells_) out.push_back(OpStats{k.first, k.second, c.count, c.seconds});
        return out;
    }

private:
    using Key = std::pair<std::string, std::string>;
    struct Cell {
        std::uint64_t count = 0;
        double seconds = 0;
    };
    // Heterogeneous lookup: counting an operation that was seen before allocates nothing.
    struct Less {
        using is_transparent = void;
        template <class A, class B>
        bool operator()(const A& a, const B& b) const {
            return std::pair<std::string_view, std::string_view>(a.first, a.second) <
                   std::pair<std::string_view, std::string_view>(b.first, b.second);
        }
    };
    mutable std::mutex mu_;
    std::map<Key, Cell, Less> cells_;
};

Counters& mcp_counters() {
    static Counters c;
    return c;
}
Counters& memory_counters() {
    static Counters c;
    return c;
}

}  // namespace

std::vector<OpStats> mcp_call_stats() { return mcp_counters().snapshot(); }
std::vector<OpStats> memory_op_stats() { return memory_counters().snapshot(); }

namespace detail {

void record_mcp_call(std::string_view server, std::string_view outcome, std::chrono::steady_clock::duration d) {
    mcp_counters().add(server, outcome, d);
}
void record_memory_op(std::string_view op, std::string_view outcome, std::chrono::steady_clock::duration d) {
    memory_counters().add(op, outcome, d);
}

}  // namespace detail

}  // namespace rath
