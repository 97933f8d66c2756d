#!/usr/bin/env bash
# Builds the Kafka plugin jar in one command: cargo release build of the tsm-jni cdylib, then
# Maven (compile against Kafka `provided`, run the JUnit tests, package). Prints the jar path:
#   crates/tsm-jni/target/tsm-kafka-plugin-<version>.jar
#
#   crates/tsm-jni/build.sh               build + JUnit tests + jar
#   crates/tsm-jni/build.sh --skip-tests  build + jar only
# Environment: CARGO_TARGET_DIR (kept if set), TSM_JNI_FEATURES (cargo features, e.g.
# "s3 gcs azure"), TSM_JNI_PROFILE (release | dev; default release), MAVEN_ARGS (extra).
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

native="$here/target/native/io/tsm/kafka/native/$platform"
mkdir -p "$native"
cp "$CARGO_TARGET_DIR/$outdir/$lib" "$native/$lib"

# slf4j-simple opens its test log file (pom.xml) only if the folder exists.
mkdir -p "$here/target/test-work"
mvn_args=(-B -ntp -Dstyle.color=never -f "$here/pom.xml" package)
# Quiet when only packaging; with tests, keep Surefire's summary ("Tests run: ...").
if $skip_tests; then mvn_args+=(-q -DskipTests); fi
echo "[tsm-jni] mvn ${mvn_args[*]} ${MAVEN_ARGS:-}" >&2
# shellcheck disable=SC2086
mvn "${mvn_args[@]}" ${MAVEN_ARGS:-} >&2

version=$(grep -m1 -o "<version>[^<]*</version>" "$here/pom.xml" | sed "s:</\?version>::g")
jar="$here/target/tsm-kafka-plugin-$version.jar"
[ -f "$jar" ] || { echo "build.sh: $jar was not produced" >&2; exit 1; }
printf "\n%s\n" "$jar"
