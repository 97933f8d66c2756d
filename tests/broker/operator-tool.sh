#!/usr/bin/env bash
# The operator tool (`tsm`, crates/tsm-cli, issue 9) on the objects a real broker wrote.
# Run by scripts/test.d/70-cutover.sh after the broker has stopped, with the broker's own
# server.properties (compression + encryption on, key pair k1):
#
#   1. verify: every segment (manifest, DEK, every chunk authenticates and decompresses,
#      batches parse with valid CRCs and increasing offsets, index sizes);
#   2. ls --json, then fetch the largest segment (size = manifest) and its offset index
#      (whole 8-byte entries), inspect it (zstd, key pair k1, chunk count);
#   3. rekey to a second key pair k2: first `--limit 5` (a deterministic partial run), then a
#      run killed with SIGKILL after a few manifests (a real crash), then resumed; the resumed
#      run fails nothing, a third run rewrites nothing (idempotent); the `.log` objects are
#      untouched (filesystem: checksums before/after); verify passes with k1 REMOVED from
#      the ring;
#   4. copy the restored segment back as a new topic's segment (tsm copy), verify it, fetch it
#      back byte-identical;
#   5. delete that copy and one broker-written segment; ls no longer lists them and verify
#      still passes for the rest.
#
# Usage: operator-tool.sh TSM_BIN SERVER_PROPERTIES WORK_DIR KEY_DIR
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
source "$TSM_ROOT/tests/broker/lib.sh"

tsm_bin=$1 props=$2 work=$3 keydir=$4
[ -x "$tsm_bin" ] || die "operator-tool.sh: no tsm binary at $tsm_bin"
[ -f "$props" ] || die "operator-tool.sh: no properties file $props"
mkdir -p "$work"

# tsm with the broker's configuration (plus "$@"), quiet.
tsm() { "$tsm_bin" --config "$props" -q "$@"; }
# The ring {k1, k2}, k1 still active (what an operator configures to rotate).
gen_keypair "$keydir" k2
both=(--set "encryption.key.pairs=k1,k2"
  --set "encryption.key.pairs.k2.public.key.file=$keydir/k2-public.pem"
  --set "encryption.key.pairs.k2.private.key.file=$keydir/k2-private.pem")
# The ring {k2} only: the broker's properties with every k1 line removed (the rotation's end
# state: the old key pair is gone from the configuration).
k2_props="$work/k2-only.properties"
grep -v '^rsm\.config\.encryption\.key\.pair' "$props" >"$k2_props"
cat >>"$k2_props" <<EOF
rsm.config.encryption.key.pair.id=k2
rsm.config.encryption.key.pairs=k2
rsm.config.encryption.key.pairs.k2.public.key.file=$keydir/k2-public.pem
rsm.config.encryption.key.pairs.k2.private.key.file=$keydir/k2-private.pem
EOF
grep -qE 'key\.pairs?\.k1|pair\.id=k1|pairs=.*k1' "$k2_props" && die "$k2_props still names k1"
tsm_k2() { "$tsm_bin" --config "$k2_props" -q "$@"; }
# json_get FILE PYTHON_EXPR: evaluates the expression with `d` = the parsed JSON file.
json_get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
# log_checksums: the .log objects' checksums (filesystem backend only; "" otherwise).
root=$(sed -n 's/^rsm\.config\.storage\.root=//p' "$props")
log_checksums() {
  [ -n "$root" ] || return 0
  find "$root" -name '*.log' -type f -print0 | sort -z | xargs -0 -r sha256sum
}

# --- 1. verify
tsm verify >"$work/verify.txt" 2>&1 \
  || { cat "$work/verify.txt" >&2; die "tsm verify found bad segments in what the broker wrote"; }
log "tsm verify: $(tail -n 1 "$work/verify.txt")"

