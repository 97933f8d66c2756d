#!/usr/bin/env bash
# Checks your Strimzi manifests for tsm (docs/strimzi.md, "Checking your manifests"):
#
#   examples/strimzi/validate/validate.sh [--tsm PATH] [--plugin-dir DIR] [--out DIR] [--print] FILE...
#
# FILE...: the Kafka resource, its KafkaNodePools and, optionally, the Secrets they mount.
# Errors are what would stop tsm from working, warnings what docs/strimzi.md recommends; each
# names the file, the resource and the field's path. Each Kafka resource's plugin
# configuration is written as the brokers get it (rsm.config.<key>=<value>, default under
# examples/strimzi/validate/target/validated/) and checked with `tsm config check`: the binary
# of --tsm or $TSM_BIN, else built here with `cargo build --locked -p tsm-cli`. `--help` for
# all options. Exit 0: no error; 1: errors; 2: usage; 3: `tsm config check` could not run.
#
# Needs java (17+) and mvn; the first run compiles the validator and resolves its class path
# (Maven, about 20 s; again only when its sources change).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
command -v java >/dev/null || { echo "validate.sh: java not found: install a JDK 17+" >&2; exit 2; }
command -v mvn >/dev/null || { echo "validate.sh: mvn not found: install Maven" >&2; exit 2; }

classes="$here/target/classes"
cp_file="$here/target/validate.classpath"
stale=false
if [ ! -f "$cp_file" ] || [ ! -d "$classes" ] || [ "$here/pom.xml" -nt "$cp_file" ] \
   || [ -n "$(find "$here/src/main" -newer "$cp_file" -print -quit)" ]; then
  stale=true
fi
if $stale; then
  echo "validate.sh: compiling the validator (mvn compile)" >&2
  log="$here/target/validate-build.log"
  mkdir -p "$here/target"
  if ! mvn -B -ntp -q -Dstyle.color=never -f "$here/pom.xml" compile dependency:build-classpath \
       -Dmdep.includeScope=runtime -Dmdep.outputFile="$cp_file.tmp" >"$log" 2>&1; then
    cat "$log" >&2
    echo "validate.sh: the validator does not compile (mvn -f $here/pom.xml compile)" >&2
    exit 3
  fi
  mv -f "$cp_file.tmp" "$cp_file"
fi
exec java -Dslf4j.internal.verbosity=ERROR -Dtsm.repo.root="$root" -Dtsm.validate.out="$here/target/validated" \
  -cp "$classes:$(cat "$cp_file")" io.tsm.examples.strimzi.Validate "$@"
