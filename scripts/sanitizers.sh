#!/usr/bin/env bash
# Sanitizer builds: ASan+UBSan over every test suite, TSan over the suites labelled
# `async` (the runtime and everything that exercises it concurrently).
set -euo pipefail
cd "$(dirname "$0")/.."

common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRATH_BUILD_BENCH=OFF -DRATH_BUILD_EXAMPLES=OFF)

cmake -S . -B build-asan "${common[@]}" -DRATH_SANITIZE=ON >/dev/null
cmake --build build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2 -LE install

cmake -S . -B build-tsan "${common[@]}" -DRATH_TSAN=ON >/dev/null
cmake --build build-tsan
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan --output-on-failure -j2 -L tsan
