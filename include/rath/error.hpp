#pragma once
// Root of rath's exception hierarchy. Every public sync call throws a rath::Error
// (or a subclass defined next to the component that raises it); coroutine callers
// see the same exceptions through co_await.
#include <stdexcept>
#include <string>

namespace rath {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace rath
