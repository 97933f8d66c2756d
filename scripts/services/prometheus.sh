#!/usr/bin/env bash
# The Prometheus tools CI checks the Strimzi example's monitoring with: the JMX exporter agent
# a Strimzi broker runs (metricsConfig: jmxPrometheusExporter) and promtool.
#
#   scripts/services/prometheus.sh agent      fetch io.prometheus.jmx:jmx_prometheus_javaagent
#                                             from Maven Central (cached); print the jar's path
#   scripts/services/prometheus.sh promtool   build promtool from the Go module proxy (pinned,
#                                             cached); print the binary's path
#
# Both go to $TSM_CACHE (default ~/.cache/tsm, outside the clone), so a second run costs
# nothing. Idempotent; an interrupted build leaves no half binary. Nothing runs as a service:
# the agent is loaded by the broker of scripts/test.d/60-broker.sh, promtool is run once by
# scripts/test.d/52-strimzi-examples.sh.
#
# Settings (env): JMX_EXPORTER_VERSION (default 1.0.1, the newest on Maven Central),
# PROMTOOL_VERSION (default v0.316.0: the Go module version of Prometheus 3.16; about 4 min
# to build on 2 cores the first time, most of it downloading and compiling its module).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

JMX_EXPORTER_VERSION="${JMX_EXPORTER_VERSION:-1.0.1}"
PROMTOOL_VERSION="${PROMTOOL_VERSION:-v0.316.0}"
TSM_CACHE="${TSM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tsm}"

cmd_agent() {
  local dir="$TSM_CACHE/jmx-exporter-$JMX_EXPORTER_VERSION"
  local jar="$dir/jmx_prometheus_javaagent-$JMX_EXPORTER_VERSION.jar"
  if [ ! -f "$jar" ]; then
    command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
    mkdir -p "$dir"
    log "fetching io.prometheus.jmx:jmx_prometheus_javaagent:$JMX_EXPORTER_VERSION"
    mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="io.prometheus.jmx:jmx_prometheus_javaagent:$JMX_EXPORTER_VERSION" \
      -DoutputDirectory="$dir" >"$dir/mvn.log" 2>&1 \
      || { tail -30 "$dir/mvn.log" >&2; die "could not fetch jmx_prometheus_javaagent $JMX_EXPORTER_VERSION"; }
    [ -f "$jar" ] || die "$jar missing after the fetch"
  fi
  printf '%s\n' "$jar"
}

cmd_promtool() {
  local dir="$TSM_CACHE/promtool-$PROMTOOL_VERSION" bin
  bin="$dir/promtool"
  if [ ! -x "$bin" ]; then
    mkdir -p "$dir"
    go_install_to "$bin" "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"
  fi
  printf '%s\n' "$bin"
}

case "${1:-}" in
  agent) cmd_agent ;;
  promtool) cmd_promtool ;;
  *) die "usage: $0 agent|promtool" ;;
esac
