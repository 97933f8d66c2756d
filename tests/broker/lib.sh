# shellcheck shell=bash disable=SC2034  # globals are read by the scripts that source this
# Shared by scripts/test.d/60-broker.sh and demo/run.sh (sourced after scripts/lib.sh):
# building the plugin jar, key pairs, the rsm.config.* keys per backend, and a broker run.

KAFKA_SH="$TSM_ROOT/scripts/services/kafka.sh"
DRIVER="$TSM_ROOT/tests/broker/driver.sh"

# plugin_jar: prints the path of the tsm plugin jar, building it first with the plugin's
# own one-command build (crates/tsm-jni/build.sh, by default with --skip-tests: its JUnit
# tests are a test step of their own; TSM_PLUGIN_BUILD_ARGS overrides). TSM_PLUGIN_JAR=path
# skips the build.
plugin_jar() {
  if [ -n "${TSM_PLUGIN_JAR:-}" ]; then
    [ -f "$TSM_PLUGIN_JAR" ] || die "TSM_PLUGIN_JAR=$TSM_PLUGIN_JAR does not exist"
    echo "$TSM_PLUGIN_JAR"
    return 0
  fi
  local build="$TSM_ROOT/crates/tsm-jni/build.sh" out blog
  [ -f "$build" ] || die "no plugin build command ($build); set TSM_PLUGIN_JAR=path/to/jar"
  log "building the plugin jar: crates/tsm-jni/build.sh ${TSM_PLUGIN_BUILD_ARGS---skip-tests}"
  blog=$(mktemp "${TMPDIR:-/tmp}/tsm-plugin-build.XXXXXX")
  # shellcheck disable=SC2086
  if ! bash "$build" ${TSM_PLUGIN_BUILD_ARGS---skip-tests} >"$blog"; then
    cat "$blog" >&2
    rm -f "$blog"
    die "the plugin build failed: crates/tsm-jni/build.sh (output above)"
  fi
  # The last line is the jar path; Maven may leave colour escapes (ESC[0m) on stdout.
  out=$(tail -n 1 "$blog" | sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
  rm -f "$blog"
  [ -f "$out" ] || die "crates/tsm-jni/build.sh did not print an existing jar path as its last line (got '$out')"
  echo "$out"
}

# gen_keypair DIR ID: an RSA 2048 key pair as PEM (public: X.509 SubjectPublicKeyInfo,
# private: PKCS#8), as the encryption.key.pairs.<id>.*.key.file keys expect.
gen_keypair() {
  local dir=$1 id=$2
  mkdir -p "$dir"
  if [ ! -f "$dir/$id-private.pem" ]; then
    command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/$id-private.pem" 2>/dev/null \
      || die "openssl genpkey failed"
    openssl pkey -in "$dir/$id-private.pem" -pubout -out "$dir/$id-public.pem" 2>/dev/null \
      || die "openssl pkey -pubout failed"
    chmod 600 "$dir/$id-private.pem"
  fi
}

# rsm_config_args BACKEND ROOT COMPRESSION(true|false) ENCRYPTION(true|false) KEYDIR
# Sets the array RSM_ARGS (--rsm-config K=V for kafka.sh start) and REMOTE_STORE (the
# driver's --remote-store). Keys are the Java plugin's (docs/configuration.md).
rsm_config_args() {
  local backend=$1 root=$2 compression=$3 encryption=$4 keydir=$5
  RSM_ARGS=(--rsm-config "chunk.size=${TSM_CHUNK_SIZE:-262144}")
  case $backend in
    filesystem)
      mkdir -p "$root"
      RSM_ARGS+=(--rsm-config storage.backend.class=filesystem --rsm-config "storage.root=$root")
      REMOTE_STORE="filesystem:$root"
      ;;
    *) die "backend '$backend' is not supported by the broker harness yet (supported: filesystem)" ;;
  esac
  RSM_ARGS+=(--rsm-config "compression.enabled=$compression")
  if [ "$encryption" = true ]; then
    gen_keypair "$keydir" k1
    RSM_ARGS+=(
      --rsm-config encryption.enabled=true
      --rsm-config encryption.key.pair.id=k1
      --rsm-config encryption.key.pairs=k1
      --rsm-config "encryption.key.pairs.k1.public.key.file=$keydir/k1-public.pem"
      --rsm-config "encryption.key.pairs.k1.private.key.file=$keydir/k1-private.pem"
    )
  fi
}

# broker_failure_report DIR: what to look at when a run failed.
broker_failure_report() {
  local dir=$1
  bash "$KAFKA_SH" logs --dir "$dir" 120 || true
  if [ -f "$dir/logs/server.log" ]; then
    echo "----- plugin and remote-storage errors in $dir/logs/server.log -----" >&2
    grep -E ' (ERROR|WARN) .*(io\.tsm|RemoteLogManager|RemoteStorage|remote\.storage|Tsm)' \
      "$dir/logs/server.log" | tail -40 >&2 || true
  fi
}

# setup_rsm RSM BACKEND ROOT COMPRESSION ENCRYPTION KEYDIR: everything a broker run needs
# for one remote storage manager. RSM is tsm (the plugin, built if needed) or kafka-local
# (Kafka's LocalTieredStorage from the kafka-storage test jar, to validate the harness; its
# objects are opaque to the driver). Sets PLUGIN_JAR, RSM_CLASS, RSM_ARGS (kafka.sh start
# options), REMOTE_STORE and EXPECT_ARGS (driver options describing the objects).
setup_rsm() {
  local rsm=$1 backend=$2 root=$3 compression=$4 encryption=$5 keydir=$6
  case $rsm in
    tsm)
      PLUGIN_JAR=$(plugin_jar) || return 1
      RSM_CLASS=io.tsm.kafka.TsmRemoteStorageManager
      rsm_config_args "$backend" "$root" "$compression" "$encryption" "$keydir"
      EXPECT_ARGS=(--object-format tsm)
      [ "$compression" = true ] && EXPECT_ARGS+=(--expect-compression)
      [ "$encryption" = true ] && EXPECT_ARGS+=(--expect-encryption --expect-key-id k1)
      ;;
    kafka-local)
      PLUGIN_JAR=$(bash "$KAFKA_SH" install-test-rsm | tail -1) || return 1
      RSM_CLASS=org.apache.kafka.server.log.remote.storage.LocalTieredStorage
      mkdir -p "$root"
      RSM_ARGS=(--rsm-config "dir=$root" --rsm-config delete.on.close=false)
      REMOTE_STORE="filesystem:$root"
      EXPECT_ARGS=(--object-format opaque)
      ;;
    *) die "unknown remote storage manager '$rsm' (tsm or kafka-local)" ;;
  esac
  RSM_ARGS=(--rsm-class "$RSM_CLASS" --rsm-jar "$PLUGIN_JAR" "${RSM_ARGS[@]}")
}