# --- 2. ls, fetch, inspect
tsm ls --json >"$work/ls.json" || die "tsm ls failed"
count=$(json_get "$work/ls.json" 'len(d["segments"])')
[ "$count" -gt 2 ] || die "tsm ls listed $count segment(s); the scenario tiers dozens"
read -r seg size topic < <(json_get "$work/ls.json" \
  '" ".join(str(x) for x in (lambda s: (s["segmentId"], s["originalSize"], s["topic"]))(max(d["segments"], key=lambda s: s["originalSize"])))')
read -r small < <(json_get "$work/ls.json" 'min(d["segments"], key=lambda s: s["originalSize"])["segmentId"]')
tsm fetch "$seg" -o "$work/restored.log" || die "tsm fetch $seg failed"
got=$(stat -c %s "$work/restored.log")
[ "$got" = "$size" ] || die "tsm fetch $seg restored $got bytes, the manifest says $size"
tsm --json inspect "$seg" >"$work/inspect.json" || die "tsm inspect $seg failed"
[ "$(json_get "$work/inspect.json" 'd["manifest"]["compression"]')" = True ] \
  || die "tsm inspect $seg: compression is not on ($work/inspect.json)"
[ "$(json_get "$work/inspect.json" 'd["manifest"]["keyPairId"]')" = k1 ] \
  || die "tsm inspect $seg: key pair is not k1 ($work/inspect.json)"
[ "$(json_get "$work/inspect.json" 'd["manifest"]["chunkIndex"]["chunks"] > 0')" = True ] \
  || die "tsm inspect $seg: no chunks ($work/inspect.json)"
tsm fetch "$seg" --index offset -o "$work/restored.index" || die "tsm fetch $seg --index offset failed"
# The manifest records the index's stored size (after zstd / AES); the restored offset index
# is whole 8-byte entries (relative offset, position).
offset_size=$(stat -c %s "$work/restored.index")
[ "$offset_size" -gt 0 ] && [ $((offset_size % 8)) = 0 ] \
  || die "tsm fetch $seg --index offset: $offset_size bytes, not whole 8-byte entries"
log "tsm ls: $count segments; fetch + inspect $seg: $got bytes, offset index $offset_size bytes"

# --- 3. rekey k1 -> k2: partial, crashed, resumed, idempotent; then verify without k1
before=$(log_checksums)
tsm "${both[@]}" --json rekey --to k2 --limit 5 >"$work/rekey-1.json" || die "tsm rekey --limit 5 failed"
[ "$(json_get "$work/rekey-1.json" 'd["rewritten"]')" = 5 ] || die "rekey --limit 5 did not rewrite 5 ($work/rekey-1.json)"
# A crash mid-run: SIGKILL once the run has rewritten a few more manifests.
: >"$work/rekey-2.txt"
"$tsm_bin" --config "$props" -q "${both[@]}" rekey --to k2 >"$work/rekey-2.txt" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ "$(grep -c '^rekeyed' "$work/rekey-2.txt")" -ge 3 ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
killed=""
# (stderr of the group hides bash's "Killed" job notice)
{ kill -KILL "$pid" && killed=1; wait "$pid" || true; } 2>/dev/null
if [ -n "$killed" ]; then
  crashed="killed after $(grep -c '^rekeyed' "$work/rekey-2.txt") manifest(s)"
else
  crashed="finished before the kill" # still a valid state; the resume below rewrites 0
fi
tsm "${both[@]}" verify >"$work/verify-mid.txt" 2>&1 \
  || { cat "$work/verify-mid.txt" >&2; die "after a crashed rekey, verify (ring k1,k2) found bad segments"; }
