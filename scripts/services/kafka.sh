#!/usr/bin/env bash
# A single-node KRaft Kafka broker with tiered storage, run as a plain process on 127.0.0.1
# from Maven Central jars (no Docker, no tarball). Used by scripts/test.d/60-broker.sh and
# demo/run.sh; every instance lives in its own directory (config, data, logs, pid).
#
#   kafka.sh install                      fetch the broker jars (idempotent, cached)
#   kafka.sh install-test-rsm             also fetch Kafka's own test RSM (LocalTieredStorage)
#   kafka.sh start [options]              format storage if needed, start, wait until ready
#   kafka.sh stop   [--dir DIR]           stop the instance (its whole process group)
#   kafka.sh status [--dir DIR]           "running pid=... bootstrap=..." or "stopped"
#   kafka.sh logs   [--dir DIR] [LINES]   tail of the broker log
#   kafka.sh env    [--dir DIR]           KEY=VALUE lines (bootstrap, JMX port, paths)
#   kafka.sh classpath                    the broker's class path (for tools, e.g. kafka.tools)
#
# start options:
#   --dir DIR              instance directory (default $TSM_WORK/kafka/broker)
#   --port N|auto          client listener port (default 9092; auto = a free port)
#   --controller-port N|auto   KRaft controller port (default 9093)
#   --jmx-port N|auto      JMX (no auth, bound to 127.0.0.1) (default 9999)
#   --fresh                wipe the instance's data and logs first
#   --rsm-class CLASS      remote.log.storage.manager.class.name
#                          (default io.tsm.kafka.TsmRemoteStorageManager)
#   --rsm-jar PATH         a file for the plugin directory (repeatable): the plugin jar, and
#                          libtsm_jni.so beside it; the broker gets
#                          remote.log.storage.manager.class.path=<dir>/plugin/* as in production
#   --plugin-dir DIR       use DIR as the plugin directory as is (no copies, may be read-only):
#                          class.path=DIR/*; instead of --rsm-jar
#   --rsm-config K=V       rsm.config.K=V (repeatable)
#   --config K=V           any broker property, applied last (repeatable)
#   --ready-timeout SECS   (default 120)
#
# Environment: KAFKA_VERSION (default 4.4.0), TSM_KAFKA_CACHE (default
# ~/.cache/tsm/kafka), KAFKA_HEAP_OPTS (default -Xms256m -Xmx1g), KAFKA_TEST_RSM_VERSION
# (kafka-storage test jar version; 4.4.0 publishes none, default 4.3.0), KAFKA_EXTRA_JVM_OPTS
# (appended to the broker's JVM options), KAFKA_JAVA (the broker's java, default `java` on
# the PATH; e.g. a JDK 25's bin/java).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/kafka-common.sh"

KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
LOG4J_VERSION="${LOG4J_VERSION:-2.25.3}"
SLF4J_VERSION="${SLF4J_VERSION:-2.0.17}"
KAFKA_TEST_RSM_VERSION="${KAFKA_TEST_RSM_VERSION:-4.3.0}"
CACHE_ROOT="${TSM_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tsm/kafka}"
KAFKA_HOME="$CACHE_ROOT/$KAFKA_VERSION"
LIBS="$KAFKA_HOME/libs"
TEST_RSM_DIR="$CACHE_ROOT/test-rsm-$KAFKA_TEST_RSM_VERSION"
DEFAULT_DIR="$TSM_WORK/kafka/broker"

# ---------------------------------------------------------------- install

# maven_fetch DEST POM_DEPENDENCIES: copies the runtime closure of the given <dependency>
# elements into DEST with Maven (idempotent: a stamp holds the hash of the request).
maven_fetch() {
  local dest=$1 deps=$2 work stamp want
  want=$(printf '%s' "$deps" | sha256sum | cut -c1-16)
  stamp="$dest/.installed-$want"
  [ -f "$stamp" ] && return 0
  command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
  command -v java >/dev/null || die "java not found (Kafka 4.x needs Java 17+)"
  work=$(mktemp -d "${TMPDIR:-/tmp}/tsm-kafka-fetch.XXXXXX")
  cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.tsm.build</groupId>
  <artifactId>kafka-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$deps
  </dependencies>
</project>
EOF
  log "fetching into $dest with Maven (first time only)"
  rm -rf "$dest.tmp"
  if ! mvn -B -q -f "$work/pom.xml" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dest.tmp" >"$work/mvn.log" 2>&1; then
    tail -40 "$work/mvn.log" >&2
    die "Maven could not fetch the Kafka jars (log above; Maven Central must be reachable)"
  fi
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
  touch "$stamp"
  rm -rf "$work"
}

