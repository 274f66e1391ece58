#!/usr/bin/env bash
# Sanitizer builds: ASan+UBSan over every test suite, TSan over the suites labelled
# `tsan` (the async runtime, the loop, sessions, net, MCP, memory, the fake server).
# RATH_CI_DEADLINE (epoch seconds) bounds the stages: a stage that would not start in
# time is reported SKIPPED, and one that runs out of time while building or testing is
# stopped and reported INCOMPLETE, so that CI ends inside its limit; neither is ever
# reported as passed. A test that fails fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

common=(-G Ninja -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1" -DRATH_BUILD_BENCH=OFF -DRATH_BUILD_EXAMPLES=OFF)

time_left() {
  if [[ -z "${RATH_CI_DEADLINE:-}" ]]; then echo 999999; else echo $(( RATH_CI_DEADLINE - $(date +%s) )); fi
}

# bounded STAGE COMMAND...: runs COMMAND until the deadline (less a minute for the rest
# of CI). Returns 0 on success, 124 when stopped for time (reported), else the command's
# own failure.
bounded() {
  local stage="$1"; shift
  local limit=$(( $(time_left) - 60 ))
  if (( limit <= 0 )); then
    echo "== $stage INCOMPLETE: no CI time left"
    return 124
  fi
  local rc=0
  timeout --signal=TERM --kill-after=20 "$limit" "$@" || rc=$?
  if (( rc == 124 || rc == 137 )); then
    echo "== $stage INCOMPLETE: stopped after $limit s, at the CI deadline"
    return 124
  fi
  return "$rc"
}

# step NAME COMMAND...: one step of a stage; false (after reporting) when it ran out of
# time; a failure ends the script with the command's status.
step() {
  local rc=0
  bounded "$@" || rc=$?
  if (( rc == 124 )); then return 1; fi
  if (( rc != 0 )); then exit "$rc"; fi
  return 0
}

if (( $(time_left) > 1500 )); then
  echo "== ASan+UBSan build (all suites)"
  cmake -S . -B build-asan "${common[@]}" -DRATH_SANITIZE=ON >/dev/null
  if step "ASan+UBSan build" cmake --build build-asan; then
    step "ASan+UBSan tests" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
      ctest --test-dir build-asan --output-on-failure -j2 -LE "install|integration|headers" || true
  fi
else
  echo "== ASan+UBSan stage SKIPPED: only $(time_left) s of CI time left"
fi

if (( $(time_left) > 900 )); then
  echo "== TSan build (suites labelled tsan)"
  cmake -S . -B build-tsan "${common[@]}" -DRATH_TSAN=ON >/dev/null
  tsan_targets=$(ctest --test-dir build-tsan -N -L tsan | sed -n 's/^ *Test *#[0-9]*: *\(test_[a-z_]*\).*/\1/p' | sort -u)
  if step "TSan build" cmake --build build-tsan --target ${tsan_targets}; then
    step "TSan tests" env TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
      ctest --test-dir build-tsan --output-on-failure -j2 -L tsan || true
  fi
else
  echo "== TSan stage SKIPPED: only $(time_left) s of CI time left"
fi
