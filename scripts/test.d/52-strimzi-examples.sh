#!/usr/bin/env bash
# Strimzi examples (examples/strimzi/), the Strimzi snippets of the docs and the validator for
# users' manifests. Wall time: 15 to 30 s on 2 cores once the plugin directory, the tsm CLI and
# promtool are built (measured 16 s from a clean examples/strimzi/validate/target: mvn test 8 s
# with 62 tests, validate.sh's first compile 6 s, tsm config check and promtool about 1 s);
# run alone on a fresh clone it first builds the plugin (crates/tsm-jni/build.sh --skip-tests,
# 5 to 20 minutes), the tsm CLI (minutes) and promtool (10 to 30 minutes from the Go module
# proxy, cached outside the clone).
#
# The Maven project examples/strimzi/validate: its main code is the validator
# (validate.sh FILE...: Strimzi's API model read strictly, what tsm requires as errors, what
# docs/strimzi.md recommends as warnings, the plugin config written as the broker gets it and
# checked with `tsm config check`); its tests run the validator on users' variants of
# kafka.yaml (their own image tag, IRSA without static keys, typos, missing keys, ...) and
# with the real tsm CLI (-Dtsm.bin), and check every manifest and doc snippet against the
# plugin's build (Dockerfile layout = the plugin directory build.sh lays out, classPath, the
# class in the jar, key files = the mounted Secret, the KafkaTopic settings, memory outside
# the heap). The tests dump each Kafka resource's rsm.config.* as the broker gets it, and
# `tsm config check` must accept every dump (--skip-key-files: the key files exist only in the
# pod). Then validate.sh itself on the examples, and `promtool check rules` on the alert rules
# (examples/strimzi/prometheus/tsm-alerts.yml; promtool is built from the Go module proxy
# once, scripts/services/prometheus.sh).
# Needs java (17+), mvn and cargo; fails loudly when one is missing.
# The plugin directory comes from step 50 (crates/tsm-jni/build.sh); run alone, this step
# builds it (--skip-tests).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$TSM_ROOT"
command -v java >/dev/null || die "java not found: install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null || die "mvn not found: install Maven (e.g. apt-get install maven)"
command -v cargo >/dev/null || die "cargo not found: install a Rust toolchain"

plugin="$TSM_ROOT/crates/tsm-jni/target/plugin"
if ! compgen -G "$plugin/tsm-kafka-plugin-*.jar" >/dev/null || [ ! -f "$plugin/libtsm_jni.so" ]; then
  log "no plugin directory at $plugin: building it (crates/tsm-jni/build.sh --skip-tests)"
  crates/tsm-jni/build.sh --skip-tests >/dev/null || die "crates/tsm-jni/build.sh failed"
fi

log "building the tsm CLI (cargo build -p tsm-cli)"
cargo build --locked -q -p tsm-cli
TSM="$CARGO_TARGET_DIR/debug/tsm"
[ -x "$TSM" ] || die "no tsm binary at $TSM"

log "validating examples/strimzi/ with Strimzi's API model (examples/strimzi/validate)"
dumps="$TSM_ROOT/examples/strimzi/validate/target/rsm-config"
rm -rf "$dumps"
mvn -B -ntp -Dstyle.color=never -f examples/strimzi/validate/pom.xml test \
  -Dtsm.plugin.dir="$plugin" -Dtsm.rsm.config.dir="$dumps" -Dtsm.bin="$TSM" \
  || die "the Strimzi examples do not validate (reports: examples/strimzi/validate/target/surefire-reports)"

"$TSM" config check --help >/dev/null 2>&1 \
  || die "'$TSM config check' is not available: this step needs the tsm CLI's config check command (exit 0 when every key is known and every value valid)"
shopt -s nullglob
files=("$dumps"/*.properties)
[ ${#files[@]} -gt 0 ] || die "the validation wrote no rsm.config dump under $dumps"
passed=0
failed=0
for f in "${files[@]}"; do
  # The key files are those of a Secret mounted only in the pod: checked for presence, not read.
  if "$TSM" config check --skip-key-files "$f"; then
    passed=$((passed + 1))
  else
    log "FAILED: tsm config check $f"
    failed=$((failed + 1))
  fi
done
echo "tsm config check of the Strimzi rsm configs: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1

# The validator's command line as users run it, on the examples (the examples' one warning,
# static keys and IRSA both shown, is expected; errors or a failed `tsm config check` fail).
log "examples/strimzi/validate/validate.sh on the examples"
examples/strimzi/validate/validate.sh --tsm "$TSM" --out "$TSM_ROOT/examples/strimzi/validate/target/validated" \
  examples/strimzi/kafka.yaml examples/strimzi/secret-key-pairs.yaml examples/strimzi/secret-s3-credentials.yaml \
  || die "examples/strimzi/validate/validate.sh rejects the examples"

# The alert rules parse and their expressions are valid PromQL (promtool from the Go module
# proxy, cached; minutes the first time on a fresh machine). That every metric they use exists
# under that name is checked against a real broker's exporter by 60-broker.sh.
promtool=$(bash scripts/services/prometheus.sh promtool) || die "cannot build promtool"
"$promtool" check rules examples/strimzi/prometheus/tsm-alerts.yml \
  || die "promtool check rules examples/strimzi/prometheus/tsm-alerts.yml failed"
