# All dependencies come from Debian 12 packages (scripts/install-deps.sh).
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
# Debian 12 ships Boost 1.74 as its default; rath needs the 1.81 packages (Boost.URL is
# new in 1.81). The minimum version makes the search pass over a 1.74 BoostConfig.
find_package(Boost 1.81.0 CONFIG REQUIRED COMPONENTS json url)
find_package(OpenSSL REQUIRED)
find_package(ZLIB REQUIRED)
find_package(simdjson CONFIG REQUIRED)
# PostgreSQL support (rath::pg: the async libpq connection and the PostgreSQL session
# store) is an optional component: built when libpq is found, so the demo never needs
# it. Under RATH_CI a missing libpq fails configure instead of dropping its suites.
option(RATH_WITH_POSTGRES "Build rath::pg when libpq is found" ON)
set(RATH_HAVE_POSTGRES OFF)
if(RATH_WITH_POSTGRES)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(RATH_LIBPQ QUIET libpq)
  endif()
  if(RATH_LIBPQ_FOUND)
    set(RATH_HAVE_POSTGRES ON)
  elseif(DEFINED ENV{RATH_CI})
    message(FATAL_ERROR "libpq is missing (RATH_CI is set): run scripts/install-deps.sh --test")
  else()
    message(STATUS "rath: libpq not found, rath::pg and its tests not built (scripts/install-deps.sh --test installs it)")
  endif()
endif()
