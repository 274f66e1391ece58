#pragma once
// Storage for the payload of one chunk row. A row's JSON (its object table, every key,
// every long string) would otherwise be a dozen heap blocks; here the builder's
// allocations come from one block sized from an estimate, and the row frees them all
// at once. After the row is built the storage is sealed: whatever is allocated through
// it later (Boost.JSON copies a value into its source's storage, so a copy of the
// payload lands here) comes from the ordinary heap and is returned to it, so copying a
// long-lived row many times never grows its block.
#include <boost/json/fwd.hpp>
#include <boost/json/storage_ptr.hpp>

#include <cstddef>
#include <string_view>

namespace rath::detail {

// Bytes a JSON node needs in a RowStorage (Boost.JSON 1.81 on 64 bits: an object is a
// 16-byte header and 40 bytes per entry, 16-aligned; an array an 8-byte header and 24 bytes
// per element; a key its text and a NUL; a string over 14 bytes an 8-byte header, its text
// and a NUL, 4-aligned), each with its worst-case alignment padding.
namespace footprint {
constexpr std::size_t object(std::size_t entries) { return 16 + 40 * entries + 15; }
constexpr std::size_t array(std::size_t elements) { return 8 + 24 * elements + 7; }
constexpr std::size_t key(std::string_view k) { return k.size() + 1; }
constexpr std::size_t string(std::string_view s) { return s.size() <= 14 ? 0 : s.size() + 9 + 3; }
// The whole tree of `v`.
std::size_t of(const boost::json::value& v);
}  // namespace footprint

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
