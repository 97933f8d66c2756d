# Helpers shared by scripts/services/kafka.sh (one broker) and kafka-cluster.sh (a KRaft
# cluster): free ports, process checks, log tails. Sourced, never run; expects lib.sh's `die`.

# free_port: a random TCP port nothing listens on, below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range, usually 32768..60999) so that no outgoing connection can
# take it as its local port between the choice and the bind (a broker's JMX port once
# failed with "Port already in use" that way): 12000..(start of that range - 1), or
# 20000..49999 when the range starts too low to leave room. When PORTS_TAKEN names a file,
# ports already handed out (listed there) are skipped and the new one is appended, so the
# nodes of one cluster never get the same port before they bind it.
free_port() {
  local p i lo=20000 span=30000 eph
  eph=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true)
  if [[ "$eph" =~ ^[0-9]+$ ]] && [ "$eph" -gt 14000 ]; then
    lo=12000
    span=$((eph - 12000))
  fi
  for ((i = 0; i < 200; i++)); do
    p=$((lo + (RANDOM * 32768 + RANDOM) % span))
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then continue; fi
    if [ -n "${PORTS_TAKEN:-}" ]; then
      if grep -qx "$p" "$PORTS_TAKEN" 2>/dev/null; then continue; fi
      echo "$p" >>"$PORTS_TAKEN"
    fi
    echo "$p"
    return 0
  done
  die "no free TCP port found"
}

# pid_alive PID: the process exists.
pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# read_pid FILE: the pid stored in FILE, nothing when there is none.
read_pid() { if [ -f "$1" ]; then cat "$1"; fi; }

# log_tail DIR [LINES]: the first ERROR lines and the last LINES (80) of DIR/logs/server.log
# and the last 30 lines of DIR/logs/stdout.log, on stderr (for failure reports).
log_tail() {
  local dir=$1 n=${2:-80}
  if [ -f "$dir/logs/server.log" ]; then
    if grep -q ' ERROR ' "$dir/logs/server.log"; then
      echo "----- first ERROR lines of $dir/logs/server.log -----" >&2
      grep -m 3 -A 12 ' ERROR ' "$dir/logs/server.log" >&2 || true
    fi
    echo "----- last $n lines of $dir/logs/server.log -----" >&2
    tail -n "$n" "$dir/logs/server.log" >&2
  fi
  if [ -s "$dir/logs/stdout.log" ]; then
    echo "----- last 30 lines of $dir/logs/stdout.log -----" >&2
    tail -n 30 "$dir/logs/stdout.log" >&2
  fi
}

# wait_started PID DIR PORT TIMEOUT [MARK]: waits until DIR/logs/server.log says "Kafka Server
# started" (only in lines after line MARK, default 0: a restarted node appends to its log) and
# 127.0.0.1:PORT accepts a connection. Returns 0 when ready, 1 when the process exited first,
# 2 after TIMEOUT seconds.
wait_started() {
  local pid=$1 dir=$2 port=$3 timeout=$4 mark=${5:-0} i
  for ((i = 0; i < timeout * 2; i++)); do
    pid_alive "$pid" || return 1
    if tail -n +"$((mark + 1))" "$dir/logs/server.log" 2>/dev/null | grep -q "Kafka Server started" \
        && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  return 2
}

# stop_group PID SECONDS: SIGTERM to PID's process group (or PID alone), SIGKILL to it when it
# still runs after SECONDS. Returns once the process is gone (or was killed).
stop_group() {
  local pid=$1 secs=$2 i
  pid_alive "$pid" || return 0
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < secs * 2; i++)); do
    pid_alive "$pid" || return 0
    sleep 0.5
  done
  log "pid $pid did not stop in ${secs}s: killing its process group"
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  sleep 0.5
}
