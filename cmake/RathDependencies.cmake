# All dependencies come from Debian 12 packages (scripts/install-deps.sh).
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
# Debian 12 ships Boost 1.74 as its default; rath needs the 1.81 packages (Boost.URL is
# new in 1.81). The minimum version makes the search pass over a 1.74 BoostConfig.
find_package(Boost 1.81.0 CONFIG REQUIRED COMPONENTS json url)
find_package(OpenSSL REQUIRED)
find_package(ZLIB REQUIRED)
find_package(simdjson CONFIG REQUIRED)
