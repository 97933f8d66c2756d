#!/usr/bin/env bash
# Builds the Kafka plugin in one command: cargo release build of the tsm-jni cdylib, split
# into a stripped library and its debug info (Linux: objcopy), then Maven (compile against
# Kafka `provided`, run the JUnit tests, package), then the plugin directory. Outputs:
#   crates/tsm-jni/target/plugin/                  THE PLUGIN DIRECTORY: the jar and the
#       tsm-kafka-plugin-<version>.jar             stripped libtsm_jni.so side by side; copy it
#       libtsm_jni.so                              whole to the broker (class.path=<dir>/*):
#                                                  the library loads in place, no extraction
#   crates/tsm-jni/target/tsm-kafka-plugin-<version>.jar   the same jar (Maven's output)
#   crates/tsm-jni/target/libtsm_jni.so.debug      DWARF of that build (zlib-compressed; the
#                                                  .so has a .gnu_debuglink to it): keep it per
#                                                  release for gdb / `addr2line -e` on the raw
#                                                  frames of a native panic message
# The jar also carries the library (extracted when it is not beside the jar) and its SHA-256.
# The last line printed is the plugin directory's jar path.
#
#   crates/tsm-jni/build.sh               build + JUnit tests + jar
#   crates/tsm-jni/build.sh --skip-tests  build + jar only
# With tests, a second library is built for NativeHooksTest only: the dev profile (reusing
# the dependencies `cargo test` compiled) with the cargo feature test-hooks, which adds
# NativeBridge.testHook (forced native panics). It stays in $CARGO_TARGET_DIR/debug and
# never goes into the jar or the plugin directory.
# Environment: CARGO_TARGET_DIR (kept if set), TSM_JNI_FEATURES (cargo features, e.g.
# "s3 gcs azure"), TSM_JNI_PROFILE (release | dev; default release), MAVEN_ARGS (extra).
# Needs binutils (objcopy, readelf, nm) on Linux.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
profile="${TSM_JNI_PROFILE:-release}"
skip_tests=false
for a in "$@"; do
  case "$a" in
    --skip-tests) skip_tests=true ;;
    *) echo "usage: $0 [--skip-tests]" >&2; exit 2 ;;
  esac
done
command -v cargo >/dev/null || { echo "build.sh: cargo not found" >&2; exit 1; }
command -v mvn >/dev/null || { echo "build.sh: mvn (Maven) not found" >&2; exit 1; }
command -v java >/dev/null || { echo "build.sh: java not found (Java 17+ needed)" >&2; exit 1; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x86_64; lib=libtsm_jni.so ;;
  Linux-aarch64) platform=linux-aarch64; lib=libtsm_jni.so ;;
  Darwin-arm64) platform=macos-aarch64; lib=libtsm_jni.dylib ;;
  Darwin-x86_64) platform=macos-x86_64; lib=libtsm_jni.dylib ;;
  *) echo "build.sh: unsupported platform $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

features=()
if [ -n "${TSM_JNI_FEATURES:-}" ]; then features=(--features "$TSM_JNI_FEATURES"); fi
echo "[tsm-jni] cargo build --profile $profile -p tsm-jni ${features[*]}" >&2
(cd "$root" && cargo build --profile "$profile" -p tsm-jni "${features[@]}") >&2
outdir=$([ "$profile" = dev ] && echo debug || echo "$profile")

