# SPDX-License-Identifier: MIT
# rdmasec-blkd on real rxe, driven by blk_check (a raw client that can also
# misbehave): writes in capsule and pulled through sealed READ grants, on two
# queue pairs, read back through sealed WRITE grants and compared, and found
# byte for byte in the backing file; FUA and FLUSH; 16 READs in flight; a read
# past the end, a misaligned one, a grant too small, an in-capsule write over
# the target's limit and a grant that never comes each get their error
# completion; a read-only identity and a read-only export refuse writes; an
# identity not listed and an unknown export are refused at OPEN; a malformed
# capsule, a duplicate cid, a command before OPEN and a second OPEN each close
# their session while another session goes on; the audit log and the metrics
# file hold it all. A store that fills up answers `no space`, and the session
# goes on. A second target, with room for two sessions and two queues: two
# connections that never start TLS take no session's place; a session granted
# two queues holds their memory from its OPEN on (a second one is refused,
# audited), and gives it back when it closes; its exports come from a file,
# and a SIGHUP that drops the writer from the export's lists closes the
# writer's open session (logged, audited, the client told why). The first target
# renews each queue pair's keys every 2 MiB: the data keys follow (key ids
# change), and a write under a key id it has wiped is refused; it polls its
# sessions before sleeping (--busy-poll-us), and those polls find work. rdmasec-blk
# info opens and closes a session (the sanitizer build too: librdmasec tore a
# connection's protection domain down while the application's regions were
# still registered on it, and leaked it; LeakSanitizer failed the client).
. "$(dirname "$0")/common.bash"

bin=$build/tools
check=$build/tests/blk_check
blkd=$bin/blk/blkd/rdmasec-blkd
[ -x "$check" ] || fail "build blk_check first (missing $check)"
[ -x "$blkd" ] || fail "build rdmasec-blkd first (missing $blkd)"
"$bin/keygen/rdmasec-keygen" --clients 3 "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
subject() { openssl x509 -in "$work/pki/$1.pem" -noout -subject -nameopt RFC2253 | sed 's/^subject=//'; }
writer=$(subject client) reader=$(subject client2) stranger=$(subject client3)
[ -n "$writer" ] && [ "$writer" != "$reader" ] || fail "cannot read the client identities"
mkdir -p "$work/out"

cat >"$work/guest.sh" <<'GUEST'
set -u
blkd=$1 check=$2 work=$3 writer=$4 reader=$5
server=$(fabric ip 1)
# A store smaller than its export: a 1 MiB tmpfs under a 4 MiB file.
mkdir -p /tmp/blk-small && mount -t tmpfs -o size=1m tmpfs /tmp/blk-small || exit 1
# A RAM disk: O_DIRECT I/O the kernel does without waiting, on the target's loop (tmpfs never does it).
ram=$(fabric ram-disk 16) || exit 1
fabric on 1 "$blkd" --certs "$work/pki" --listen "$server" --audit "$work/audit.jsonl" \
	--metrics "$work/metrics.prom" --queue-depth 32 --queues 2 --max-inline 16K --rekey-bytes 2M --busy-poll-us 5000 \
	--export "disk=$work/disk.img,size=16M" --rw "$writer" --ro "$reader" \
	--export "rodisk=$work/ro.img,size=4M,ro" --rw "$writer" \
	--export "ram=$ram" --rw "$writer" \
	--export "small=/tmp/blk-small/small.img,size=4M" --rw "$writer" -v 2>"$work/blkd.log" &
tpid=$!
fabric wait-port 7472 60 || { cat "$work/blkd.log"; exit 1; }
run() { local id=$1 name=$2; shift 2; fabric on 2 "$check" "$work/pki" "$id" "$server" "$(fabric ip 2)" "$@" \
	>"$work/$name.out" 2>&1; echo "$name=$?"; }
run client io disk io "$work/out"
run client2 ro-id disk ro
run client ro-export rodisk ro
run client3 stranger disk open
run client unknown nosuch open
run client hostile disk hostile
run client fill small fill
run client rekey disk rekey
# Reads and writes of 4 KiB (inline in the capsule) and 32 KiB (pulled) on the RAM disk, verified;
# the 4 KiB run asks for a deeper queue than the target grants, and is told.
for bs in 4K 32K; do
	[ $bs = 4K ] && depth=128 || depth=8
	fabric on 2 "$(dirname "$blkd")/../cli/rdmasec-blk" bench --server "$server" --certs "$work/pki" --export ram \
		--source "$(fabric ip 2)" --rw randwrite --bs $bs --queue-depth $depth --size 4M --verify --seed 7 \
		>"$work/ram-$bs.out" 2>&1
	echo "ram-$bs=$?"
