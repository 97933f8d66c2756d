# shellcheck shell=bash disable=SC2034  # globals are read by the scripts that source this
# Shared by the broker steps of scripts/test.d/ (60, 61, 62, 67, 70, 71) and demo/run.sh
# (sourced after scripts/lib.sh): building the plugin jar and the driver, key pairs, the
# rsm.config.* keys per backend, and a broker run.

KAFKA_SH="$TSM_ROOT/scripts/services/kafka.sh"
DRIVER="$TSM_ROOT/tests/broker/driver.sh"

# build_driver LOG: builds the driver (tests/broker, Maven, incremental) once, its output to
# LOG (printed on failure), and sets TSM_DRIVER_NO_BUILD so the step's later $DRIVER calls
# (and cluster_client) run it without building again.
build_driver() {
  log "building the broker test driver (tests/broker)"
  mkdir -p "$TSM_ROOT/tests/broker/target"
  mvn -B -q -ntp -Dstyle.color=never -f "$TSM_ROOT/tests/broker/pom.xml" -DskipTests package >"$1" 2>&1 \
    || { cat "$1" >&2; die "building tests/broker failed"; }
  export TSM_DRIVER_NO_BUILD=1
}

# cluster_client ARGS...: the driver's `cluster` commands (create-topic, traffic, await-*,
# verify, meters) with a small heap: several run beside the brokers.
cluster_client() {
  TSM_DRIVER_JVM_OPTS="${TSM_CLIENT_JVM_OPTS:--Xmx384m}" bash "$DRIVER" cluster "$@"
}

# plugin_jar: prints the path of the tsm plugin jar, building it first with the plugin's
# own one-command build (crates/tsm-jni/build.sh, by default with --skip-tests: its JUnit
# tests are a test step of their own; TSM_PLUGIN_BUILD_ARGS overrides). TSM_PLUGIN_JAR=path
# skips the build. Arguments: cargo features to link in (s3, gcs, azure), added to
# TSM_JNI_FEATURES (harmless when the build already links them by default). The jar and
# the stripped libtsm_jni.so beside it (build.sh's plugin directory) are copied under
# $TSM_WORK/plugin-jars/ so that a later build in the shared tree cannot replace them under
# a running test: the printed jar's directory is a plugin directory.
plugin_jar() {
  local f feats=""
  # shellcheck disable=SC2086  # a space-separated list
  for f in ${TSM_JNI_FEATURES:-} "$@"; do
    if [ -n "$f" ] && [[ " $feats " != *" $f "* ]]; then feats="${feats:+$feats }$f"; fi
  done
  if [ -n "${TSM_PLUGIN_JAR:-}" ]; then
    [ -f "$TSM_PLUGIN_JAR" ] || die "TSM_PLUGIN_JAR=$TSM_PLUGIN_JAR does not exist"
    echo "$TSM_PLUGIN_JAR"
    return 0
  fi
  local build="$TSM_ROOT/crates/tsm-jni/build.sh" out blog
  [ -f "$build" ] || die "no plugin build command ($build); set TSM_PLUGIN_JAR=path/to/jar"
  log "building the plugin jar: TSM_JNI_FEATURES='$feats' crates/tsm-jni/build.sh ${TSM_PLUGIN_BUILD_ARGS---skip-tests}"
  blog=$(mktemp "${TMPDIR:-/tmp}/tsm-plugin-build.XXXXXX")
  # shellcheck disable=SC2086
  if ! TSM_JNI_FEATURES="$feats" bash "$build" ${TSM_PLUGIN_BUILD_ARGS---skip-tests} >"$blog"; then
    cat "$blog" >&2
    rm -f "$blog"
    die "the plugin build failed: crates/tsm-jni/build.sh (output above)"
  fi
  # The last line is the jar path; Maven may leave colour escapes (ESC[0m) on stdout.
  out=$(tail -n 1 "$blog" | sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
  rm -f "$blog"
  [ -f "$out" ] || die "crates/tsm-jni/build.sh did not print an existing jar path as its last line (got '$out')"
  local keep="$TSM_WORK/plugin-jars/default${feats:+-${feats// /-}}" f
  mkdir -p "$keep"
  # Copy then rename: a broker of another test may map the previous library.
  for f in "$out" "$(dirname "$out")/libtsm_jni.so"; do
    [ -f "$f" ] || continue
    cp "$f" "$keep/.$(basename "$f").tmp" && mv -f "$keep/.$(basename "$f").tmp" "$keep/$(basename "$f")" \
      || die "cannot copy $f to $keep"
  done
  echo "$keep/$(basename "$out")"
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

# ------------------------------------------------------------------ cloud backends
# The cloud backends run against the emulators of scripts/services/ (MinIO, fake-gcs-server,
# Azurite). emulator_start starts the one a backend needs unless it already runs (then it is
# left alone, and emulator_stop leaves it running too: other tests in this tree may use it).
SERVICES="$TSM_ROOT/scripts/services"
EMULATOR_STARTED=""

# backend_feature BACKEND: the tsm-jni cargo feature that links BACKEND ("" for filesystem).
backend_feature() {
  case $1 in
    filesystem) echo "" ;;
    s3 | gcs | azure) echo "$1" ;;
    *) die "unknown backend '$1' (filesystem, s3, gcs, azure)" ;;
  esac
}