src="$CARGO_TARGET_DIR/$outdir/$lib"
native="$here/target/native/io/tsm/kafka/native/$platform"
debug="$here/target/$lib.debug"
mkdir -p "$native"
size() { if [ -f "$1" ]; then awk -v b="$(wc -c <"$1")" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; else echo "-"; fi; }
sha256() { if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1; }
# Every step writes a temporary file and renames it: a JVM that maps the previous library
# (a test broker) keeps its own inode.
if [[ $platform == linux-* ]]; then
  command -v objcopy >/dev/null && command -v readelf >/dev/null \
    || { echo "build.sh: objcopy/readelf not found (apt-get install binutils)" >&2; exit 1; }
  build_id=$(readelf -n "$src" | sed -n 's/^ *Build ID: *//p')
  [ -n "$build_id" ] || { echo "build.sh: $src has no GNU build-id" >&2; exit 1; }
  stamp="$here/target/native/$lib.build-id"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$build_id" ] || [ ! -f "$native/$lib" ] || [ ! -f "$debug" ]; then
    echo "[tsm-jni] splitting $lib (build-id $build_id): stripped copy + $debug" >&2
    tmp=$(mktemp -d "$here/target/.strip.XXXXXX")
    objcopy --only-keep-debug --compress-debug-sections=zlib "$src" "$tmp/$lib.debug"
    # Keeps .symtab (function names in backtraces); --add-gnu-debuglink records the .debug
    # file's name and CRC for gdb and addr2line.
    objcopy --strip-debug --add-gnu-debuglink="$tmp/$lib.debug" "$src" "$tmp/$lib"
    mv -f "$tmp/$lib.debug" "$debug"
    mv -f "$tmp/$lib" "$native/$lib"
    rmdir "$tmp"
    echo "$build_id" >"$stamp"
  fi
else
  # macOS: shipped as built (dsymutil / strip -S are not wired in).
  cp "$src" "$native/.$lib.tmp" && mv -f "$native/.$lib.tmp" "$native/$lib"
fi
# NativeLoader loads a libtsm_jni beside the jar in place only if it has this digest.
echo "$(sha256 "$native/$lib")  $lib" >"$native/.$lib.sha256.tmp" && mv -f "$native/.$lib.sha256.tmp" "$native/$lib.sha256"

# slf4j-simple opens its test log file (pom.xml) only if the folder exists.
mkdir -p "$here/target/test-work"
mvn_args=(-B -ntp -Dstyle.color=never -f "$here/pom.xml" package)
# Quiet when only packaging; with tests, keep Surefire's summary ("Tests run: ...").
if $skip_tests; then
  mvn_args+=(-q -DskipTests)
else
  hook_features="test-hooks${TSM_JNI_FEATURES:+ $TSM_JNI_FEATURES}"
  echo "[tsm-jni] cargo build -p tsm-jni --features \"$hook_features\" (dev library for NativeHooksTest)" >&2
  (cd "$root" && cargo build -p tsm-jni --features "$hook_features") >&2
  hooks_lib="$CARGO_TARGET_DIR/debug/$lib"
  if [[ $platform == linux-* ]] && ! nm -D --defined-only "$hooks_lib" | grep -q ' Java_io_tsm_kafka_NativeBridge_testHook$'; then
    echo "build.sh: $hooks_lib does not export NativeBridge.testHook (feature test-hooks)" >&2
    exit 1
  fi
  mvn_args+=("-Dtsm.test.hooks.library=$hooks_lib")
fi
echo "[tsm-jni] mvn ${mvn_args[*]} ${MAVEN_ARGS:-}" >&2
# shellcheck disable=SC2086
mvn "${mvn_args[@]}" ${MAVEN_ARGS:-} >&2

version=$(grep -m1 -o "<version>[^<]*</version>" "$here/pom.xml" | sed "s:</\?version>::g")
jar="$here/target/tsm-kafka-plugin-$version.jar"
[ -f "$jar" ] || { echo "build.sh: $jar was not produced" >&2; exit 1; }

# The plugin directory, built aside and swapped in.
plugin="$here/target/plugin"
new=$(mktemp -d "$here/target/.plugin.XXXXXX")
cp "$jar" "$new/"
cp "$native/$lib" "$new/$lib"
chmod 755 "$new"
rm -rf "$plugin.old.$$"
if [ -e "$plugin" ]; then mv "$plugin" "$plugin.old.$$"; fi
mv "$new" "$plugin"
rm -rf "$plugin.old.$$"
echo "[tsm-jni] sizes: jar $(size "$jar"), $lib (stripped) $(size "$plugin/$lib"), $lib.debug $(size "$debug"), unstripped build $(size "$src")" >&2
printf "\nplugin directory (the jar and %s side by side; class.path=%s/*):\n%s\n" "$lib" "$plugin" "$plugin/$(basename "$jar")"
