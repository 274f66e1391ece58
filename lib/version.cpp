#include <rath/version.hpp>

namespace rath {

std::string_view version() noexcept { return RATH_VERSION_STRING; }

}  // namespace rath
