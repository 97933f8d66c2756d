#!/usr/bin/env bash
# Interop with the real Java plugin (issue 16): Aiven's tiered-storage-for-apache-kafka 1.1.1
# and tsm read and delete each other's segments in ONE store, configured by ONE properties file
# per mode that both plugins get (the Java plugin's full backend class names, key.prefix,
# custom.metadata.fields.include=REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY, a two-pair key ring
# k1,k2 with k2 active, storage.overwrite.enabled stated): modes plain, zstd, aes, zstd-aes;
# backends filesystem and S3 on MinIO. The driver (tests/interop, io.tsm.interop.Interop)
# loads each plugin from its plugin directory through Kafka's ChildFirstClassLoader with the
# thread context class loader set during calls, as a broker does, and three JVM runs share
# the store:
#   run 1, Kafka 4.2.2 classes: the Java plugin copies group J, tsm copies group T; the Java
#          plugin reads T, tsm reads J; the Java plugin deletes T, and tsm no longer finds it;
#   run 2, Kafka 4.4.0 classes (the Java plugin does not load there): tsm reads J, deletes it,
#          copies group T2;
#   run 3, Kafka 4.2.2 classes: the Java plugin no longer finds J, reads T2, deletes it, and
#          tsm no longer finds T2.
# Each group: per mode a compressible segment with a transaction index (encrypted under the
# older pair k1 when the mode encrypts) and an incompressible one without (active pair k2).
# Reads: whole log, ranges within and across chunk boundaries, the last byte, an end past the
# segment, 1 MiB reads from index positions, every index (TRANSACTION of the segment without
# one: RemoteResourceNotFoundException), compared with the segment files (tsm-bench gen, 3
# MiB, chunk.size 256 KiB). The store is listed after run 1 (the Java plugin's 24 objects
# are there) and after run 3 (empty).
#
# Environment:
#   TSM_AIVEN_PLUGIN_DIR   the Java plugin's plugin directory; default
#                          $TSM_ROOT/../shared/aiven-rsm-1.1.1/plugin. Missing: the step is
#                          SKIPPED, saying how to provide it (a failure under CI=true).
#   TSM_INTEROP_BACKENDS   default "filesystem s3"
#   MINIO_PORT, TSM_WORK   as the other steps (MinIO is started unless it runs, then stopped)
# Needs java (17+), mvn, cargo, openssl, curl. The tsm plugin directory comes from step 50
# (crates/tsm-jni/build.sh); run alone, this step builds it (--skip-tests).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$TSM_ROOT/tests/broker/lib.sh"
cd "$TSM_ROOT"
# The Java plugin first: without it the step is SKIPPED (a failure under CI=true), before any build.
need_aiven_plugin
aiven=$AIVEN_PLUGIN_DIR
for c in java mvn cargo openssl curl; do
  command -v "$c" >/dev/null || die "$c not found: this step needs java (17+), mvn, cargo, openssl and curl"
done

plugin="$TSM_ROOT/crates/tsm-jni/target/plugin"
if ! compgen -G "$plugin/tsm-kafka-plugin-*.jar" >/dev/null || [ ! -f "$plugin/libtsm_jni.so" ]; then
  log "no plugin directory at $plugin: building it (crates/tsm-jni/build.sh --skip-tests)"
  crates/tsm-jni/build.sh --skip-tests >/dev/null || die "crates/tsm-jni/build.sh failed"
fi

work="$TSM_WORK/interop"
rm -rf "$work"
mkdir -p "$work"
cleanup() {
  if [ -n "${bucket:-}" ]; then
    curl -sS -o /dev/null --max-time 30 -X DELETE --aws-sigv4 "aws:amz:$TSM_TEST_S3_REGION:s3" \
      --user "$TSM_TEST_S3_ACCESS_KEY:$TSM_TEST_S3_SECRET_KEY" "$TSM_TEST_S3_ENDPOINT/$bucket" || true
  fi
  emulator_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "segment sets (tsm-bench gen, 3 MiB each)"
cargo build --locked -q -p tsm-bench || die "building tsm-bench failed"
"$CARGO_TARGET_DIR/debug/tsm-bench" gen --out "$work/data" --size-mib 3 2>/dev/null || die "tsm-bench gen failed"

log "building the interop driver (tests/interop) and its Kafka 4.2.2 and 4.4.0 class paths"
mvn -B -q -ntp -Dstyle.color=never -f tests/interop/pom.xml package >"$work/build.log" 2>&1 \
  && mvn -B -q -ntp -Dstyle.color=never -f tests/interop/pom.xml dependency:build-classpath@classpath \
    -Dkafka.version=4.4.0 >>"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; die "building tests/interop failed"; }
classes="$TSM_ROOT/tests/interop/target/classes"

gen_keypair "$work/keys" k1
gen_keypair "$work/keys" k2

# write_configs BACKEND ROOT DIR: DIR/<mode>.properties, the rsm.config.* keys both plugins get.
write_configs() {
  local backend=$1 root=$2 dir=$3 mode
  mkdir -p "$dir"
  for mode in plain zstd aes zstd-aes; do
    {
      echo "# $backend, $mode: read by both plugins (prefix stripped, as the broker passes it)"
      echo "rsm.config.chunk.size=262144"
      echo "rsm.config.key.prefix=tsm-interop/$mode/"
      echo "rsm.config.custom.metadata.fields.include=REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY"
      case $mode in zstd | zstd-aes) c=true ;; *) c=false ;; esac
      echo "rsm.config.compression.enabled=$c"
      echo "rsm.config.compression.heuristic.enabled=false"
      case $mode in
        aes | zstd-aes)
          echo "rsm.config.encryption.enabled=true"
          echo "rsm.config.encryption.key.pair.id=k2"
          echo "rsm.config.encryption.key.pairs=k1,k2"
          for k in k1 k2; do
            echo "rsm.config.encryption.key.pairs.$k.public.key.file=$work/keys/$k-public.pem"
            echo "rsm.config.encryption.key.pairs.$k.private.key.file=$work/keys/$k-private.pem"
          done
          ;;
        *) echo "rsm.config.encryption.enabled=false" ;;
      esac
      case $backend in
        filesystem)
          echo "rsm.config.storage.backend.class=io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage"
          echo "rsm.config.storage.root=$root"
          # The Java plugin's default (tsm's is true; tsm always replaces atomically).
          echo "rsm.config.storage.overwrite.enabled=false"
          ;;
        s3)
          echo "rsm.config.storage.backend.class=io.aiven.kafka.tieredstorage.storage.s3.S3Storage"
          echo "rsm.config.storage.s3.bucket.name=$root"
          echo "rsm.config.storage.s3.region=$TSM_TEST_S3_REGION"
          echo "rsm.config.storage.s3.endpoint.url=$TSM_TEST_S3_ENDPOINT"
          echo "rsm.config.storage.s3.path.style.access.enabled=true"
          echo "rsm.config.storage.aws.access.key.id=$TSM_TEST_S3_ACCESS_KEY"
          echo "rsm.config.storage.aws.secret.access.key=$TSM_TEST_S3_SECRET_KEY"
          ;;
      esac
    } >"$dir/$mode.properties"
  done
}