# emulator_start BACKEND: the backend's emulator is running afterwards, and its settings
# are in the environment (S3: TSM_TEST_S3_*, AWS_*; GCS: GCS_ENDPOINT; Azure: TSM_TEST_AZURE_*,
# AZURE_STORAGE_KEY, the last two read by the driver's RemoteStore).
emulator_start() {
  local backend=$1
  case $backend in
    filesystem) return 0 ;;
    s3)
      if ! bash "$SERVICES/minio.sh" status 2>/dev/null; then
        bash "$SERVICES/minio.sh" start || die "could not start MinIO (scripts/services/minio.sh start)"
        EMULATOR_STARTED="$EMULATOR_STARTED s3"
      else
        log "MinIO already runs: using it (and leaving it running)"
      fi
      eval "$(bash "$SERVICES/minio.sh" env)"
      export AWS_ACCESS_KEY_ID=$TSM_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$TSM_TEST_S3_SECRET_KEY
      export AWS_REGION=$TSM_TEST_S3_REGION
      ;;
    gcs)
      if ! bash "$SERVICES/fake-gcs.sh" status 2>/dev/null; then
        bash "$SERVICES/fake-gcs.sh" start || die "could not start fake-gcs-server (scripts/services/fake-gcs.sh start)"
        EMULATOR_STARTED="$EMULATOR_STARTED gcs"
      else
        log "fake-gcs-server already runs: using it (and leaving it running)"
      fi
      GCS_ENDPOINT=$(bash "$SERVICES/fake-gcs.sh" endpoint)
      export GCS_ENDPOINT
      ;;
    azure)
      if ! bash "$SERVICES/azurite.sh" status 2>/dev/null; then
        bash "$SERVICES/azurite.sh" start || die "could not start Azurite (scripts/services/azurite.sh start)"
        EMULATOR_STARTED="$EMULATOR_STARTED azure"
      else
        log "Azurite already runs: using it (and leaving it running)"
      fi
      eval "$(bash "$SERVICES/azurite.sh" env)"
      export AZURE_STORAGE_KEY=$TSM_TEST_AZURE_KEY
      ;;
    *) die "unknown backend '$backend' (filesystem, s3, gcs, azure)" ;;
  esac
}

# emulator_stop: stops the emulators emulator_start started (for EXIT traps; never fails).
emulator_stop() {
  local b
  for b in $EMULATOR_STARTED; do
    case $b in
      s3) bash "$SERVICES/minio.sh" stop || true ;;
      gcs) bash "$SERVICES/fake-gcs.sh" stop || true ;;
      azure) bash "$SERVICES/azurite.sh" stop || true ;;
    esac
  done
  EMULATOR_STARTED=""
}

# backend_bucket BACKEND NAME: creates bucket/container NAME (existing: fine). S3 with curl
# --aws-sigv4 (minio.sh has no bucket command), GCS and Azure through their service
# scripts. Needs emulator_start first.
backend_bucket() {
  local backend=$1 name=$2
  case $backend in
    filesystem) ;;
    s3)
      # CreateBucket, SigV4-signed by curl; 409 BucketAlreadyOwnedByYou is fine.
      local code
      code=$(curl -sS -o "$TSM_WORK/s3-create-bucket.out" -w '%{http_code}' --max-time 30 -X PUT \
        --aws-sigv4 "aws:amz:$TSM_TEST_S3_REGION:s3" \
        --user "$TSM_TEST_S3_ACCESS_KEY:$TSM_TEST_S3_SECRET_KEY" "$TSM_TEST_S3_ENDPOINT/$name") \
        || die "cannot reach MinIO at $TSM_TEST_S3_ENDPOINT to create bucket $name"
      if [ "$code" != 200 ] && ! grep -q BucketAlreadyOwnedByYou "$TSM_WORK/s3-create-bucket.out"; then
        die "creating S3 bucket $name in MinIO: HTTP $code $(head -c 300 "$TSM_WORK/s3-create-bucket.out")"
      fi
      log "S3 bucket $name ready"
      ;;
    gcs) bash "$SERVICES/fake-gcs.sh" create-bucket "$name" ;;
    azure) bash "$SERVICES/azurite.sh" container "$name" >/dev/null \
          || die "could not create Azure container $name in Azurite" ;;
  esac
}

