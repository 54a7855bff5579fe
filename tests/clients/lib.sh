# lib.sh - shared helpers of the real-client tests (sourced, not run): ok/bad/verdict (PASS/FAIL
# lines and counts), need_exec, stop_pid, start_kwp, wait_ready, start_sim_proxy,
# write_kubeconfig and kwp_finish. The caller sets KWP_BIN and TMP (a fresh directory) before
# sourcing it, and, to use start_kwp/kwp_finish, installs `trap kwp_finish EXIT`. At exit,
# clients stop before the servers they talk to: an optional kwp_before_finish function runs
# first, then every variable named in STOP_FIRST that holds a PID (a script empties it once it
# stopped that process itself) is stopped. Only processes started here are signalled, by PID.

# A proxy stopped here exits at once, run by ctest (which sets it too) or by hand: stop_pid
# waits 5 s, the default --shutdown-delay.
export KWP_SHUTDOWN_DELAY=${KWP_SHUTDOWN_DELAY:-0}

# The PASS/FAIL counts, and the kwp processes start_kwp started (with their names and the
# stdout drains) for kwp_finish.
pass=0
fail=0
KWP_PIDS=()
KWP_NAMES=()
DRAIN_PIDS=()
STOP_FIRST=()

ok() {
  echo "PASS: $1"
  pass=$((pass + 1))
}

bad() {
  local name="$1" line
  shift
  echo "FAIL: $name"
  for line in "$@"; do
    echo "      $line"
  done
  fail=$((fail + 1))
}

# verdict NAME OK [DETAIL...]: ok NAME when OK is 1, else bad NAME DETAIL...
verdict() {
  local name="$1" good="$2"
  shift 2
  if [ "$good" = 1 ]; then
    ok "$name"
  else
    bad "$name" "$@"
  fi
}

# need_exec WHAT PATH: FAIL and exit unless PATH is an executable (kubectl, the kwp binary).
need_exec() {
  if [ ! -x "$2" ]; then
    bad "$1 present" "$2 is not executable"
    exit 1
  fi
}

# stop_pid PID SECONDS: TERM, wait up to SECONDS, then KILL. Sets STOP_RC to its exit status.
stop_pid() {
  local pid="$1" secs="$2" i
  STOP_RC=0
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < secs * 20; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "      pid $pid ignored SIGTERM for ${secs}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  STOP_RC=$?
}

# kwp_finish: stops every kwp started (newest first: a proxy before its upstream), checks each
# exits 0 on SIGTERM, prints "N passed, N failed" and exits with the verdict.
kwp_finish() {
  local i
  trap - EXIT
  if declare -F kwp_before_finish >/dev/null; then
    kwp_before_finish
  fi
  for i in "${STOP_FIRST[@]}"; do
    if [ -n "${!i:-}" ]; then
      stop_pid "${!i}" 5
    fi
  done
  # Newest first: the proxy before its upstream.
  for ((i = ${#KWP_PIDS[@]} - 1; i >= 0; i--)); do
    stop_pid "${KWP_PIDS[$i]}" 5
    if [ "$STOP_RC" -eq 0 ]; then
      ok "kwp ${KWP_NAMES[$i]} exits 0 on SIGTERM"
    else
      bad "kwp ${KWP_NAMES[$i]} exits 0 on SIGTERM" "exit status $STOP_RC" \
        "$(tail -n 20 "$TMP/${KWP_NAMES[$i]}.log" 2>/dev/null)"
    fi
  done
  for i in "${DRAIN_PIDS[@]}"; do
    wait "$i" 2>/dev/null
  done
  if [ "$fail" -eq 0 ]; then
    rm -rf "$TMP"
  else
    echo "logs kept in $TMP"
  fi
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit $?
}

# start_kwp NAME ARGS...: starts `kwp ARGS` in the background, sets URL from its
# "listening on" stdout line (5 s bound). Logs in $TMP/NAME.log.
start_kwp() {
  local name="$1" line deadline
  shift
  URL=""
  mkfifo "$TMP/$name.fifo"
  "$KWP_BIN" "$@" >"$TMP/$name.fifo" 2>"$TMP/$name.log" &
  KWP_PIDS+=($!)
  KWP_NAMES+=("$name")
  exec 3<"$TMP/$name.fifo"
  deadline=$((SECONDS + 5))
  while [ "$SECONDS" -lt "$deadline" ] && IFS= read -r -t 5 -u 3 line; do
    case "$line" in
      "listening on "*)
        URL="${line#listening on }"
        break
        ;;
    esac
  done
  # Keep draining stdout so kwp never blocks on a full pipe.
  cat <&3 >"$TMP/$name.stdout" &
  DRAIN_PIDS+=($!)
  exec 3<&-
  if [ -z "$URL" ]; then
    bad "kwp $name prints its URL within 5 s" "log: $(tail -n 20 "$TMP/$name.log")"
    exit 1
  fi
}

# wait_ready URL SECONDS: polls URL/readyz (curl, any scheme; extra curl options may follow)
# until it answers 200, at most SECONDS. Status 0 when it did; READY_CODE holds the last code.
wait_ready() {
  local url="$1" secs="$2" deadline
  shift 2
  deadline=$((SECONDS + secs))
  while :; do
    READY_CODE="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$url/readyz")"
    [ "$READY_CODE" = 200 ] && return 0
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}

# start_sim_proxy SIM_ARGS... -- PROXY_ARGS...: `kwp sim` then `kwp proxy --upstream` it, both
# on 127.0.0.1 port 0; sets SIM and PROXY. PASS once the proxy's /readyz answers 200 (30 s
# bound), else FAIL and exit.
start_sim_proxy() {
  local sim_args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    sim_args+=("$1")
    shift
  done
  [ $# -gt 0 ] && shift
  start_kwp sim sim --listen 127.0.0.1:0 "${sim_args[@]}"
  SIM="$URL"
  start_kwp proxy proxy --listen 127.0.0.1:0 --upstream "$SIM" "$@"
  PROXY="$URL"
  if wait_ready "$PROXY" 30; then
    ok "kwp sim at $SIM, kwp proxy at $PROXY ready"
  else
    bad "kwp proxy /readyz 200 within 30 s" "last code $READY_CODE" \
      "$(tail -n 20 "$TMP/proxy.log")"
    exit 1
  fi
}

# write_kubeconfig FILE SERVER [NAMESPACE]: a kubeconfig for SERVER with an anonymous user (the
# context's namespace NAMESPACE, default "default").
write_kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster: {server: "$2"}
contexts:
- name: sim
  context: {cluster: sim, user: anon, namespace: ${3:-default}}
current-context: sim
users:
- name: anon
  user: {}
EOF
}