# count_objects BACKEND ROOT: the number of objects in the store.
count_objects() {
  local backend=$1 root=$2 out
  case $backend in
    filesystem) find "$root" -type f | wc -l ;;
    s3)
      out=$(curl -fsS --max-time 30 --aws-sigv4 "aws:amz:$TSM_TEST_S3_REGION:s3" \
        --user "$TSM_TEST_S3_ACCESS_KEY:$TSM_TEST_S3_SECRET_KEY" \
        "$TSM_TEST_S3_ENDPOINT/$root?list-type=2&max-keys=1000") || die "listing bucket $root failed"
      [[ $out == *"<IsTruncated>false</IsTruncated>"* ]] || die "listing bucket $root: truncated or unexpected answer: ${out:0:300}"
      sed -n 's:.*<KeyCount>\([0-9]*\)</KeyCount>.*:\1:p' <<<"$out"
      ;;
  esac
}

# expect_objects BACKEND ROOT N WHEN: the store holds exactly N objects.
expect_objects() {
  local n
  n=$(count_objects "$1" "$2")
  [ "$n" = "$3" ] || die "$1 store $2 $4: $n objects, expected $3"
  log "$1 store $4: $n objects, as expected"
}

# driver KAFKA_VERSION BACKEND STEP...: one JVM run of the interop driver.
driver() {
  local kv=$1 backend=$2
  shift 2
  local cp
  cp="$classes:$(cat "$TSM_ROOT/tests/interop/target/classpath-$kv.txt")"
  java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$cp" io.tsm.interop.Interop \
    --kafka "$kv" --configs "$work/$backend/configs" --data "$work/data" --state "$work/$backend/state" \
    --aiven-plugin "$aiven" --tsm-plugin "$plugin" "$@"
}

failed=()
for backend in ${TSM_INTEROP_BACKENDS:-filesystem s3}; do
  t0=$(date +%s)
  case $backend in
    filesystem) root="$work/filesystem/root"; mkdir -p "$root" ;;
    s3)
      emulator_start s3
      bucket="tsm-interop-$(date +%s)"
      backend_bucket s3 "$bucket"
      root=$bucket
      ;;
    *) die "unknown backend '$backend' in TSM_INTEROP_BACKENDS (filesystem, s3)" ;;
  esac
  write_configs "$backend" "$root" "$work/$backend/configs"
  log "--- $backend: run 1 on Kafka 4.2.2 classes"
  driver 4.2.2 "$backend" copy:aiven:J copy:tsm:T read:aiven:T read:tsm:J delete:aiven:T gone:tsm:T \
    || die "$backend: run 1 (Kafka 4.2.2) failed"
  # 4 modes x 2 segments x (.log, .indexes, .rsm-manifest) of the Java plugin's group J.
  expect_objects "$backend" "$root" 24 "after run 1 (group J)"
  log "--- $backend: run 2 on Kafka 4.4.0 classes (tsm only)"
  driver 4.4.0 "$backend" read:tsm:J delete:tsm:J copy:tsm:T2 || die "$backend: run 2 (Kafka 4.4.0) failed"
  expect_objects "$backend" "$root" 24 "after run 2 (group T2)"
  log "--- $backend: run 3 on Kafka 4.2.2 classes"
  driver 4.2.2 "$backend" gone:aiven:J read:aiven:T2 delete:aiven:T2 gone:tsm:T2 \
    || die "$backend: run 3 (Kafka 4.2.2) failed"
  expect_objects "$backend" "$root" 0 "after run 3"
  log "--- $backend: interop passed in $(($(date +%s) - t0)) s"
done
