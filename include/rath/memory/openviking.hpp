#pragma once
// The OpenViking memory backend ("openviking", memory_flow.md §3): an adapter over
// OpenViking's HTTP API (server 0.3.x / 0.4.x), on rath's HTTP client. Embedded mode
// (a local OpenViking data directory) needs OpenViking's Python binding and is not
// available here.
//
// Store options (MemoryStoreSpec::options): "url" (the server, e.g.
// http://127.0.0.1:1933; a trailing '/' is dropped), "api_key" (sent as X-API-Key),
// "timeout" (seconds per HTTP exchange, default 60). The spec's account_id, user_id and
// agent_id (each "default" when unset) go out as X-OpenViking-Account / -User / -Agent.
// Opening checks nothing on the network (the server may come up later); the first op
// that cannot reach it is a Failure(transport).
//
// Every URI goes out in its viking:// spelling and comes back as memory://. Server
// errors ({"status":"error","error":{"code",...}}) become ExecutionFailure values by
// their code (§3.5: NOT_FOUND -> not_found, INVALID_ARGUMENT -> invalid_uri, ...), with
// the SDK's exception class name in `detail`; a transport failure is `transport`, an
// expired deadline `timeout`, a body that is not the envelope `internal`.
//
// Thread safety and errors: as backend.hpp (MemoryBackendError from an open without
// "url"). Ops run concurrently, also on one store; the server orders them.
// Cancellation: cancelling an awaiting coroutine aborts its HTTP exchange.
#include <rath/memory/backend.hpp>

namespace rath::memory {

inline constexpr const char* openviking_backend_name = "openviking";

[[nodiscard]] MemoryBackendPtr make_openviking_memory_backend(rath::async::Runtime* runtime = nullptr);
[[nodiscard]] MemoryCapabilities openviking_memory_capabilities() noexcept;

}  // namespace rath::memory
