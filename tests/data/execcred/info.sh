#!/bin/sh
# info.sh - a test exec credential plugin that records what it was given: $KUBERNETES_EXEC_INFO
# into $1.info, its arguments (one per line) into $1.args, $KWP_FOO and $KWP_BAR into $1.env,
# whether stdin is /dev/null-like (empty) into $1.stdin; then answers with a token.
set -eu
out=$1
printf '%s' "$KUBERNETES_EXEC_INFO" >"$out.info"
shift
: >"$out.args"
for a in "$@"; do printf '%s\n' "$a" >>"$out.args"; done
printf '%s|%s\n' "${KWP_FOO:-}" "${KWP_BAR:-}" >"$out.env"
wc -c </dev/stdin | tr -d ' ' >"$out.stdin"
echo '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"info-token"}}'
