#!/usr/bin/env bash
# test_python_client.sh - Debian's python3-kubernetes (TOOLCHAIN 5.3) through `kwp proxy` in
# front of `kwp sim`, both on 127.0.0.1 port 0. The proxy caches pods with a fixed history of 5
# events, so a handful of writes moves its window. tests/clients/python/watch_client.py is the
# client; it checks what the library hands its user:
#   - list_namespaced_pod through kwp = the simulator's pods;
#   - watch.Watch().stream from the list RV yields every create/patch/delete made meanwhile
#     through the API (types, names, labels, increasing RVs equal to the writes' RVs), served
#     by kwp's cache;
#   - once kwp holds the last write (so compaction cannot end its caught-up upstream watch and
#     make it relist), the simulator compacts and kwp's window moves past the old RV (with no
#     relist); resuming from it raises ApiException(410, "Expired: too old resource version:
#     N (M)"), after one retry when no timeout_seconds is given;
#   - relisting and watching again works.
#
# Environment: KWP_BIN (default build/kwp), KWP_PYTHON (default /usr/bin/python3: the only
# interpreter that imports the Debian package). Prints PASS/FAIL lines and ends with
# "N passed, N failed"; exits non-zero on any failure. Only processes this script started are
# signalled, by PID.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KWP_BIN="${KWP_BIN:-build/kwp}"
PY="${KWP_PYTHON:-/usr/bin/python3}"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-python-XXXXXX")"

# ok, bad, stop_pid, start_sim_proxy, kwp_finish
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap kwp_finish EXIT

if [ ! -x "$KWP_BIN" ]; then
  bad "kwp binary present" "$KWP_BIN is not executable (set KWP_BIN)"
  exit 1
fi
if ! ver="$("$PY" -c 'import kubernetes; print(kubernetes.__version__)' 2>&1)"; then
  bad "$PY imports kubernetes (apt-get install python3-kubernetes; scripts/setup.sh does)" "$ver"
  exit 1
fi
ok "$PY imports kubernetes $ver"

t0=$SECONDS
start_sim_proxy --objects 10 --namespaces 2 --seed 7 --churn 0 --compaction-interval 0 -- \
  --resources pods --history-min 5 --history-max 5 --history-window 0

timeout 120 "$PY" "$HERE/python/watch_client.py" "$PROXY" "$SIM" >"$TMP/client.out" 2>"$TMP/client.err"
rc=$?
cat "$TMP/client.out"
n_pass=$(grep -c '^PASS: ' "$TMP/client.out")
n_fail=$(grep -c '^FAIL: ' "$TMP/client.out")
pass=$((pass + n_pass))
fail=$((fail + n_fail))
if [ "$rc" -ne 0 ] && [ "$n_fail" -eq 0 ]; then
  bad "watch_client.py ran to the end" "exit status $rc (124 = timed out after 120 s)" \
    "stderr: $(tail -n 30 "$TMP/client.err")"
elif [ "$rc" -ne 0 ] && [ -s "$TMP/client.err" ]; then
  echo "      client stderr: $(tail -n 30 "$TMP/client.err")"
fi
echo "client part took $((SECONDS - t0)) s"
