#!/usr/bin/env bash
# A KRaft Kafka cluster on 127.0.0.1 as plain processes: one dedicated controller (node 0)
# and N brokers (nodes 1..N), each started, stopped or killed on its own, each on the Kafka
# version it is started with (Maven Central jars installed by scripts/services/kafka.sh
# install, cached per version). Used by scripts/test.d/67-cluster.sh. A cluster lives in one
# directory: cluster.env (cluster id, ports), and per node <dir>/node-<id>/ with
# server.properties, log4j2.properties, data/, logs/server.log, node.pid, node.env.
#
#   kafka-cluster.sh init --dir DIR [--brokers N]      cluster id and free ports (idempotent)
#   kafka-cluster.sh start ID --dir DIR [options]      format the node if needed, start it,
#                                                      wait until it is ready
#   kafka-cluster.sh stop ID --dir DIR                 SIGTERM (a broker shuts down in a
#                                                      controlled way), wait, SIGKILL after 60 s
#   kafka-cluster.sh kill ID --dir DIR                 SIGKILL, no shutdown
#   kafka-cluster.sh stop-all --dir DIR                brokers, then the controller
#   kafka-cluster.sh env ID --dir DIR                  the node's KEY=VALUE lines
#   kafka-cluster.sh logs ID --dir DIR [LINES]         first ERROR lines and the log tail
#   kafka-cluster.sh bootstrap --dir DIR               host:port,... of every broker
#
# start options (a broker; the controller takes --version and --config only):
#   --version V            Kafka version (default $KAFKA_VERSION, else 4.4.0)
#   --rsm-class CLASS      remote.log.storage.manager.class.name
#   --plugin-dir DIR       remote.log.storage.manager.class.path=DIR/* (DIR as is)
#   --rsm-config K=V       rsm.config.K=V (repeatable)
#   --config K=V           any property, applied last (repeatable)
#   --ready-timeout SECS   (default 120)
# Every node keeps its data across restarts (a restart with another --version or plugin
# rewrites server.properties only). Environment: KAFKA_CLUSTER_HEAP (default -Xms128m
# -Xmx384m), KAFKA_EXTRA_JVM_OPTS, TSM_KAFKA_CACHE (as kafka.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/kafka-common.sh"

KAFKA_SH="$(dirname "${BASH_SOURCE[0]}")/kafka.sh"
CACHE_ROOT="${TSM_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tsm/kafka}"

# load_cluster DIR: sources DIR/cluster.env (CLUSTER_ID, BROKERS, CONTROLLER_PORT, PORT_<id>,
# JMX_<id>).
load_cluster() {
  [ -f "$1/cluster.env" ] || die "no cluster in $1 (kafka-cluster.sh init --dir $1 first)"
  # shellcheck disable=SC1091
  source "$1/cluster.env"
}

cmd_init() {
  local dir="" brokers=3
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) dir=$2; shift 2 ;;
      --brokers) brokers=$2; shift 2 ;;
      *) die "kafka-cluster.sh init: unknown option $1" ;;
    esac
  done
  [ -n "$dir" ] || die "kafka-cluster.sh init: --dir is required"
  mkdir -p "$dir"
  [ -f "$dir/cluster.env" ] && return 0
  PORTS_TAKEN="$dir/.ports"
  : >"$PORTS_TAKEN"
  KAFKA_VERSION=${KAFKA_VERSION:-4.4.0} bash "$KAFKA_SH" install
  local cid i
  cid=$(java -cp "$CACHE_ROOT/${KAFKA_VERSION:-4.4.0}/libs/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
  [ -n "$cid" ] || die "StorageTool random-uuid failed"
  {
    echo "CLUSTER_ID=$cid"
    echo "BROKERS=$brokers"
    echo "CONTROLLER_PORT=$(free_port)"
    echo "JMX_0=$(free_port)"
    for ((i = 1; i <= brokers; i++)); do
      echo "PORT_$i=$(free_port)"
      echo "JMX_$i=$(free_port)"
    done
  } >"$dir/cluster.env.tmp"
  mv "$dir/cluster.env.tmp" "$dir/cluster.env"
  log "cluster $cid in $dir: controller + $brokers brokers"
}

cmd_bootstrap() {
  local i out=""
  load_cluster "$1"
  for ((i = 1; i <= BROKERS; i++)); do
    local v="PORT_$i"
    out="${out:+$out,}127.0.0.1:${!v}"
  done
  echo "$out"
}

node_dir() { echo "$1/node-$2"; }

