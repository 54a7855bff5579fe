#!/bin/sh
# cert.sh - a test exec credential plugin: answers with client.crt and client.key (next to
# this script) as status.clientCertificateData and status.clientKeyData, no expiry.
set -eu
dir=$(dirname "$0")
json() { sed -e ':a' -e 'N' -e '$!ba' -e 's/\n/\\n/g' "$1"; }
printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"clientCertificateData":"%s\\n","clientKeyData":"%s\\n"}}\n' \
  "$(json "$dir/client.crt")" "$(json "$dir/client.key")"
