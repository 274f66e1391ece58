#pragma once
// ChunkTable (session.md §1.3): an immutable, structurally shared sequence of rows.
// Copying a table is O(1) (it is a handle to an immutable tree); append/extend return
// a new table that shares every full 32-row block of the one it extends, so the prefix is
// never copied (a persistent 32-way trie with a tail block, as in Clojure's vector).
//
// Thread safety: a table never changes; copy it and read it from any thread at once.
// Errors: at() and back() throw SessionError out of range; nothing else throws but
// std::bad_alloc.
#include <rath/session/chunk.hpp>

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <span>
#include <vector>

namespace rath {

namespace detail {
struct ChunkTableImpl;
}

class ChunkTable {
public:
    class const_iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = ChunkRowPtr;
        using difference_type = std::ptrdiff_t;
        using pointer = const ChunkRowPtr*;
        using reference = const ChunkRowPtr&;

        const_iterator() = default;
        reference operator*() const;
        pointer operator->() const { return &**this; }
        const_iterator& operator++();
        const_iterator operator++(int) {
            auto t = *this;
            ++*this;
            return t;
        }
        bool operator==(const const_iterator& o) const noexcept { return index_ == o.index_; }

    private:
        friend class ChunkTable;
        const_iterator(const detail::ChunkTableImpl* t, std::size_t i) : table_(t), index_(i) {}
        const detail::ChunkTableImpl* table_ = nullptr;
        std::size_t index_ = 0;
        mutable const ChunkRowPtr* block_ = nullptr;  // cached 32-row block of index_
        mutable std::size_t block_base_ = static_cast<std::size_t>(-1);
    };

    ChunkTable();
    ChunkTable(std::initializer_list<ChunkRowPtr> rows);
    explicit ChunkTable(std::span<const ChunkRowPtr> rows);

    [[nodiscard]] std::size_t size() const noexcept;
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }
    // O(log32 n). Unchecked.
    [[nodiscard]] const ChunkRowPtr& operator[](std::size_t i) const noexcept;
    // Throws SessionError naming the index and the size when out of range.
    [[nodiscard]] const ChunkRowPtr& at(std::size_t i) const;
    [[nodiscard]] const ChunkRowPtr& back() const { return at(size() - 1); }

    [[nodiscard]] const_iterator begin() const noexcept { return {impl_.get(), 0}; }
    [[nodiscard]] const_iterator end() const noexcept { return {impl_.get(), size()}; }

    // New tables; `*this` is unchanged and shares its blocks with the result.
    [[nodiscard]] ChunkTable append(ChunkRowPtr row) const;
    [[nodiscard]] ChunkTable extend(std::span<const ChunkRowPtr> rows) const;
    [[nodiscard]] ChunkTable extend(const ChunkTable& rows) const;

    [[nodiscard]] std::vector<ChunkRowPtr> to_vector() const;

    // Value equality (row by row, deep).
    bool operator==(const ChunkTable& o) const;
    // Identity: both handles refer to the same table object.
    [[nodiscard]] bool same_as(const ChunkTable& o) const noexcept { return impl_ == o.impl_; }

private:
    explicit ChunkTable(std::shared_ptr<const detail::ChunkTableImpl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const detail::ChunkTableImpl> impl_;
};

}  // namespace rath
