#!/usr/bin/env bash
# The Kafka plugin jar (crates/tsm-jni): builds the native library (cargo release) and the jar
# with crates/tsm-jni/build.sh, which runs the JUnit tests against the filesystem backend
# (every RemoteStorageManager method, error mapping, forced native panics, 16 concurrent
# fetchers, close during in-flight fetches, leaked streams, two class loaders), then checks
# the jar: it holds the native library under its platform path and no Kafka/SLF4J classes;
# and the plugin directory (crates/tsm-jni/target/plugin/): the jar beside the same library,
# stripped (no DWARF, under 64 MiB) with a .gnu_debuglink to target/libtsm_jni.so.debug of
# the same build-id, exporting the plugin's JNI entry points but not the test hook
# (NativeBridge.testHook, cargo feature test-hooks: only the dev library build.sh builds for
# NativeHooksTest has it). Needs java (17+), mvn and binutils: fails loudly when they are
# missing.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
command -v java >/dev/null || die "java not found: install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null || die "mvn not found: install Maven (e.g. apt-get install maven)"
command -v jar >/dev/null || die "jar not found: install a full JDK (openjdk-17-jdk-headless)"
command -v readelf >/dev/null || die "readelf not found: install binutils"
command -v nm >/dev/null || die "nm not found: install binutils"

log "building the plugin jar and running its JUnit tests"
if ! jar_path=$(crates/tsm-jni/build.sh | tail -n 1); then
  tail -n 60 crates/tsm-jni/target/test-work/slf4j-test.log 2>/dev/null || true
  die "crates/tsm-jni/build.sh failed (JUnit reports: crates/tsm-jni/target/surefire-reports)"
fi
[ -f "$jar_path" ] || die "build.sh did not print a jar path (got: $jar_path)"
log "jar: $jar_path"

listing=$(jar tf "$jar_path")
grep -qx 'io/tsm/kafka/TsmRemoteStorageManager.class' <<<"$listing" \
  || die "jar lacks io/tsm/kafka/TsmRemoteStorageManager.class"
grep -qx 'io/tsm/kafka/native/linux-x86_64/libtsm_jni.so' <<<"$listing" \
  || die "jar lacks the linux-x86_64 native library"
grep -qx 'io/tsm/kafka/native/linux-x86_64/libtsm_jni.so.sha256' <<<"$listing" \
  || die "jar lacks the native library's SHA-256 (io/tsm/kafka/native/linux-x86_64/libtsm_jni.so.sha256)"
if grep -E '^(org/apache/kafka|org/slf4j|kafka/)' <<<"$listing"; then
  die "jar contains Kafka or SLF4J classes (they must stay provided by the broker)"
fi

plugin=$(dirname "$jar_path")
so="$plugin/libtsm_jni.so"
debug="$TSM_ROOT/crates/tsm-jni/target/libtsm_jni.so.debug"
[ "$plugin" = "$TSM_ROOT/crates/tsm-jni/target/plugin" ] || die "build.sh's jar is not in the plugin directory (got $jar_path)"
[ -f "$so" ] || die "no libtsm_jni.so beside the jar in $plugin"
[ -f "$debug" ] || die "no $debug"
unpacked=$(mktemp -d "${TMPDIR:-/tmp}/tsm-jar-check.XXXXXX")
(cd "$unpacked" && jar xf "$jar_path" io/tsm/kafka/native/linux-x86_64/) || die "cannot unpack $jar_path"
inner="$unpacked/io/tsm/kafka/native/linux-x86_64"
cmp -s "$inner/libtsm_jni.so" "$so" || die "$so is not the library inside the jar"
[ "$(cut -d' ' -f1 "$inner/libtsm_jni.so.sha256")" = "$(sha256sum "$so" | cut -d' ' -f1)" ] \
  || die "the jar's libtsm_jni.so.sha256 does not match $so"
