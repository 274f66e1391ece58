#pragma once
// Exit order of the default runtime. It drains during static destruction (spec: drain,
// then shut down, at exit), so everything its sessions use must be destroyed after it,
// i.e. constructed before it. rath's own caches are Immortal (immortal.hpp); state of
// the libraries underneath that is built on first use (simdjson's implementation
// table, OpenSSL, whose cleanup is an atexit handler) is built by the initializers
// registered here, which the default runtime runs just before it is constructed.
// Layers register at load time, from a namespace-scope initializer of a file that is
// linked whenever the library in question is used.
namespace rath::async::detail {

// Adds `init` (called once, from whichever thread first asks for the default runtime);
// adding the same function again changes nothing. At most 16; more are ignored. Safe before main: the table is constant-initialized.
void add_default_runtime_prerequisite(void (*init)()) noexcept;

}  // namespace rath::async::detail
