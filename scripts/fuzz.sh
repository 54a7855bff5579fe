#!/usr/bin/env bash
# fuzz.sh - run the libFuzzer harnesses of tests/fuzz/ for a bounded time each (developers;
# CI only replays the committed corpus, see tests/fuzz/CMakeLists.txt).
#
#   bash scripts/fuzz.sh [-t SECONDS] [HARNESS...]
#
# HARNESS is a name from tests/fuzz/fuzz_<name>.c (default: all of them); each runs SECONDS
# (default 60) under AddressSanitizer + UndefinedBehaviorSanitizer with leak detection, one
# at a time, from the committed seeds plus its own working corpus under the build directory
# (kept between runs). A crash, leak, broken invariant, input slower than 10 s or using more
# than 2 GiB stops that harness and leaves a reproducer in <build>/fuzz-artifacts/; add it to
# tests/fuzz/corpus/<name>/ with the fix so CI replays it from then on. Exits 1 if any harness
# found something, and ends with one line per harness.
#
# Environment: KWP_FUZZ_BUILD_DIR (default build-fuzz), KWP_JOBS (default 2).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KWP_FUZZ_BUILD_DIR:-build-fuzz}"
JOBS="${KWP_JOBS:-2}"
SECONDS_EACH=60

usage() {
  sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}

while getopts "t:h" opt; do
  case "$opt" in
    t) SECONDS_EACH="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
case "$SECONDS_EACH" in
  '' | *[!0-9]*) echo "fuzz.sh: -t wants whole seconds, not '$SECONDS_EACH'" >&2; exit 2 ;;
esac
cd "$ROOT" || exit 1

harnesses=("$@")
if [ "${#harnesses[@]}" -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.c; do
    n="${f#tests/fuzz/fuzz_}"
    harnesses+=("${n%.c}")
  done
fi
for h in "${harnesses[@]}"; do
  if [ ! -f "tests/fuzz/fuzz_$h.c" ]; then
    echo "fuzz.sh: no harness tests/fuzz/fuzz_$h.c" >&2
    exit 2
  fi
done

# libFuzzer comes with clang and its runtime package (Debian 12).
missing=()
for pkg in clang libclang-rt-14-dev; do
  if [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$pkg")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    SUDO=(sudo)
  fi
  echo "fuzz.sh: installing ${missing[*]}"
  "${SUDO[@]}" apt-get update -qq &&
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${missing[@]}" || exit 1
fi

# No KWP_WERROR: clang's -Wformat=2 flags the printf wrappers that gcc accepts.
targets=()
for h in "${harnesses[@]}"; do
  targets+=(--target "fuzz_$h")
done
CC=clang cmake -S . -B "$BUILD_DIR" -DKWP_FUZZ=ON -DKWP_SANITIZE=address,undefined >/dev/null &&
  cmake --build "$BUILD_DIR" -j"$JOBS" "${targets[@]}" || exit 1

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
mkdir -p "$BUILD_DIR/fuzz-artifacts"
declare -a results=()
overall=0
for h in "${harnesses[@]}"; do
  work="$BUILD_DIR/fuzz-corpus/$h"
  log="$BUILD_DIR/fuzz-artifacts/$h.log"
  dict=()
  max_len=4096
  [ "$h" = selector ] && max_len=17000 # past SELECTOR_MAX_LEN, to reach the length check
  mkdir -p "$work"
  case "$h" in
    reflector) [ -f tests/fuzz/kube_json.dict ] && dict=(-dict=tests/fuzz/kube_json.dict) ;;
    *) [ -f "tests/fuzz/$h.dict" ] && dict=(-dict="tests/fuzz/$h.dict") ;;
  esac
  echo "==== fuzz_$h: ${SECONDS_EACH}s (log: $log)"
  # The outer timeout is a backstop: libFuzzer stops itself after -max_total_time.
  timeout -k 10 $((SECONDS_EACH + 120)) "$BUILD_DIR/tests/fuzz/fuzz_$h" \
    -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$BUILD_DIR/fuzz-artifacts/$h-" "${dict[@]}" \
    "$work" "tests/fuzz/corpus/$h" >"$log" 2>&1
  rc=$?
  runs="$(grep -Eo '^Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' | tail -n1)"
  cov="$(grep -Eo 'cov: [0-9]+' "$log" | tail -n1)"
  if [ "$rc" -eq 0 ]; then
    results+=("$(printf '%-12s ok      %s runs, %s' "$h" "${runs:-?}" "${cov:-cov: ?}")")
  else
    overall=1
    art="$(grep -Eo "Test unit written to [^ ]+" "$log" | tail -n1 | sed 's/Test unit written to //')"
    grep -E 'invariant failed|ERROR: |SUMMARY: |runtime error' "$log" | head -n 5
    results+=("$(printf '%-12s FOUND   exit %s, reproducer %s' "$h" "$rc" "${art:-(see log)}")")
  fi
done

echo
echo "==== fuzz.sh summary (${SECONDS_EACH}s each)"
printf '  %s\n' "${results[@]}"
exit "$overall"