rm -rf "$unpacked"
sections=$(readelf -S -W "$so")
if grep -q ' \.debug_' <<<"$sections"; then die "$so still has DWARF sections (not stripped)"; fi
grep -q ' \.gnu_debuglink ' <<<"$sections" || die "$so has no .gnu_debuglink"
grep -q ' \.symtab ' <<<"$sections" || die "$so lost its symbol table (function names in backtraces)"
grep -q ' \.debug_line ' <<<"$(readelf -S -W "$debug")" || die "$debug has no line tables"
id_so=$(readelf -n "$so" | sed -n 's/^ *Build ID: *//p')
id_debug=$(readelf -n "$debug" | sed -n 's/^ *Build ID: *//p')
[ -n "$id_so" ] && [ "$id_so" = "$id_debug" ] || die "build-ids differ: $so '$id_so', $debug '$id_debug'"
# The shipped library's exported symbols: the entry points NativeBridge declares, minus the
# test hook (a native method that can panic on request has no place on a broker).
exported=$(nm -D --defined-only "$so") || die "nm -D $so failed"
grep -q ' Java_io_tsm_kafka_NativeBridge_liveHandles$' <<<"$exported" \
  || die "$so exports no NativeBridge entry points (nm -D sees no Java_io_tsm_kafka_NativeBridge_liveHandles)"
if grep ' Java_io_tsm_kafka_NativeBridge_testHook$' <<<"$exported"; then
  die "$so exports the test hook NativeBridge.testHook: the shipped library must be built without the cargo feature test-hooks"
fi
so_bytes=$(wc -c <"$so")
[ "$so_bytes" -lt $((64 * 1024 * 1024)) ] || die "$so is $so_bytes bytes: over the 64 MiB budget"
mib() { awk -v b="$(wc -c <"$1")" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
log "sizes: jar $(mib "$jar_path"), libtsm_jni.so $(mib "$so") (build-id $id_so), plugin directory $(du -sh --apparent-size "$plugin" | cut -f1), libtsm_jni.so.debug $(mib "$debug")"
echo "jar check: 3 passed, 0 failed"

# JDK 25 (JEP 472): under --illegal-native-access=deny the plugin loads with
# --enable-native-access=ALL-UNNAMED, and without it fails configure naming that flag
# (NativeAccessProbe, a test class, on the built jar; about 10 s).
jdk25="${TSM_JDK25_HOME:-}"
if [ -z "$jdk25" ]; then
  for d in /usr/lib/jvm/temurin-25-jdk* /usr/lib/jvm/*-25-* /usr/lib/jvm/jdk-25*; do
    [ -x "$d/bin/java" ] && { jdk25=$d; break; }
  done
fi
[ -n "$jdk25" ] && [ -x "$jdk25/bin/java" ] \
  || die "no JDK 25 found (set TSM_JDK25_HOME, or install one under /usr/lib/jvm, e.g. Temurin 25)"
"$jdk25/bin/java" -version 2>&1 | head -n 1 | grep -q '"25' || die "$jdk25 is not a JDK 25"
cp_file="$TSM_ROOT/crates/tsm-jni/target/test-classpath.txt"
mvn -B -ntp -q -f crates/tsm-jni/pom.xml dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile="$cp_file" >&2 || die "mvn dependency:build-classpath failed"
probe_cp="$jar_path:$TSM_ROOT/crates/tsm-jni/target/test-classes:$(cat "$cp_file")"
probe() { "$jdk25/bin/java" --illegal-native-access=deny "$@" -cp "$probe_cp" io.tsm.kafka.NativeAccessProbe 2>&1; }
out=$(probe --enable-native-access=ALL-UNNAMED) || die "JDK 25, deny, with the flag: $out"
grep -qx ok <<<"$out" || die "JDK 25, deny, with the flag: expected ok, got: $out"
if out=$(probe); then die "JDK 25, deny, without the flag: configure succeeded ($out)"; fi
grep -qF 'IllegalCallerException: tsm: this JVM refuses' <<<"$out" && grep -qF -- 'start the broker with --enable-native-access=ALL-UNNAMED' <<<"$out" \
  || die "JDK 25, deny, without the flag: the error does not name the flag: $out"
log "JDK 25 ($jdk25) under --illegal-native-access=deny: loads with --enable-native-access=ALL-UNNAMED; without it configure fails naming the flag"
echo "JDK 25 native access: 2 passed, 0 failed"
