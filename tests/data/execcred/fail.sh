#!/bin/sh
# fail.sh - a test exec credential plugin that fails: one line per run in $KWP_COUNTER, a
# message on stderr, exit status 3, and a token on stdout that must not be used.
echo run >>"$KWP_COUNTER"
echo '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"no"}}'
echo "boom: the identity provider said no" >&2
exit 3