done
# rdmasec-blk's own client library, set up and closed (the sanitizer build: nothing of it leaks).
fabric on 2 "$(dirname "$blkd")/../cli/rdmasec-blk" info --server "$server" --certs "$work/pki" --export disk \
	--source "$(fabric ip 2)" >"$work/cli-info.out" 2>&1
echo "cli-info=$?"
kill -TERM $tpid
wait $tpid
echo "blkd=$?"
# 64 KiB transfers at depth 16: 16 slots of 68 KiB a queue, and room for two and a half queues, all of
# it and both sessions for one identity (blk_share.sh tests the shares).
# Its export from a file, which the SIGHUP below changes.
printf '[export disk]\npath = %s\nrw = %s\n' "$work/disk.img" "$writer" >"$work/blkd2.ini"
fabric on 1 "$blkd" --certs "$work/pki" --listen "$server" --audit "$work/audit2.jsonl" --max-sessions 2 \
	--max-sessions-per-identity 2 --memory-limit 2720K --memory-per-identity 2720K --max-transfer 64K \
	--queue-depth 16 --queues 2 -f "$work/blkd2.ini" -v 2>"$work/blkd2.log" &
tpid=$!
fabric wait-port 7472 60 || { cat "$work/blkd2.log"; exit 1; }
exec 3<>"/dev/tcp/$server/7472" 4<>"/dev/tcp/$server/7472"
run client budget disk budget
exec 3<&- 4<&-
# The writer streams 4 KiB writes (at 12 MiB, clear of the blocks compared below); a SIGHUP with only
# the reader in the export's lists ends its session.
opens() { grep -c 'event=open ' "$work/blkd2.log"; }
n0=$(opens)
for _ in $(seq 1 120); do head -c 4096 /dev/zero || break; sleep 0.25; done |
	fabric on 2 "$(dirname "$blkd")/../cli/rdmasec-blk" write --server "$server" --certs "$work/pki" \
		--export disk --source "$(fabric ip 2)" --offset 12582912 >"$work/withdrawn.out" 2>&1 &
wpid=$!
for _ in $(seq 1 300); do [ "$(opens)" -gt "$n0" ] && break; sleep 0.1; done
printf '[export disk]\npath = %s\nro = %s\n' "$work/disk.img" "$reader" >"$work/blkd2.ini"
kill -HUP $tpid
wait $wpid
echo "withdrawn=$?"
kill -TERM $tpid
wait $tpid
echo "blkd2=$?"
GUEST

truncate -s 4M "$work/ro.img"
start=$SECONDS
"$fabric" run --hosts 2 --mem 2048 --timeout 300 -- bash "$work/guest.sh" "$blkd" "$check" "$work" "$writer" \
	"$reader" >"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out"
echo "fabric run: $((SECONDS - start)) s"
for f in io ro-id ro-export stranger unknown hostile fill rekey ram-4K ram-32K cli-info budget withdrawn; do
	echo "--- $f"
	cat "$work/$f.out"
done
echo "--- blkd.log"
tail -n 40 "$work/blkd.log"
echo "--- blkd2.log"
tail -n 20 "$work/blkd2.log"

for f in io ro-id ro-export stranger unknown hostile fill rekey ram-4K ram-32K cli-info blkd budget blkd2; do
	expect_match "$work/run.out" "^$f=0$" "$f did not exit 0"
