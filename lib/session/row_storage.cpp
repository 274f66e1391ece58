#include "lib/session/row_storage.hpp"

#include <boost/json/memory_resource.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <utility>
#include <atomic>
#include <cstdint>
#include <new>

namespace rath::detail {

// A bump allocator over an inline buffer plus overflow blocks while building; the
// ordinary heap once sealed. deallocate() tells the two apart by address.
class RowStorage::Arena : public boost::json::memory_resource {
public:
    Arena(unsigned char* buf, std::size_t size) noexcept : cur_(buf), end_(buf + size), first_(buf), first_end_(buf + size) {}
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    ~Arena() override {
        while (blocks_) {
            Block* next = blocks_->next;
            ::operator delete(blocks_);
            blocks_ = next;
        }
    }
    void seal() noexcept { sealed_.store(true, std::memory_order_release); }

private:
    struct Block {
        Block* next;
        std::size_t size;  // bytes after the header
    };
    static constexpr std::size_t header = (sizeof(Block) + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);

    void* do_allocate(std::size_t n, std::size_t align) override {
        if (sealed_.load(std::memory_order_acquire)) return heap_allocate(n, align);
        if (void* p = bump(n, align)) return p;
        const std::size_t size = std::max<std::size_t>(n + align, 768);
        auto* b = static_cast<Block*>(::operator new(header + size));
        b->next = blocks_;
        b->size = size;
        blocks_ = b;
        cur_ = reinterpret_cast<unsigned char*>(b) + header;
        end_ = cur_ + size;
        return bump(n, align);
    }

    void do_deallocate(void* p, std::size_t n, std::size_t align) override {
        if (owns(p)) return;  // freed with the arena
        if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__)
            ::operator delete(p, n, std::align_val_t(align));
        else
            ::operator delete(p, n);
    }

    bool do_is_equal(const boost::json::memory_resource& o) const noexcept override { return this == &o; }

    static void* heap_allocate(std::size_t n, std::size_t align) {
        if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) return ::operator new(n, std::align_val_t(align));
        return ::operator new(n);
    }

    void* bump(std::size_t n, std::size_t align) noexcept {
        auto at = reinterpret_cast<std::uintptr_t>(cur_);
        const std::uintptr_t aligned = (at + align - 1) & ~(static_cast<std::uintptr_t>(align) - 1);
        if (aligned > reinterpret_cast<std::uintptr_t>(end_) || n > reinterpret_cast<std::uintptr_t>(end_) - aligned)
            return nullptr;
        cur_ = reinterpret_cast<unsigned char*>(aligned + n);
        return reinterpret_cast<void*>(aligned);
    }

    bool owns(const void* p) const noexcept {
        auto in = [p](const unsigned char* lo, const unsigned char* hi) {
            auto a = reinterpret_cast<std::uintptr_t>(p);
            return a >= reinterpret_cast<std::uintptr_t>(lo) && a < reinterpret_cast<std::uintptr_t>(hi);
        };
        if (in(first_, first_end_)) return true;
        for (const Block* b = blocks_; b; b = b->next) {
            auto* data = reinterpret_cast<const unsigned char*>(b) + header;
            if (in(data, data + b->size)) return true;
        }
        return false;
    }

    unsigned char* cur_;
    unsigned char* end_;
    unsigned char* const first_;
    unsigned char* const first_end_;
    Block* blocks_ = nullptr;
    std::atomic<bool> sealed_{false};
};

namespace {

// The arena with its first buffer inline, so a row's storage is one heap block.
template <std::size_t N>
class InlineArena final : public RowStorage::Arena {
public:
    // `self`: where the arena is (storage_ptr only points at its shared wrapper).
    explicit InlineArena(RowStorage::Arena** self) noexcept : RowStorage::Arena(buf_, N) { *self = this; }

private:
    alignas(std::max_align_t) unsigned char buf_[N];
};

template <std::size_t N>
boost::json::storage_ptr make_arena(RowStorage::Arena** self) {
    return boost::json::make_shared_resource<InlineArena<N>>(self);
}

// One arena size per 32 bytes up to 896: the block plus the arena's own fields stay under
// 1 KiB (glibc serves larger requests from its sorted bins, several times the cost), and a
// stored row wastes less than 32 bytes of its block beyond its estimate.
constexpr std::size_t step = 32;
constexpr std::size_t largest = 896;

template <std::size_t... I>
constexpr auto make_table(std::index_sequence<I...>) {
    return std::array<boost::json::storage_ptr (*)(RowStorage::Arena**), sizeof...(I)>{&make_arena<(I + 1) * step>...};
}
constexpr auto arenas = make_table(std::make_index_sequence<largest / step>{});

}  // namespace

RowStorage::RowStorage(std::size_t bytes) {
    Arena* arena = nullptr;
    if (bytes <= largest)
        sp_ = arenas[bytes == 0 ? 0 : (bytes - 1) / step](&arena);
    else
        sp_ = make_arena<1920>(&arena);  // larger rows spill into overflow blocks
    arena_ = arena;
}

void RowStorage::seal() noexcept { arena_->seal(); }

std::size_t footprint::of(const boost::json::value& v) {
    if (const auto* o = v.if_object()) {
        std::size_t n = object(o->size());
        for (const auto& kv : *o) n += key(kv.key()) + of(kv.value());
        return n;
    }
    if (const auto* a = v.if_array()) {
        std::size_t n = array(a->size());
        for (const auto& x : *a) n += of(x);
        return n;
    }
    if (const auto* s = v.if_string()) return string(*s);
    return 0;
}

}  // namespace rath::detail
