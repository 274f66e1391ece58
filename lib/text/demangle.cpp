#include "lib/text/demangle.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace rath::detail {

std::string demangled_type_name(const std::type_info& type) {
    int status = 0;
    const std::unique_ptr<char, decltype(&std::free)> name(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                          &std::free);
    return status == 0 && name ? std::string(name.get()) : std::string(type.name());
}

}  // namespace rath::detail