# rsm_config_args BACKEND ROOT COMPRESSION(true|false) ENCRYPTION(true|false) KEYDIR
# Sets the array RSM_ARGS (--rsm-config K=V for kafka.sh start) and REMOTE_STORE (the
# driver's --remote-store). Keys are the Java plugin's (docs/configuration.md). ROOT is the
# storage.root directory for filesystem, the bucket (container) name for s3, gcs, azure:
# the emulator must run (emulator_start) and the bucket exist (backend_bucket).
# Small upload units (GCS resumable chunk 256 KiB, Azure block 256 KiB) make 1 MiB segments
# take the multi-chunk / multi-block paths; S3's minimum part (5 MiB) is above a segment.
rsm_config_args() {
  local backend=$1 root=$2 compression=$3 encryption=$4 keydir=$5
  RSM_ARGS=(--rsm-config "chunk.size=${TSM_CHUNK_SIZE:-262144}")
  case $backend in
    filesystem)
      mkdir -p "$root"
      RSM_ARGS+=(--rsm-config storage.backend.class=filesystem --rsm-config "storage.root=$root")
      REMOTE_STORE="filesystem:$root"
      ;;
    s3)
      [ -n "${TSM_TEST_S3_ENDPOINT:-}" ] || die "rsm_config_args s3: run emulator_start s3 first"
      RSM_ARGS+=(
        --rsm-config storage.backend.class=s3
        --rsm-config "storage.s3.bucket.name=$root"
        --rsm-config "storage.s3.region=$TSM_TEST_S3_REGION"
        --rsm-config "storage.s3.endpoint.url=$TSM_TEST_S3_ENDPOINT"
        --rsm-config storage.s3.path.style.access.enabled=true
        --rsm-config "storage.aws.access.key.id=$TSM_TEST_S3_ACCESS_KEY"
        --rsm-config "storage.aws.secret.access.key=$TSM_TEST_S3_SECRET_KEY"
      )
      REMOTE_STORE="s3:$TSM_TEST_S3_ENDPOINT/$root"
      ;;
    gcs)
      [ -n "${GCS_ENDPOINT:-}" ] || die "rsm_config_args gcs: run emulator_start gcs first"
      RSM_ARGS+=(
        --rsm-config storage.backend.class=gcs
        --rsm-config "storage.gcs.bucket.name=$root"
        --rsm-config "storage.gcs.endpoint.url=$GCS_ENDPOINT"
        --rsm-config storage.gcs.resumable.upload.chunk.size=262144
      )
      REMOTE_STORE="gcs:$GCS_ENDPOINT/$root"
      ;;
    azure)
      [ -n "${TSM_TEST_AZURE_ENDPOINT:-}" ] || die "rsm_config_args azure: run emulator_start azure first"
      RSM_ARGS+=(
        --rsm-config storage.backend.class=azure
        --rsm-config "storage.azure.container.name=$root"
        --rsm-config "storage.azure.account.name=$TSM_TEST_AZURE_ACCOUNT"
        --rsm-config "storage.azure.account.key=$TSM_TEST_AZURE_KEY"
        --rsm-config "storage.azure.endpoint.url=$TSM_TEST_AZURE_ENDPOINT"
        --rsm-config storage.azure.upload.block.size=262144
      )
      REMOTE_STORE="azure:$TSM_TEST_AZURE_ENDPOINT/$root"
      ;;
    *) die "unknown backend '$backend' (filesystem, s3, gcs, azure)" ;;
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
      PLUGIN_JAR=$(plugin_jar "$(backend_feature "$backend")") || return 1
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
  local files=(--rsm-jar "$PLUGIN_JAR")
  # The library beside the jar goes into the broker's plugin directory too: loaded in place.
  if [ "$rsm" = tsm ] && [ -f "$(dirname "$PLUGIN_JAR")/libtsm_jni.so" ]; then
    files+=(--rsm-jar "$(dirname "$PLUGIN_JAR")/libtsm_jni.so")
  fi
  RSM_ARGS=(--rsm-class "$RSM_CLASS" "${files[@]}" "${RSM_ARGS[@]}")
}

# use_plugin_dir DIR: rewrites RSM_ARGS (after setup_rsm) so that the broker uses DIR, as
# is, as its plugin directory (kafka.sh start --plugin-dir) instead of copies of the
# --rsm-jar files; DIR must already hold them (e.g. a read-only mount of a copy).
use_plugin_dir() {
  local dir=$1 i
  local -a out=()
  for ((i = 0; i < ${#RSM_ARGS[@]}; i++)); do
    if [ "${RSM_ARGS[i]}" = --rsm-jar ]; then
      [ -f "$dir/$(basename "${RSM_ARGS[i + 1]}")" ] || die "use_plugin_dir: $dir lacks $(basename "${RSM_ARGS[i + 1]}")"
      i=$((i + 1))
    else
      out+=("${RSM_ARGS[i]}")
    fi
  done
  RSM_ARGS=("${out[@]}" --plugin-dir "$dir")
}
