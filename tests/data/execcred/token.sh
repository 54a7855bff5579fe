#!/bin/sh
# token.sh - a test exec credential plugin: prints a bearer token "tok-N" (N = this run's
# number) as an ExecCredential. Driven by its environment (set through the kubeconfig's env):
#   KWP_COUNTER  file that gets one line per run (required)
#   KWP_TTL      seconds until expirationTimestamp (negative: already expired; unset: none)
#   KWP_SLEEP    seconds to sleep before answering (to make concurrent callers overlap)
#   KWP_API      apiVersion to answer with (default client.authentication.k8s.io/v1)
set -eu
echo run >>"$KWP_COUNTER"
n=$(wc -l <"$KWP_COUNTER" | tr -d ' ')
if [ -n "${KWP_SLEEP:-}" ]; then
  sleep "$KWP_SLEEP"
fi
exp=""
if [ -n "${KWP_TTL:-}" ]; then
  t=$(($(date +%s) + KWP_TTL))
  exp=",\"expirationTimestamp\":\"$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ)\""
fi
api=${KWP_API:-client.authentication.k8s.io/v1}
printf '{"kind":"ExecCredential","apiVersion":"%s","status":{"token":"tok-%s"%s}}\n' "$api" "$n" "$exp"
