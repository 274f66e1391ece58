#pragma once
// RawJson: a vendor payload kept as its text and decoded into Boost.JSON only when
// someone reads it. Responses carry their full payload for callers who need a field
// rath does not map; decoding every response eagerly would cost more than the rest of
// the response parsing together.
#include <boost/json/value.hpp>

#include <memory>
#include <string>

namespace rath::llm {

class RawJson {
public:
    RawJson() = default;
    explicit RawJson(std::string text);
    explicit RawJson(boost::json::value value);  // already decoded (built by hand, streams)

    [[nodiscard]] bool has_value() const noexcept { return static_cast<bool>(state_); }
    explicit operator bool() const noexcept { return has_value(); }

    // The payload text as received ("" when built from a value: then serialized).
    [[nodiscard]] const std::string& text() const;
    // Decoded on first use (thread-safe); throws std::logic_error when empty and
    // boost::system::system_error when the text is not JSON.
    [[nodiscard]] const boost::json::value& value() const;
    const boost::json::value& operator*() const { return value(); }
    const boost::json::value* operator->() const { return &value(); }

    struct State;

private:
    std::shared_ptr<State> state_;
};

}  // namespace rath::llm
