#pragma once
// Where the session layer reports problems it must not throw for: an error of a
// pending session that nobody read before it was destroyed, an unreadable file
// skipped while listing, a failed abandon. The default handler prints one line to
// stderr; tests install their own to assert on the text.
#include <functional>
#include <string_view>

namespace rath {

using SessionWarningHandler = std::function<void(std::string_view message)>;

// Installs `handler` (nullptr restores the default) and returns the previous one.
SessionWarningHandler set_session_warning_handler(SessionWarningHandler handler);

// Reports `message` through the current handler.
void session_warning(std::string_view message);

}  // namespace rath
