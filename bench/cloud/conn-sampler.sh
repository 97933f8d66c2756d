#!/usr/bin/env bash
# Samples the TCP connections to one local port (the cloud profile's Toxiproxy listener) for
# the benchmark harnesses (bench/README.md, "Cloud profile"): every INTERVAL seconds (default
# 0.05) one line "ACTIVE ESTABLISHED" on stdout, until killed.
#
#   bench/cloud/conn-sampler.sh PORT [INTERVAL]
#
# ESTABLISHED: client sockets connected to 127.0.0.1:PORT (`ss -tin state established
# dport = :PORT`: the plugin's side of each connection, idle pooled ones included).
# ACTIVE: those whose bytes_received or bytes_acked (from `ss -i`, the kernel's tcp_info)
# changed since the previous sample, i.e. connections that moved data in that interval: a
# GET or PUT in flight. The first sample has no previous one and reports ACTIVE 0.
# Both harnesses start it right before their first measured call and stop it after the last
# (crates/tsm-bench/src/probe.rs, bench/jvm/.../StoreProbe.java) and keep the mean and max.
set -euo pipefail
port=${1:?usage: conn-sampler.sh PORT [INTERVAL]}
interval=${2:-0.05}
[[ "$port" =~ ^[0-9]+$ ]] || { echo "conn-sampler.sh: PORT must be a number, not $port" >&2; exit 2; }
command -v ss >/dev/null || { echo "conn-sampler.sh: ss (iproute2) is needed" >&2; exit 2; }
# mawk (Debian's awk) reads a pipe in blocks unless -W interactive: samples would come late.
awk_args=()
if awk -W version 2>&1 | grep -q mawk; then awk_args=(-W interactive); fi
while :; do
  # -H: no header; -i: a tcp_info line (indented) after each socket line.
  ss -Htin state established "( dport = :$port )" 2>/dev/null || true
  echo "--sample--"
  sleep "$interval"
done | awk "${awk_args[@]}" '
  /^--sample--$/ {
    active = 0; n = 0
    for (k in now) {
      n++
      if ((k in prev) && prev[k] != now[k]) active++
    }
    print active, n
    fflush()
    delete prev
    for (k in now) prev[k] = now[k]
    delete now
    next
  }
  /^[^ \t]/ { sock = $3; now[sock] = ""; next }
  {
    r = ""; a = ""
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^bytes_received:/) r = substr($i, 16)
      if ($i ~ /^bytes_acked:/) a = substr($i, 13)
    }
    if (sock != "") now[sock] = r "/" a
  }'