done
io=$work/io.out
expect_each "$io" "(io)" <<'EOF'
^RESULT open=ok queues=2 queue_depth=16 	OPEN was not granted as asked
^RESULT readback=6 of 6 same \(2 in capsule, 4 pulled\)$	written blocks did not read back the same
^RESULT fua=ok$	a FUA write failed
^RESULT flush=ok$	FLUSH failed
^RESULT inflight=16 of 16$	16 READs in flight did not all complete
^RESULT past-end=out of range$	a read past the end was not refused
^RESULT misaligned=invalid field$	a misaligned read was not refused
^RESULT past-pool=transfer failed$	a read past the end of the client's pool grant was tried
^RESULT inline-over-max=invalid field$	an in-capsule write over max_inline was taken
^RESULT bad-mac=transfer failed$	a pulled write whose data did not authenticate was not refused
^RESULT window-none=invalid field$	a version 4 READ that named no pool window was taken
^RESULT window-rights=transfer failed$	a READ went through a pool window that does not allow the target to write
^RESULT window-after=ok$	the session did not go on through its window
^RESULT version3=ok ok same$	a version 3 client (one pool grant, no windows) was not served
EOF
expect_each "$work/ro-id.out" "(read-only identity)" <<'EOF'
^RESULT open-write=read-only$	OPEN with WRITE was not refused
^RESULT ro-flag=yes$	READ_ONLY was not set
^RESULT ro-write=read-only$	the write was not refused
^RESULT ro-read=ok$	the read failed
EOF
expect_each "$work/ro-export.out" "(read-only export)" <<'EOF'
^RESULT open-write=read-only$	OPEN with WRITE was not refused
^RESULT ro-flag=yes$	READ_ONLY was not set
^RESULT ro-write=read-only$	the write was not refused
^RESULT ro-read=ok$	the read failed
EOF
expect_match "$work/stranger.out" '^RESULT open=access denied$' "an identity not listed was not refused"
expect_match "$work/unknown.out" '^RESULT open=no such export$' "an unknown export was not refused"
expect_each "$work/hostile.out" "" <<'EOF'
^RESULT malformed=closed \(.*protocol violation: malformed command	a malformed capsule did not close its session
^RESULT dup-cid=closed \(.*protocol violation: cid 7 already in flight	a duplicate cid did not close its session
^RESULT old-seq=closed \(.*protocol violation: sequence number 5 after 5	a sequence number used twice did not close its session
^RESULT before-open=closed \(.*protocol violation: message type 0x10 out of turn	a command before OPEN did not close its session
^RESULT second-open=closed \(.*protocol violation: message type 0x01 out of turn	a second OPEN did not close its session
^RESULT survivor=ok ok same$	the other session did not go on
EOF
for bs in 4K 32K; do
	expect_match "$work/ram-$bs.out" '^  errors=0, verify_errors=0$' "$bs I/O on the RAM disk did not verify"
done
expect_match "$work/ram-4K.out" '^rdmasec-blk: the target granted 1 queue of depth 32 \(asked for 1 of depth 128\): the run uses those$' \
	"bench did not say the target granted a shallower queue than asked"
expect_match "$work/ram-4K.out" '^rdmasec-blk: rw=randwrite, bs=4096, iodepth=32, queues=1' "bench did not report the granted depth"
grep -q 'granted' "$work/ram-32K.out" && fail "bench spoke of a grant smaller than asked when it was not"
expect_match "$work/cli-info.out" '^queues: 1$' "rdmasec-blk info did not print what OPEN granted"
expect_match "$work/fill.out" '^RESULT fill=no space ok=[0-3]$' "a full store did not answer no space"
expect_match "$work/fill.out" '^RESULT after-full=ok$' "the session did not survive a full store"
expect_each "$work/rekey.out" "(data keys across rekeys)" <<'EOF'
^RESULT rekey=([0-9]+) of \1 same$	a block did not read back the same across rekeys
^RESULT key-ids=reads ([6-9]|[1-9][0-9]+) writes ([3-9]|[1-9][0-9]+)$	the data keys did not follow the rekeys
^RESULT rekeys=([5-9]|[1-9][0-9]+)$	too few rekeys
^RESULT stale-key=transfer failed$	a write under a wiped key id was taken
^RESULT stale-unchanged=yes$	a write under a wiped key id changed the block
EOF

# Every block written is in the backing file, byte for byte.
n=0
while read -r off len file; do
	cmp -s <(tail -c +$((off + 1)) "$work/disk.img" | head -c "$len") "$file" ||
		fail "the $len bytes written at $off are not in the backing file"
	n=$((n + 1))
done <"$work/out/writes.txt"
[ "$n" = 6 ] || fail "expected 6 writes to compare, found $n"
cmp -s <(head -c 4194304 /dev/zero) "$work/ro.img" || fail "the read-only export's file changed"

audit=$work/audit.jsonl
w=$(printf '%s' "$writer" | sed 's/[.[\*^$]/\\&/g')
expect_each "$audit" "in the audit log" <<EOF
"event":"blk_open".*"peer":"$w".*"export":"disk","mode":"rw","result":"ok"	the writer's OPEN
"event":"blk_open".*"export":"disk","mode":"rw","result":"access denied"	the stranger's refused OPEN
"event":"blk_open".*"export":"rodisk","mode":"rw","result":"read-only"	the refused OPEN of the read-only export
"event":"blk_io".*"peer":"$w".*"export":"disk","op":"write","queue":[01],"cid":1,"offset":1048576,"length":262144,"result":"ok"	a pulled write
"event":"blk_io".*"peer":"$w".*"export":"disk","op":"read",.*"offset":0,"length":4096,"result":"ok"	a read
"event":"blk_io".*"export":"disk","op":"flush",.*"result":"ok"	the FLUSH
"event":"blk_io".*"export":"disk","op":"write",.*"fua":true,"result":"ok"	the FUA write
"event":"blk_io".*"export":"disk","op":"read",.*"offset":16773120,"length":8192,"result":"out of range"	the read past the end
"event":"blk_io".*"export":"rodisk","op":"write",.*"result":"read-only"	the refused write
"event":"blk_violation".*"reason":"malformed command	the malformed capsule
"event":"blk_violation".*"reason":"cid 7 already in flight	the duplicate cid
EOF
# Each record is one whole JSON object on its line.
python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$audit" || fail "the audit log is not JSON lines"

expect_each "$work/metrics.prom" "in the metrics file" <<'EOF'
^rdmasec_blkd_writes_total\{export="disk"\} [1-9]	write count
^rdmasec_blkd_reads_total\{export="disk"\} [1-9]	read count
^rdmasec_blkd_flushes_total\{export="disk"\} [1-9]	flush count
^rdmasec_blkd_errors_total\{export="disk",status="out of range"\} 1$	out-of-range count
^rdmasec_blkd_opens_refused_total\{export="disk"\} 2$	refused OPEN count
^rdmasec_blkd_opens_denied_total\{export="disk"\} 1$	denied OPEN count
^rdmasec_blkd_opens_unknown_export_total 1$	unknown-export count (only the OPEN of nosuch)
^rdmasec_blkd_open_refusals_total\{status="read-only"\} 2$	read-only refusals (an identity and an export)
^rdmasec_blkd_open_refusals_total\{status="access denied"\} 1$	access-denied refusals
^rdmasec_blkd_open_refusals_total\{status="no such export"\} 1$	unknown-export refusals
^rdmasec_blkd_violations_total 5$	violation count
^rdmasec_blkd_sessions\{export="disk"\} 0$	open session gauge back at 0
^rdmasec_blkd_store_nowait_total\{export="ram"\} [1-9]	store I/O on the loop (the RAM disk)
^rdmasec_blkd_store_nowait_total\{export="small"\} 0$	store I/O on the loop on tmpfs (it never does RWF_NOWAIT)
^rdmasec_blkd_busy_polls_total\{result="hit"\} [1-9]	polls before sleeping that found work (--busy-poll-us)
^rdmasec_blkd_busy_polls_total\{result="miss"\} [0-9]+$	polls that did not
EOF
expect_each "$work/budget.out" "(memory_limit)" <<'EOF'
^RESULT first=ok queues=2$	the first session was not granted its two queues (connections before TLS took its place?)
^RESULT second=limit reached$	a second session was granted memory the first holds
^RESULT after-close=ok queues=2$	the memory of closed sessions was not given back
EOF
expect_match "$work/audit2.jsonl" '"event":"blk_open".*"result":"limit reached".*memory_limit reached' \
	"the OPEN refused for memory_limit was not audited with its reason"
# The SIGHUP that dropped the writer from the export's lists closed its open session, and said why.
grep -q '^withdrawn=0$' "$work/run.out" && fail "the writer's stream went on after the SIGHUP dropped it"
expect_match "$work/blkd2.log" "event=peer_revoked .*peer=\"$w\" reason=\"no longer allowed on the export \\(its rw and ro lists\\)\" export=\"disk\"" \
	"the SIGHUP did not close the writer's session"
expect_match "$work/audit2.jsonl" '"event":"blk_close".*"reason":"no longer allowed on the export' \
	"the withdrawn writer's session end was not audited"
expect_match "$work/withdrawn.out" 'no longer allowed on the export' "the writer was not told why its session ended"
echo "blk_target: ok"
