#include <rath/backend/payload.hpp>

namespace rath::backend {

std::string_view payload_type_name(const Payload& p) noexcept {
    static constexpr std::string_view names[] = {"BackendToolCommandRun", "BackendToolFilesRead",
                                                 "BackendToolFilesWrite", "BackendToolFilesList",
                                                 "BackendToolFilesExists", "BackendToolCodeRun"};
    return names[p.index()];
}

}  // namespace rath::backend
