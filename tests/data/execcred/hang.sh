#!/bin/sh
# hang.sh - a test exec credential plugin that never answers: writes its pid to $1, then
# becomes `sleep 300` (same pid), so the caller's timeout must kill and reap it.
echo $$ >"$1"
exec sleep 300