dep() { # dep GROUP ARTIFACT VERSION [CLASSIFIER]
  printf '    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version>%s</dependency>\n' \
    "$1" "$2" "$3" "${4:+<classifier>$4</classifier>}"
}

cmd_install() {
  mkdir -p "$KAFKA_HOME"
  # slf4j-api first so that Maven's nearest-wins picks 2.x over kafka's declared 1.7.
  maven_fetch "$LIBS" "$(dep org.slf4j slf4j-api "$SLF4J_VERSION")
$(dep org.apache.kafka kafka_2.13 "$KAFKA_VERSION")
$(dep org.apache.kafka kafka-tools "$KAFKA_VERSION")
$(dep org.apache.logging.log4j log4j-slf4j2-impl "$LOG4J_VERSION")
$(dep org.apache.logging.log4j log4j-core "$LOG4J_VERSION")
$(dep org.apache.logging.log4j log4j-1.2-api "$LOG4J_VERSION")"
  ls "$LIBS"/kafka_2.13-"$KAFKA_VERSION".jar >/dev/null 2>&1 || die "no kafka_2.13 jar in $LIBS"
}

# Kafka's own test RemoteStorageManager (LocalTieredStorage, from the kafka-storage test
# jar): validates the harness independently of tsm.
cmd_install_test_rsm() {
  local dest="$TEST_RSM_DIR" want stamp
  want=kafka-storage-$KAFKA_TEST_RSM_VERSION-test.jar
  stamp="$dest/.installed"
  [ -f "$stamp" ] && return 0
  mkdir -p "$dest"
  mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact="org.apache.kafka:kafka-storage:$KAFKA_TEST_RSM_VERSION:jar:test" \
    -DoutputDirectory="$dest" >"$dest/mvn.log" 2>&1 \
    || { tail -30 "$dest/mvn.log" >&2; die "could not fetch $want"; }
  [ -f "$dest/$want" ] || die "$want missing after fetch"
  touch "$stamp"
}

cmd_classpath() { printf '%s/*\n' "$LIBS"; }

# ---------------------------------------------------------------- instance helpers

parse_dir_only() {
  DIR=$DEFAULT_DIR
  ARGS=()
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) DIR=$2; shift 2 ;;
      *) ARGS+=("$1"); shift ;;
    esac
  done
}

# ---------------------------------------------------------------- start / stop

