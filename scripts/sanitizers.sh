#!/usr/bin/env bash
# Sanitizer builds: ASan+UBSan over every test suite, TSan over the suites labelled
# `tsan` (the async runtime, the loop, sessions, net, the fake server).
# RATH_CI_DEADLINE (epoch seconds) lets CI skip a stage that would not finish in time;
# a skipped stage is reported, never silently passed.
set -euo pipefail
cd "$(dirname "$0")/.."

common=(-G Ninja -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1" -DRATH_BUILD_BENCH=OFF -DRATH_BUILD_EXAMPLES=OFF)

time_left() {
  if [[ -z "${RATH_CI_DEADLINE:-}" ]]; then echo 999999; else echo $(( RATH_CI_DEADLINE - $(date +%s) )); fi
}

if (( $(time_left) > 1500 )); then
  echo "== ASan+UBSan build (all suites)"
  cmake -S . -B build-asan "${common[@]}" -DRATH_SANITIZE=ON >/dev/null
  cmake --build build-asan
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
    ctest --test-dir build-asan --output-on-failure -j2 -LE "install|integration|headers"
else
  echo "== ASan+UBSan stage SKIPPED: only $(time_left) s of CI time left"
fi

if (( $(time_left) > 900 )); then
  echo "== TSan build (suites labelled tsan)"
  cmake -S . -B build-tsan "${common[@]}" -DRATH_TSAN=ON >/dev/null
  tsan_targets=$(ctest --test-dir build-tsan -N -L tsan | sed -n 's/^ *Test *#[0-9]*: *\(test_[a-z_]*\).*/\1/p' | sort -u)
  cmake --build build-tsan --target ${tsan_targets}
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure -j2 -L tsan
else
  echo "== TSan stage SKIPPED: only $(time_left) s of CI time left"
fi