tsm "${both[@]}" --json rekey --to k2 >"$work/rekey-3.json" || die "resumed tsm rekey failed ($work/rekey-3.json)"
[ "$(json_get "$work/rekey-3.json" 'd["failed"]')" = 0 ] || die "resumed rekey failed segments ($work/rekey-3.json)"
resumed=$(json_get "$work/rekey-3.json" 'd["rewritten"]')
tsm "${both[@]}" --json rekey --to k2 >"$work/rekey-4.json" || die "third tsm rekey failed"
[ "$(json_get "$work/rekey-4.json" 'd["rewritten"]')" = 0 ] || die "rekey is not idempotent ($work/rekey-4.json)"
[ "$(log_checksums)" = "$before" ] || die "rekey changed .log objects (it may only rewrite manifests)"
tsm_k2 verify >"$work/verify-k2.txt" 2>&1 \
  || { cat "$work/verify-k2.txt" >&2; die "verify with k1 removed from the ring failed after the rotation"; }
tsm_k2 --json ls >"$work/ls-k2.json" || die "tsm ls (ring k2) failed"
[ "$(json_get "$work/ls-k2.json" 'sorted({s.get("keyPairId") for s in d["segments"]})')" = "['k2']" ] \
  || die "after the rotation not every segment is on k2 ($work/ls-k2.json)"
log "tsm rekey k1 -> k2: 5 (--limit), crash ($crashed), resumed $resumed, then 0; verify without k1: $(tail -n 1 "$work/verify-k2.txt")"

# --- 4. copy the restored segment back under another topic; verify; fetch byte-identical
copydir="$work/copy"
mkdir -p "$copydir"
cp "$work/restored.log" "$copydir/00000000000000000000.log"
cp "$work/restored.index" "$copydir/00000000000000000000.index"
tsm_k2 fetch "$seg" --index timestamp -o "$copydir/00000000000000000000.timeindex" || die "fetch --index timestamp failed"
tsm_k2 --json copy --topic tsm-operator-copy --partition 0 \
  "$copydir/00000000000000000000.log" >"$work/copy.json" || die "tsm copy failed ($work/copy.json)"
copied=$(json_get "$work/copy.json" 'd["segmentId"]')
tsm_k2 verify --topic tsm-operator-copy >"$work/verify-copy.txt" 2>&1 \
  || { cat "$work/verify-copy.txt" >&2; die "tsm verify of the copied segment failed"; }
tsm_k2 fetch "$copied" -o "$work/copied.log" || die "tsm fetch $copied failed"
cmp -s "$work/restored.log" "$work/copied.log" || die "the copied segment $copied does not fetch back byte-identical"
tsm_k2 fetch "$copied" --index timestamp -o "$work/copied.timeindex" || die "fetch $copied --index timestamp failed"
cmp -s "$copydir/00000000000000000000.timeindex" "$work/copied.timeindex" \
  || die "the copied segment's time index does not fetch back byte-identical"
log "tsm copy: $seg ($topic) re-uploaded as $copied, verified, fetched back byte-identical"

# --- 5. delete the copy and one broker-written segment
tsm_k2 --json delete "$copied" >"$work/delete-1.json" || die "tsm delete $copied failed"
tsm_k2 --json delete "$small" >"$work/delete-2.json" || die "tsm delete $small failed"
tsm_k2 --json ls >"$work/ls-after.json" || die "tsm ls after delete failed"
left=$(json_get "$work/ls-after.json" 'len([s for s in d["segments"] if s["segmentId"] in sys.argv[3:]])' "$copied" "$small")
[ "$left" = 0 ] || die "tsm ls still lists a deleted segment ($work/ls-after.json)"
after=$(json_get "$work/ls-after.json" 'len(d["segments"])')
[ "$after" = $((count - 1)) ] || die "tsm ls lists $after segments after deleting one of $count"
if [ -n "$root" ] && find "$root" -name "*$small*" | grep -q .; then
  die "objects of the deleted segment $small remain under $root"
fi
tsm_k2 verify >"$work/verify-end.txt" 2>&1 \
  || { cat "$work/verify-end.txt" >&2; die "verify after delete found bad segments"; }
log "tsm delete: $copied and $small gone; $after segments verify"
