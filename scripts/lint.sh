#!/usr/bin/env bash
# lint.sh - fails when C sources call functions STYLE.md bans (use snprintf, strtoull with end
# checks, bounded copies instead).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if grep -nE '\b(strcpy|strcat|sprintf|vsprintf|gets|atoi|atol)[[:space:]]*\(' \
    cache/*.[ch] proxy/*.[ch] sim/*.[ch] $(ls load/*.[ch] 2>/dev/null); then
  echo "lint: banned calls above" >&2
  exit 1
fi
echo "lint: no banned calls"
