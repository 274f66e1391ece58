// Persistent vector: a 32-way trie of full blocks plus a tail block. Appending copies
// at most one root-to-leaf path (log32 n nodes) when the tail is full; every other
// block is shared with the previous table.
//
// The tail grows 4 -> 8 -> 16 -> 32 slots, so a one-row table (every user message)
// costs a 4-slot block, not 32. A table whose tail ends at slot k appends in place by
// claiming slot k (an atomic counter on the block): the loop's chain of appends then
// copies nothing. A version that loses the claim (someone already appended to the
// same tail) copies the tail. Slots below a version's size are never written again,
// so readers need no lock.
#include <rath/session/chunk_table.hpp>
#include <rath/session/error.hpp>

#include <array>
#include <atomic>
#include <cstdint>

namespace rath {

namespace detail {

namespace {
constexpr unsigned kBits = 5;
constexpr std::size_t kWidth = std::size_t{1} << kBits;
constexpr std::size_t kMask = kWidth - 1;

// A block of row slots: a trie leaf (always full, 32 slots) or the tail.
struct Block {
    std::atomic<std::uint32_t> claimed{0};  // slots written by some version
    std::uint32_t cap = 0;
    ChunkRowPtr* rows = nullptr;
};

template <std::size_t N>
struct SizedBlock : Block {
    std::array<ChunkRowPtr, N> slots{};
    SizedBlock() {
        cap = N;
        rows = slots.data();
    }
};

std::shared_ptr<Block> new_block(std::size_t min_slots) {
    if (min_slots <= 4) return std::make_shared<SizedBlock<4>>();
    if (min_slots <= 8) return std::make_shared<SizedBlock<8>>();
    if (min_slots <= 16) return std::make_shared<SizedBlock<16>>();
    return std::make_shared<SizedBlock<kWidth>>();
}

struct Branch {
    std::array<std::shared_ptr<const void>, kWidth> kids;
};

std::shared_ptr<const void> new_path(unsigned level, std::shared_ptr<const void> node) {
    if (level == 0) return node;
    auto b = std::make_shared<Branch>();
    b->kids[0] = new_path(level - kBits, std::move(node));
    return b;
}

// `count` = number of rows in the trie once `leaf` is added, minus one leaf's
// worth: the index base of the leaf being pushed is count - kWidth... expressed as in
// the classic algorithm through (count - 1).
std::shared_ptr<const void> push_leaf(unsigned level, const Branch* parent, std::size_t count,
                                      std::shared_ptr<const void> leaf) {
    std::size_t sub = ((count - 1) >> level) & kMask;
    auto b = parent ? std::make_shared<Branch>(*parent) : std::make_shared<Branch>();
    if (level == kBits) {
        b->kids[sub] = std::move(leaf);
    } else {
        const auto* child = static_cast<const Branch*>(b->kids[sub].get());
        b->kids[sub] = child ? push_leaf(level - kBits, child, count, std::move(leaf))
                             : new_path(level - kBits, std::move(leaf));
    }
    return b;
}
}  // namespace

struct ChunkTableImpl {
    std::size_t size = 0;
    unsigned shift = kBits;
    std::shared_ptr<const void> root;  // Branch (may be null while empty); leaves are Blocks
    std::shared_ptr<Block> tail;       // holds rows [tail_offset, size)

    std::size_t tail_offset() const noexcept { return size < kWidth ? 0 : ((size - 1) >> kBits) << kBits; }

    const ChunkRowPtr* block_for(std::size_t i) const noexcept {
        if (i >= tail_offset()) return tail->rows;
        const void* node = root.get();
        for (unsigned level = shift; level > 0; level -= kBits)
            node = static_cast<const Branch*>(node)->kids[(i >> level) & kMask].get();
        return static_cast<const Block*>(node)->rows;
    }
    const ChunkRowPtr& at(std::size_t i) const noexcept { return block_for(i)[i & kMask]; }

