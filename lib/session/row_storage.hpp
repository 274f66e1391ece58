#pragma once
// Storage for the payload of one chunk row. A row's JSON (its object table, every key,
// every long string) would otherwise be a dozen heap blocks; here the builder's
// allocations come from one block sized from an estimate, and the row frees them all
// at once. After the row is built the storage is sealed: whatever is allocated through
// it later (Boost.JSON copies a value into its source's storage, so a copy of the
// payload lands here) comes from the ordinary heap and is returned to it, so copying a
// long-lived row many times never grows its block.
#include <boost/json/storage_ptr.hpp>

#include <cstddef>

namespace rath::detail {

class RowStorage {
public:
    // Shared storage with room for about `bytes` of JSON nodes and text.
    explicit RowStorage(std::size_t bytes);
    const boost::json::storage_ptr& get() const noexcept { return sp_; }
    // Ends the build phase (call before the row is shared).
    void seal() noexcept;

    class Arena;

private:
    boost::json::storage_ptr sp_;
    Arena* arena_ = nullptr;
};

}  // namespace rath::detail
