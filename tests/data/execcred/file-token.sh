#!/bin/sh
# file-token.sh - a test exec credential plugin for tests/integration/test_credentials.c, driven
# by files the test rewrites while kwp runs (set through the kubeconfig's env):
#   KWP_COUNTER  file that gets one line per run (required)
#   KWP_FAIL     when this file exists: its content goes to stderr and the exit status is 1
#   KWP_TOKEN    file holding the bearer token to answer with (required otherwise)
#   KWP_TTL      seconds until expirationTimestamp (unset: none)
set -eu
echo run >>"$KWP_COUNTER"
if [ -e "$KWP_FAIL" ]; then
  cat "$KWP_FAIL" >&2
  exit 1
fi
tok=$(cat "$KWP_TOKEN")
exp=""
if [ -n "${KWP_TTL:-}" ]; then
  t=$(($(date +%s) + KWP_TTL))
  exp=",\"expirationTimestamp\":\"$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ)\""
fi
printf '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"%s"%s}}\n' "$tok" "$exp"