    // Appends rows to this header; only valid on an impl nobody else sees yet (the
    // blocks it shares are only ever claimed, never overwritten).
    void push(std::span<const ChunkRowPtr> rows) {
        for (const auto& r : rows) {
            const std::size_t in_tail = size - tail_offset();
            if (size == 0 || in_tail < kWidth) {
                const auto k = static_cast<std::uint32_t>(in_tail);
                std::uint32_t expected = k;
                if (tail && k < tail->cap && tail->claimed.compare_exchange_strong(expected, k + 1)) {
                    tail->rows[k] = r;
                } else {
                    auto t = new_block(std::min<std::size_t>(std::max<std::size_t>(2 * k, k + 1), kWidth));
                    for (std::uint32_t j = 0; j < k; ++j) t->rows[j] = tail->rows[j];
                    t->rows[k] = r;
                    t->claimed.store(k + 1, std::memory_order_relaxed);
                    tail = std::move(t);
                }
                ++size;
                continue;
            }
            // Tail full (32 slots): move it into the trie, start a new tail.
            std::shared_ptr<const void> leaf = tail;
            if ((size >> kBits) > (std::size_t{1} << shift)) {
                auto b = std::make_shared<Branch>();
                b->kids[0] = root;
                b->kids[1] = new_path(shift, std::move(leaf));
                root = std::move(b);
                shift += kBits;
            } else {
                root = push_leaf(shift, static_cast<const Branch*>(root.get()), size, std::move(leaf));
            }
            auto t = new_block(1);
            t->rows[0] = r;
            t->claimed.store(1, std::memory_order_relaxed);
            tail = std::move(t);
            ++size;
        }
    }
};

}  // namespace detail

namespace {
const std::shared_ptr<const detail::ChunkTableImpl>& empty_impl() {
    static const std::shared_ptr<const detail::ChunkTableImpl> e(
        std::make_shared<const detail::ChunkTableImpl>());
    return e;
}
}  // namespace

ChunkTable::ChunkTable() : impl_(empty_impl()) {}

ChunkTable::ChunkTable(std::initializer_list<ChunkRowPtr> rows)
    : ChunkTable(std::span<const ChunkRowPtr>(rows.begin(), rows.size())) {}

ChunkTable::ChunkTable(std::span<const ChunkRowPtr> rows) : impl_(empty_impl()) {
    if (rows.empty()) return;
    auto impl = std::make_shared<detail::ChunkTableImpl>();
    impl->push(rows);
    impl_ = std::move(impl);
}

std::size_t ChunkTable::size() const noexcept { return impl_->size; }

const ChunkRowPtr& ChunkTable::operator[](std::size_t i) const noexcept { return impl_->at(i); }

const ChunkRowPtr& ChunkTable::at(std::size_t i) const {
    if (i >= size())
        throw SessionError("chunk index " + std::to_string(i) + " out of range for a table of " +
                           std::to_string(size()) + " rows");
    return impl_->at(i);
}

ChunkTable ChunkTable::append(ChunkRowPtr row) const { return extend(std::span<const ChunkRowPtr>(&row, 1)); }

ChunkTable ChunkTable::extend(std::span<const ChunkRowPtr> rows) const {
    if (rows.empty()) return *this;
    // Copy the small header (shares root and tail), then push on the private copy.
    auto impl = std::make_shared<detail::ChunkTableImpl>(*impl_);
    impl->push(rows);
    return ChunkTable(std::shared_ptr<const detail::ChunkTableImpl>(std::move(impl)));
}

ChunkTable ChunkTable::extend(const ChunkTable& rows) const {
    if (rows.empty()) return *this;
    if (empty()) return rows;
    auto impl = std::make_shared<detail::ChunkTableImpl>(*impl_);
    for (const auto& r : rows) impl->push(std::span<const ChunkRowPtr>(&r, 1));
    return ChunkTable(std::shared_ptr<const detail::ChunkTableImpl>(std::move(impl)));
}

std::vector<ChunkRowPtr> ChunkTable::to_vector() const {
    std::vector<ChunkRowPtr> v;
    v.reserve(size());
    for (const auto& r : *this) v.push_back(r);
    return v;
}

bool ChunkTable::operator==(const ChunkTable& o) const {
    if (impl_ == o.impl_) return true;
    if (size() != o.size()) return false;
    auto a = begin();
    auto b = o.begin();
    for (; a != end(); ++a, ++b) {
        if (*a == *b) continue;
        if (!*a || !*b || !(**a == **b)) return false;
    }
    return true;
}

ChunkTable::const_iterator::reference ChunkTable::const_iterator::operator*() const {
    std::size_t base = index_ & ~detail::kMask;
    if (block_base_ != base) {
        block_ = table_->block_for(index_);
        block_base_ = base;
    }
    return block_[index_ & detail::kMask];
}

ChunkTable::const_iterator& ChunkTable::const_iterator::operator++() {
    ++index_;
    return *this;
}

}  // namespace rath
