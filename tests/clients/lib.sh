# lib.sh - shared helpers of the real-client tests (sourced, not run): ok/bad (PASS/FAIL lines
# and counts), stop_pid, start_kwp and kwp_finish. The caller sets KWP_BIN and TMP (a fresh
# directory), declares pass=0 fail=0 KWP_PIDS=() KWP_NAMES=() DRAIN_PIDS=(), and, to use
# start_kwp/kwp_finish, installs `trap kwp_finish EXIT`. An optional kwp_before_finish function runs first at exit
# (to stop the client before the servers). Only processes started here are signalled, by PID.

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
