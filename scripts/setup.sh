#!/usr/bin/env bash
# setup.sh - make a Debian 12 machine ready to build kwp, then build it into build/.
#
# Idempotent: packages are checked one by one with dpkg-query and only the missing ones are
# installed (apt-get update runs only then); the CMake build is incremental, so a second run
# takes seconds. Runs as root or through sudo. Environment:
#   KWP_BUILD_DIR  build directory (default build)
#   KWP_JOBS       parallel build jobs (default 2)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KWP_BUILD_DIR:-build}"
JOBS="${KWP_JOBS:-2}"

PACKAGES=(
  build-essential cmake pkg-config
  libmicrohttpd-dev libcurl4-openssl-dev libcjson-dev libssl-dev libgnutls28-dev
  libcriterion-dev zlib1g-dev libclang-rt-14-dev libyaml-dev
  clang-format clang-tidy
  python3-kubernetes gnuplot-nox
)

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  SUDO=(sudo)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  if [ "$status" != "install ok installed" ]; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#PACKAGES[@]} packages present"
fi

cd "$ROOT"
# The pinned @kubernetes/client-node for tests/clients/test_node_client.sh: npm ci only when
# node_modules is missing or older than package-lock.json.
NODE_DIR=tests/clients/node
if [ ! -f "$NODE_DIR/node_modules/.package-lock.json" ] ||
  [ "$NODE_DIR/package-lock.json" -nt "$NODE_DIR/node_modules/.package-lock.json" ]; then
  echo "setup: npm ci in $NODE_DIR"
  npm ci --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error
else
  echo "setup: $NODE_DIR/node_modules up to date"
fi

cmake -S . -B "$BUILD_DIR" -DKWP_WERROR=ON >/dev/null
cmake --build "$BUILD_DIR" -j"$JOBS"
echo "setup: built $ROOT/$BUILD_DIR/kwp"
