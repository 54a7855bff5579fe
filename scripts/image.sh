#!/usr/bin/env bash
# image.sh - build the kwp container image from the top-level Dockerfile and prove it runs:
#   1. ../shared/tools/build-image.sh builds it with buildah (no docker engine, no registry: the
#      debian:bookworm and bookworm-slim bases are made locally with debootstrap) and smoke-runs
#      `IMAGE demo`, GETting /readyz until it answers 200;
#   2. the image's root filesystem is then mounted read-only and `kwp demo` runs from it as the
#      image's numeric non-root user (chroot --userspec), and must answer /readyz too;
#   3. prints the image size.
# Usage: scripts/image.sh [TAG] (default localhost/kwp:dev). Runs as root (buildah vfs storage).
# Environment: KWP_BUILD_IMAGE (path of build-image.sh, default ../shared/tools/build-image.sh
# beside the repository), KWP_IMAGE_ARCHIVE=FILE also writes an OCI archive.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TAG="${1:-localhost/kwp:dev}"
BUILD_IMAGE="${KWP_BUILD_IMAGE:-$ROOT/../shared/tools/build-image.sh}"
[ -f "$BUILD_IMAGE" ] || { echo "image.sh: $BUILD_IMAGE not found (set KWP_BUILD_IMAGE)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "image.sh: run as root" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

port=$(free_port)
args=(--smoke "http://127.0.0.1:$port/readyz" --smoke-cmd "demo --listen 127.0.0.1:$port"
      --smoke-timeout 60)
[ -n "${KWP_IMAGE_ARCHIVE:-}" ] && args+=(--oci-archive "$KWP_IMAGE_ARCHIVE")
bash "$BUILD_IMAGE" "${args[@]}" "$ROOT" "$TAG"

# The same storage build-image.sh used.
CACHE=${BUILD_IMAGE_CACHE:-${TMPDIR:-/tmp}/img-scratch/cache}
export CONTAINERS_STORAGE_CONF=$CACHE/storage.conf BUILDAH_ISOLATION=chroot

user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$TAG")
case "$user" in
  [1-9]*:[1-9]* | [1-9]*) ;;
  *) echo "image.sh: image USER is '$user', want a numeric non-root uid" >&2; exit 1 ;;
esac
uid=${user%%:*}
gid=${user#*:}
[ "$gid" != "$user" ] || gid=$uid

ctr=$(buildah from --pull=never "$TAG")
mnt=$(buildah mount "$ctr")
ro=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  umount "$ro/proc" 2>/dev/null || true
  umount "$ro" 2>/dev/null || true
  rmdir "$ro" 2>/dev/null || true
  buildah umount "$ctr" >/dev/null 2>&1 || true
  buildah rm "$ctr" >/dev/null 2>&1 || true
}
trap cleanup EXIT
mount --bind "$mnt" "$ro"
mount -o remount,bind,ro "$ro"
mount -t proc proc "$ro/proc"
if touch "$ro/.rw-test" 2>/dev/null; then
  echo "image.sh: the read-only mount is writable" >&2
  exit 1
fi
port=$(free_port)
log=$(mktemp)
chroot --userspec="$uid:$gid" "$ro" /usr/local/bin/kwp demo --listen "127.0.0.1:$port" >"$log" 2>&1 &
pid=$!
ok=
for _ in $(seq 300); do
  if body=$(curl -fsS --max-time 2 "http://127.0.0.1:$port/readyz" 2>/dev/null); then ok=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$ok" ]; then
  cat "$log" >&2
  echo "image.sh: kwp demo on the read-only root filesystem did not answer /readyz" >&2
  exit 1
fi
run_uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
echo "read-only root filesystem, uid $run_uid: GET /readyz -> $body"
[ "$run_uid" = "$uid" ] || { echo "image.sh: kwp ran as uid $run_uid, want $uid" >&2; exit 1; }
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
echo "image $TAG: $(buildah images --format '{{.Size}}' "$TAG" | head -1), user $user," \
     "entrypoint $(buildah inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$TAG")"