# write_config ID NODEDIR: server.properties for node ID (0 = controller).
write_config() {
  local id=$1 nd=$2
  {
    echo "# written by scripts/services/kafka-cluster.sh; regenerated on every start"
    echo "node.id=$id"
    echo "controller.quorum.voters=0@127.0.0.1:$CONTROLLER_PORT"
    echo "controller.listener.names=CONTROLLER"
    echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    echo "log.dirs=$nd/data"
    # The controller validates topic configs (remote.storage.enable needs this).
    echo "remote.log.storage.system.enable=true"
    if [ "$id" = 0 ]; then
      echo "process.roles=controller"
      echo "listeners=CONTROLLER://127.0.0.1:$CONTROLLER_PORT"
    else
      local p="PORT_$id"
      echo "process.roles=broker"
      echo "listeners=PLAINTEXT://127.0.0.1:${!p}"
      echo "advertised.listeners=PLAINTEXT://127.0.0.1:${!p}"
      echo "inter.broker.listener.name=PLAINTEXT"
      echo "num.network.threads=2"
      echo "num.io.threads=4"
      echo "num.replica.fetchers=1"
      echo "default.replication.factor=$BROKERS"
      echo "min.insync.replicas=2"
      echo "offsets.topic.replication.factor=$BROKERS"
      echo "offsets.topic.num.partitions=3"
      echo "transaction.state.log.replication.factor=$BROKERS"
      echo "transaction.state.log.min.isr=2"
      echo "transaction.state.log.num.partitions=3"
      echo "share.coordinator.state.topic.replication.factor=$BROKERS"
      echo "share.coordinator.state.topic.min.isr=2"
      echo "group.initial.rebalance.delay.ms=0"
      echo "log.retention.check.interval.ms=1000"
      echo "remote.log.storage.manager.class.name=$RSM_CLASS"
      echo "remote.log.storage.manager.class.path=$PLUGIN_DIR/*"
      echo "remote.log.metadata.manager.listener.name=PLAINTEXT"
      echo "rlmm.config.remote.log.metadata.topic.replication.factor=$BROKERS"
      echo "rlmm.config.remote.log.metadata.topic.num.partitions=3"
      echo "rlmm.config.remote.log.metadata.topic.min.isr=2"
      echo "remote.log.manager.task.interval.ms=1000"
      for kv in "${RSM[@]}"; do echo "rsm.config.$kv"; done
    fi
    for kv in "${EXTRA[@]}"; do echo "$kv"; done
  } >"$nd/server.properties"
  cat >"$nd/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $nd/logs/server.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.tsm.name = io.tsm
logger.tsm.level = ${TSM_PLUGIN_LOG_LEVEL:-INFO}
EOF
}

