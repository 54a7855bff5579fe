#!/usr/bin/env bash
# test.sh - install what is missing, build, and run every test twice: once in build/ (warnings
# as errors) and once in build-asan/ under AddressSanitizer + UndefinedBehaviorSanitizer with
# leak detection, and scripts/lint.sh (banned calls, clang-format, clang-tidy). Exits non-zero if
# any build, test or lint check fails and ends with a summary line
# "summary: N passed, N failed" (N = CTest tests over both runs).
#
# Environment: KWP_JOBS (default 2), KWP_BUILD_DIR (default build), KWP_ASAN_BUILD_DIR
# (default build-asan), KWP_TSAN_BUILD_DIR (default build-tsan), KWP_SKIP_ASAN=1 /
# KWP_SKIP_TSAN=1 to skip a sanitizer run, KWP_SKIP_IMAGE=1 to skip the image (local use).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${KWP_JOBS:-2}"
BUILD_DIR="${KWP_BUILD_DIR:-build}"
ASAN_DIR="${KWP_ASAN_BUILD_DIR:-build-asan}"
export KWP_BUILD_DIR="$BUILD_DIR" KWP_JOBS="$JOBS"
cd "$ROOT" || exit 1

declare -a phase_names=() phase_results=()
total_passed=0
total_failed=0
overall=0

now() { date +%s; }

# record NAME RC SECONDS
record() {
  phase_names+=("$1")
  if [ "$2" -eq 0 ]; then
    phase_results+=("ok      $(printf '%4ss' "$3")")
  else
    phase_results+=("FAILED  $(printf '%4ss' "$3") (exit $2)")
    overall=1
  fi
}

# run_phase NAME CMD... : runs a command, records its status and duration.
run_phase() {
  local name="$1" t0 rc
  shift
  echo
  echo "==== $name: $*"
  t0=$(now)
  "$@"
  rc=$?
  record "$name" "$rc" $(($(now) - t0))
  return "$rc"
}

# run_ctest NAME BUILD_DIR : runs ctest, adds its counts to the totals.
run_ctest() {
  local name="$1" dir="$2" log rc t0 line passed failed total
  log="$(mktemp)"
  echo
  echo "==== $name: ctest --test-dir $dir --output-on-failure -j$JOBS"
  t0=$(now)
  ctest --test-dir "$dir" --output-on-failure -j"$JOBS" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  record "$name" "$rc" $(($(now) - t0))
  # "100% tests passed, 0 tests failed out of 12"
  line="$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n1)"
  if [ -n "$line" ]; then
    failed="$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")"
    total="$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")"
    passed=$((total - failed))
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
  elif [ "$rc" -ne 0 ]; then
    total_failed=$((total_failed + 1))
  fi
  if grep -q 'No tests were found' "$log"; then
    echo "test.sh: ctest in $dir found no tests"
    record "$name (no tests)" 1 0
  fi
  rm -f "$log"
  return "$rc"
}

start=$(now)

if run_phase "setup+build" bash scripts/setup.sh; then
  run_ctest "tests" "$BUILD_DIR"
  # Banned calls, clang-format and clang-tidy's analyzer (scripts/lint.sh); counted as one test.
  if run_phase "lint" bash scripts/lint.sh banned format tidy; then
    total_passed=$((total_passed + 1))
  else
    total_failed=$((total_failed + 1))
  fi
else
  total_failed=$((total_failed + 1))
fi

if [ "${KWP_SKIP_ASAN:-0}" != "1" ]; then
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:strict_string_checks=1:check_initialization_order=1:detect_invalid_pointer_pairs=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export LSAN_OPTIONS="report_objects=0"
  if run_phase "asan configure" cmake -S . -B "$ASAN_DIR" -DKWP_WERROR=ON \
       -DKWP_SANITIZE=address,undefined >/dev/null &&
     run_phase "asan build" cmake --build "$ASAN_DIR" -j"$JOBS"; then
    run_ctest "tests (asan+ubsan)" "$ASAN_DIR"
  else
    total_failed=$((total_failed + 1))
  fi
fi

# ThreadSanitizer on the concurrency tests: the cache core (one writer, many readers, the
# wake protocol) and the watch writers (kicks, handovers, stop). Only those binaries:
# Criterion itself cannot start other test binaries under TSan on this machine (they carry
# the workaround, tests/support/tsan_boxfort.h).
if [ "${KWP_SKIP_TSAN:-0}" != "1" ]; then
  TSAN_DIR="${KWP_TSAN_BUILD_DIR:-build-tsan}"
  if run_phase "tsan build" bash -c "cmake -S . -B '$TSAN_DIR' -DKWP_WERROR=ON -DKWP_SANITIZE=thread >/dev/null && cmake --build '$TSAN_DIR' -j$JOBS --target test_resource_mt test_fanout"; then
    if run_phase "tsan test_resource_mt" env TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
         "$TSAN_DIR/tests/test_resource_mt" --jobs 1 &&
       run_phase "tsan test_fanout" env TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
         "$TSAN_DIR/tests/test_fanout" --jobs 1; then
      total_passed=$((total_passed + 1))
    else
      total_failed=$((total_failed + 1))
    fi
  else
    total_failed=$((total_failed + 1))
  fi
fi

# The container image (Dockerfile): built with buildah, smoke-run as its non-root user, then
# run from a read-only mount of its root filesystem (scripts/image.sh).
if [ "${KWP_SKIP_IMAGE:-0}" != "1" ]; then
  if run_phase "image" bash scripts/image.sh; then
    total_passed=$((total_passed + 1))
  else
    total_failed=$((total_failed + 1))
  fi
fi

echo
echo "==== test.sh summary ($(($(now) - start))s total)"
for i in "${!phase_names[@]}"; do
  printf '  %-22s %s\n' "${phase_names[$i]}" "${phase_results[$i]}"
done
if [ "$overall" -eq 0 ]; then
  echo "  result: all builds and tests passed"
else
  echo "  result: FAILURES (see above)"
fi
echo "summary: $total_passed passed, $total_failed failed"
exit "$overall"
