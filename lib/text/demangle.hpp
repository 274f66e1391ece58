#pragma once
// Readable C++ type names for messages that name an exception's type.
#include <string>
#include <typeinfo>

namespace rath::detail {

// The demangled name of `type` ("rath::SessionError", "std::runtime_error"), or the
// raw name when it cannot be demangled.
std::string demangled_type_name(const std::type_info& type);

}  // namespace rath::detail
