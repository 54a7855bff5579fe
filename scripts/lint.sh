#!/usr/bin/env bash
# lint.sh - the checks that are not tests. Fails (exit 1) when any of them finds something:
#   banned  C sources call functions STYLE.md bans (use snprintf, strtoull with end checks,
#           bounded copies instead)
#   format  a tracked .c/.h differs from what clang-format (Debian 12's 14, .clang-format) makes
#   tidy    clang-tidy's static analyzer (.clang-tidy) reports anything in a library source;
#           needs a build directory with compile_commands.json (KWP_BUILD_DIR, default build)
# Usage: lint.sh [banned] [format] [tidy] (default: banned format). KWP_JOBS sets tidy's
# parallelism (default 2). `cmake --build build --target lint` runs the default set.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

BUILD_DIR="${KWP_BUILD_DIR:-build}"
JOBS="${KWP_JOBS:-2}"
checks=("$@")
[ "${#checks[@]}" -gt 0 ] || checks=(banned format)
status=0

c_sources() { git ls-files -- "$@" 2>/dev/null | grep -E '\.[ch]$'; }

for check in "${checks[@]}"; do
  case "$check" in
  banned)
    # shellcheck disable=SC2046
    if grep -nE '\b(strcpy|strcat|sprintf|vsprintf|gets|atoi|atol)[[:space:]]*\(' \
        $(c_sources cache proxy sim load cmd bench); then
      echo "lint: banned calls above" >&2
      status=1
    else
      echo "lint: no banned calls"
    fi
    ;;
  format)
    if ! command -v clang-format >/dev/null; then
      echo "lint: clang-format is not installed" >&2
      status=1
      continue
    fi
    bad=$(c_sources . | xargs -r -n 16 -P "$JOBS" clang-format --dry-run -Werror 2>&1 |
          grep -oE '^[^:]+\.[ch]:' | sort -u | tr -d ':')
    if [ -n "$bad" ]; then
      echo "lint: not clang-formatted (run clang-format -i on them):" >&2
      echo "$bad" | sed 's/^/  /' >&2
      status=1
    else
      echo "lint: every C file is clang-formatted ($(c_sources . | wc -l) files)"
    fi
    ;;
  tidy)
    if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
      echo "lint: $BUILD_DIR/compile_commands.json missing (configure the build first)" >&2
      status=1
      continue
    fi
    out=$(c_sources cache proxy sim load cmd | grep '\.c$' |
          xargs -r -n 1 -P "$JOBS" clang-tidy -p "$BUILD_DIR" --quiet 2>/dev/null |
          grep -E 'warning:|error:')
    if [ -n "$out" ]; then
      echo "$out" >&2
      echo "lint: clang-tidy findings above" >&2
      status=1
    else
      echo "lint: clang-tidy clean ($(c_sources cache proxy sim load cmd | grep -c '\.c$') files)"
    fi
    ;;
  *)
    echo "lint: unknown check $check (banned, format, tidy)" >&2
    status=2
    ;;
  esac
done
exit "$status"