cmd_start() {
  local id=$1 dir="" version=${KAFKA_VERSION:-4.4.0} timeout=120
  shift
  RSM_CLASS="" PLUGIN_DIR="" RSM=() EXTRA=()
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) dir=$2; shift 2 ;;
      --version) version=$2; shift 2 ;;
      --rsm-class) RSM_CLASS=$2; shift 2 ;;
      --plugin-dir) PLUGIN_DIR=$2; shift 2 ;;
      --rsm-config) RSM+=("$2"); shift 2 ;;
      --config) EXTRA+=("$2"); shift 2 ;;
      --ready-timeout) timeout=$2; shift 2 ;;
      *) die "kafka-cluster.sh start: unknown option $1" ;;
    esac
  done
  [ -n "$dir" ] || die "kafka-cluster.sh start: --dir is required"
  load_cluster "$dir"
  [[ $id =~ ^[0-9]+$ ]] && [ "$id" -le "$BROKERS" ] || die "kafka-cluster.sh start: node id '$id' is not 0..$BROKERS"
  if [ "$id" != 0 ]; then
    [ -n "$RSM_CLASS" ] || die "kafka-cluster.sh start $id: --rsm-class is required for a broker"
    [ -d "$PLUGIN_DIR" ] || die "kafka-cluster.sh start $id: plugin directory '$PLUGIN_DIR' not found"
    ls "$PLUGIN_DIR"/*.jar >/dev/null 2>&1 || die "no jar in the plugin directory $PLUGIN_DIR"
  fi
  KAFKA_VERSION=$version bash "$KAFKA_SH" install
  local libs="$CACHE_ROOT/$version/libs" nd pid
  nd=$(node_dir "$dir" "$id")
  mkdir -p "$nd/data" "$nd/logs"
  pid=$(read_pid "$nd/node.pid")
  if pid_alive "$pid"; then die "node $id already runs (pid $pid): kafka-cluster.sh stop $id --dir $dir"; fi
  write_config "$id" "$nd"
  if [ ! -f "$nd/data/meta.properties" ]; then
    java -Dlog4j2.configurationFile="$nd/log4j2.properties" -cp "$libs/*" \
      kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$nd/server.properties" \
      >"$nd/logs/format.log" 2>&1 \
      || { cat "$nd/logs/format.log" >&2; die "kafka.tools.StorageTool format failed for node $id"; }
  fi
  local jmx="JMX_$id" mark
  mark=$(wc -l <"$nd/logs/server.log" 2>/dev/null || echo 0)
  echo "----- $(date -u +%FT%TZ) start: Kafka $version ${RSM_CLASS:+rsm $RSM_CLASS} -----" >>"$nd/logs/stdout.log"
  # setsid: its own process group, so stop/kill reach all of it.
  # shellcheck disable=SC2086
  setsid java ${KAFKA_CLUSTER_HEAP:--Xms128m -Xmx384m} -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$nd/log4j2.properties" \
    -Dcom.sun.management.jmxremote \
    -Dcom.sun.management.jmxremote.host=127.0.0.1 \
    -Dcom.sun.management.jmxremote.port="${!jmx}" \
    -Dcom.sun.management.jmxremote.rmi.port="${!jmx}" \
    -Dcom.sun.management.jmxremote.authenticate=false \
    -Dcom.sun.management.jmxremote.ssl=false \
    -Djava.rmi.server.hostname=127.0.0.1 \
    ${KAFKA_EXTRA_JVM_OPTS:-} \
    -cp "$libs/*" kafka.Kafka "$nd/server.properties" \
    >>"$nd/logs/stdout.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$nd/node.pid"
  local port="PORT_$id"
  cat >"$nd/node.env" <<EOF
NODE_ID=$id
NODE_PID=$pid
NODE_DIR=$nd
NODE_LOG=$nd/logs/server.log
NODE_VERSION=$version
NODE_RSM_CLASS=$RSM_CLASS
NODE_JMX_URL=service:jmx:rmi:///jndi/rmi://127.0.0.1:${!jmx}/jmxrmi
NODE_BOOTSTRAP=127.0.0.1:${!port:-$CONTROLLER_PORT}
KAFKA_LIBS=$libs
EOF
  local rc=0 listen=${!port:-$CONTROLLER_PORT}
  wait_started "$pid" "$nd" "$listen" "$timeout" "$mark" || rc=$?
  if [ "$rc" -eq 0 ]; then
    log "Kafka $version node $id ready on 127.0.0.1:$listen (pid $pid, dir $nd)"
    return 0
  fi
  log_tail "$nd" 80
  if [ "$rc" -eq 1 ]; then
    rm -f "$nd/node.pid"
    die "Kafka node $id exited during startup (log tail above)"
  fi
  cmd_stop "$id" --dir "$dir"
  die "Kafka node $id was not ready within ${timeout}s (log tail above)"
}

# parse_node ID --dir DIR: sets ND (the node directory).
parse_node() {
  local id=$1 dir=""
  shift
  ARGS=()
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) dir=$2; shift 2 ;;
      *) ARGS+=("$1"); shift ;;
    esac
  done
  [ -n "$dir" ] || die "kafka-cluster.sh: --dir is required"
  ND=$(node_dir "$dir" "$id")
}

cmd_stop() {
  parse_node "$@"
  local pid
  pid=$(read_pid "$ND/node.pid")
  stop_group "$pid" 60
  rm -f "$ND/node.pid"
  log "Kafka node $1 stopped"
}

cmd_kill() {
  parse_node "$@"
  local pid i
  pid=$(read_pid "$ND/node.pid")
  pid_alive "$pid" || die "kafka-cluster.sh kill $1: the node does not run"
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 60; i++)); do
    pid_alive "$pid" || break
    sleep 0.5
  done
  rm -f "$ND/node.pid"
  log "Kafka node $1 killed (SIGKILL, pid $pid)"
}

cmd_stop_all() {
  local dir="" i
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) dir=$2; shift 2 ;;
      *) die "kafka-cluster.sh stop-all: unknown option $1" ;;
    esac
  done
  [ -f "$dir/cluster.env" ] || return 0
  load_cluster "$dir"
  for ((i = BROKERS; i >= 1; i--)); do cmd_stop "$i" --dir "$dir" || true; done
  cmd_stop 0 --dir "$dir" || true
}

case "${1:-}" in
  init) shift; cmd_init "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  kill) shift; cmd_kill "$@" ;;
  stop-all) shift; cmd_stop_all "$@" ;;
  env) shift; parse_node "$@"; cat "$ND/node.env" ;;
  logs) shift; parse_node "$@"; log_tail "$ND" "${ARGS[0]:-80}" ;;
  bootstrap) shift; [ "${1:-}" = --dir ] || die "kafka-cluster.sh bootstrap --dir DIR"; cmd_bootstrap "$2" ;;
  *) sed -n '2,28p' "$0" >&2; exit 2 ;;
esac