cmd_start() {
  local dir=$DEFAULT_DIR port=9092 cport=9093 jport=9999 fresh=0 timeout=120
  local rsm_class=io.tsm.kafka.TsmRemoteStorageManager
  local plugin_dir=""
  local -a jars=() rsm=() extra=()
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) dir=$2; shift 2 ;;
      --port) port=$2; shift 2 ;;
      --controller-port) cport=$2; shift 2 ;;
      --jmx-port) jport=$2; shift 2 ;;
      --fresh) fresh=1; shift ;;
      --rsm-class) rsm_class=$2; shift 2 ;;
      --rsm-jar) jars+=("$2"); shift 2 ;;
      --plugin-dir) plugin_dir=$2; shift 2 ;;
      --rsm-config) rsm+=("$2"); shift 2 ;;
      --config) extra+=("$2"); shift 2 ;;
      --ready-timeout) timeout=$2; shift 2 ;;
      *) die "kafka.sh start: unknown option $1" ;;
    esac
  done
  cmd_install
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local pid
  pid=$(read_pid "$dir/broker.pid")
  if pid_alive "$pid"; then die "a broker already runs from $dir (pid $pid): kafka.sh stop --dir $dir"; fi
  if [ $fresh = 1 ]; then rm -rf "$dir/data" "$dir/logs" "$dir/plugin"; fi
  mkdir -p "$dir/data" "$dir/logs"
  if [ -n "$plugin_dir" ]; then
    [ ${#jars[@]} -eq 0 ] || die "kafka.sh start: --plugin-dir and --rsm-jar exclude each other"
    [ -d "$plugin_dir" ] || die "plugin directory not found: $plugin_dir"
    plugin_dir=$(cd "$plugin_dir" && pwd)
    ls "$plugin_dir"/*.jar >/dev/null 2>&1 || die "no jar in the plugin directory $plugin_dir"
  else
    plugin_dir="$dir/plugin"
    mkdir -p "$plugin_dir"
    rm -f "$plugin_dir/"*
    for j in "${jars[@]}"; do
      [ -f "$j" ] || die "plugin file not found: $j"
      cp "$j" "$plugin_dir/"
    done
    [ ${#jars[@]} -gt 0 ] || die "kafka.sh start: give the plugin with --rsm-jar PATH or --plugin-dir DIR"
  fi

  # An auto port is free when chosen but another process may bind it before the broker does:
  # then the broker exits with "Address already in use" and the start is retried with new
  # auto ports (at most 3 attempts; explicit ports are never changed).
  local want_port=$port want_cport=$cport want_jport=$jport
  local attempt rc
  for attempt in 1 2 3; do
    port=$want_port cport=$want_cport jport=$want_jport rc=0
    launch_once || rc=$?
    if [ "$rc" -eq 0 ]; then
      log "Kafka $KAFKA_VERSION broker ready on 127.0.0.1:$port (pid $pid, JMX $jport, dir $dir)"
      return 0
    fi
    if [ "$rc" -eq 1 ] && [ "$attempt" -lt 3 ] \
        && [[ "$want_port $want_cport $want_jport" == *auto* ]] \
        && grep -qs "Address already in use" "$dir/logs/server.log" "$dir/logs/stdout.log"; then
      log "an auto port was taken between choice and bind (attempt $attempt): retrying with new ports"
      rm -f "$dir/broker.pid"
      mv "$dir/logs/server.log" "$dir/logs/server.log.bind-failed-$attempt" 2>/dev/null || true
      mv "$dir/logs/stdout.log" "$dir/logs/stdout.log.bind-failed-$attempt" 2>/dev/null || true
      continue
    fi
    log_tail "$dir" 80
    if [ "$rc" -eq 1 ]; then
      rm -f "$dir/broker.pid"
      die "the Kafka broker in $dir exited during startup (log tail above)"
    fi
    cmd_stop --dir "$dir"
    die "the Kafka broker in $dir was not ready within ${timeout}s (log tail above)"
  done
}

# launch_once: one start attempt of cmd_start (uses its locals: dir, ports, plugin, configs):
# picks the auto ports, writes the configs, formats the storage when new, starts the broker
# and waits for it (wait_started's return code).
launch_once() {
  [ "$port" = auto ] && port=$(free_port)
  [ "$cport" = auto ] && cport=$(free_port)
  [ "$jport" = auto ] && jport=$(free_port)
  for p in "$port" "$cport" "$jport"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      die "port $p is already in use on 127.0.0.1 (choose another with --port/--controller-port/--jmx-port or 'auto')"
    fi
  done
  {
    echo "# written by scripts/services/kafka.sh; regenerated on every start"
    echo "process.roles=broker,controller"
    echo "node.id=1"
    echo "controller.quorum.voters=1@127.0.0.1:$cport"
    echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
    echo "controller.listener.names=CONTROLLER"
    echo "inter.broker.listener.name=PLAINTEXT"
    echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    echo "log.dirs=$dir/data"
    echo "num.partitions=1"
    echo "offsets.topic.replication.factor=1"
    echo "transaction.state.log.replication.factor=1"
    echo "transaction.state.log.min.isr=1"
    echo "share.coordinator.state.topic.replication.factor=1"
    echo "share.coordinator.state.topic.min.isr=1"
    echo "group.initial.rebalance.delay.ms=0"
    echo "log.retention.check.interval.ms=1000"
    echo "remote.log.storage.system.enable=true"
    echo "remote.log.storage.manager.class.name=$rsm_class"
    echo "remote.log.storage.manager.class.path=$plugin_dir/*"
    echo "remote.log.metadata.manager.listener.name=PLAINTEXT"
    echo "rlmm.config.remote.log.metadata.topic.replication.factor=1"
    echo "rlmm.config.remote.log.metadata.topic.num.partitions=1"
    echo "rlmm.config.remote.log.metadata.topic.min.isr=1"
    echo "remote.log.manager.task.interval.ms=1000"
    for kv in "${rsm[@]}"; do echo "rsm.config.$kv"; done
    for kv in "${extra[@]}"; do echo "$kv"; done
  } >"$dir/server.properties"

  cat >"$dir/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/logs/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.tsm.name = io.tsm
logger.tsm.level = ${TSM_PLUGIN_LOG_LEVEL:-INFO}
EOF

  if [ ! -f "$dir/data/meta.properties" ]; then
    local cid
    cid=$(java -cp "$LIBS/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
    [ -n "$cid" ] || die "StorageTool random-uuid failed"
    java -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$LIBS/*" \
      kafka.tools.StorageTool format -t "$cid" -c "$dir/server.properties" \
      >"$dir/logs/format.log" 2>&1 \
      || { cat "$dir/logs/format.log" >&2; die "kafka.tools.StorageTool format failed for $dir"; }
  fi

  # The log appends across starts: only lines after this mark say that THIS start is ready.
  local mark
  mark=$(wc -l <"$dir/logs/server.log" 2>/dev/null || echo 0)
  # setsid: the broker gets its own process group, so stop can kill all of it and a
  # Ctrl-C in the calling terminal does not kill it halfway.
  # shellcheck disable=SC2086
  setsid "${KAFKA_JAVA:-java}" ${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g} -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -Dcom.sun.management.jmxremote \
    -Dcom.sun.management.jmxremote.host=127.0.0.1 \
    -Dcom.sun.management.jmxremote.port="$jport" \
    -Dcom.sun.management.jmxremote.rmi.port="$jport" \
    -Dcom.sun.management.jmxremote.authenticate=false \
    -Dcom.sun.management.jmxremote.ssl=false \
    -Djava.rmi.server.hostname=127.0.0.1 \
    ${KAFKA_EXTRA_JVM_OPTS:-} \
    -cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
    >"$dir/logs/stdout.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/broker.pid"
  cat >"$dir/broker.env" <<EOF
KAFKA_BOOTSTRAP=127.0.0.1:$port
KAFKA_CONTROLLER_PORT=$cport
KAFKA_JMX_PORT=$jport
KAFKA_JMX_URL=service:jmx:rmi:///jndi/rmi://127.0.0.1:$jport/jmxrmi
KAFKA_PID=$pid
KAFKA_DIR=$dir
KAFKA_LOG=$dir/logs/server.log
KAFKA_LIBS=$LIBS
KAFKA_VERSION=$KAFKA_VERSION
EOF

  wait_started "$pid" "$dir" "$port" "$timeout" "$mark"
}

cmd_stop() {
  parse_dir_only "$@"
  local pid
  pid=$(read_pid "$DIR/broker.pid")
  stop_group "$pid" 30
  rm -f "$DIR/broker.pid"
  log "Kafka broker in $DIR stopped"
}

cmd_status() {
  parse_dir_only "$@"
  local pid
  pid=$(read_pid "$DIR/broker.pid")
  if pid_alive "$pid"; then
    # shellcheck disable=SC1091
    (source "$DIR/broker.env" && echo "running pid=$pid bootstrap=$KAFKA_BOOTSTRAP jmx=$KAFKA_JMX_PORT dir=$DIR")
  else
    echo "stopped dir=$DIR"
    return 3
  fi
}

cmd_logs() {
  parse_dir_only "$@"
  log_tail "$DIR" "${ARGS[0]:-80}"
}

cmd_env() {
  parse_dir_only "$@"
  [ -f "$DIR/broker.env" ] || die "no broker.env in $DIR (never started)"
  cat "$DIR/broker.env"
}

case "${1:-}" in
  install) shift; cmd_install "$@" ;;
  install-test-rsm) shift; cmd_install; cmd_install_test_rsm; echo "$TEST_RSM_DIR/kafka-storage-$KAFKA_TEST_RSM_VERSION-test.jar" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status "$@" ;;
  logs) shift; cmd_logs "$@" ;;
  env) shift; cmd_env "$@" ;;
  classpath) shift; cmd_classpath ;;
  *) sed -n '2,30p' "$0" >&2; exit 2 ;;
esac
