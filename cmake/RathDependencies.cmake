# All dependencies come from Debian 12 packages (scripts/install-deps.sh).
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
# Debian 12 ships Boost 1.74 as its default; rath needs the 1.81 packages.
find_package(Boost 1.81.0 EXACT CONFIG REQUIRED COMPONENTS json url)
find_package(OpenSSL REQUIRED)
find_package(simdjson CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)
