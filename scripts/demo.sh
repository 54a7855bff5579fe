#!/usr/bin/env bash
# demo.sh - install what is missing, build, and run `kwp demo` (the simulator and the proxy in
# one process). Arguments are passed to `kwp demo`; `scripts/demo.sh --help` lists them.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh" >&2
exec "$ROOT/build/kwp" demo "$@"
