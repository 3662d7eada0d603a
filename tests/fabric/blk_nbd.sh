# SPDX-License-Identifier: MIT
# rdmasec-blk's clients on real rxe, one boot, two hosts: rdmasec-blkd serves
# a 64 MiB file on host 1; on host 2
#  - rdmasec-blk info reports the export's size;
#  - rdmasec-blk bench --verify: randwrite of 4 MiB at depth 32 on 2 queues (4 KiB,
#    in-capsule), then randread at depth 32, then 128 KiB sequential writes
#    (pulled through sealed READ grants) read back: all clean; a randread
#    with another seed must report verify errors (the check can fail);
#  - nbdkit with our plugin, the kernel's nbd-client: /dev/nbd0; mkfs.ext4,
#    mount, write a file, umount, drop caches, mount again, read it back
#    identical; fio --ioengine=libaio --direct=1 with verify=crc32c clean;
#  - the disk survives its session: fio with verify=crc32c on /dev/nbd0 while
#    rdmasec-blkd is killed -9 and started again; the plugin opens a new
#    session (the restarted target logs its OPEN) and sends again what was in
#    flight: fio sees no error and verifies clean; so does rdmasec-blk write,
#    streaming 4 MiB from a slow pipe meanwhile: it ends well, says it opened
#    a new session, and the 4 MiB read back the same;
#  - fio's own nbd engine through nbdkit: randwrite with verify=crc32c clean;
#  - reconnect=0, where the plugin offers multi-conn: nbd-client -connections 2
#    makes two sessions, and fio with verify=crc32c over them is clean;
#    one block then changed behind fio's back (rdmasec-blk write): fio's
#    verify_only run must fail;
#  - an export the identity may only read (--ro) and one nobody writes (ro),
#    nbdkit opened to write: the target's `read-only` refusal is in nbdkit's
#    log and the export is served read-only: /dev/nbd1 is read-only, a
#    direct write to it fails with EPERM (not EIO, not a failed attach), a
#    read works; fio's nbd engine's write fails with EPERM.
. "$(dirname "$0")/common.bash"

bin=$build/tools
plugin=$bin/blk/nbdkit/nbdkit-rdmasec-plugin.so
blkd=$bin/blk/blkd/rdmasec-blkd
for f in "$bin/blk/cli/rdmasec-blk" "$plugin" "$blkd"; do
	[ -x "$f" ] || [ -f "$f" ] || fail "build it first (missing $f)"
done
for t in nbdkit nbd-client fio mkfs.ext4; do
	command -v $t >/dev/null || fail "$t is missing (scripts/install-deps installs it)"
done
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
kroot=${RXE_FABRIC_CACHE:-$repo/build/fabric}/kernel/root
# A sanitizer build's plugin runs inside the uninstrumented nbdkit: its runtimes go first.
preload=$(ldd "$plugin" | awk '/lib(asan|ubsan)\.so/ { print $3 }' | paste -sd: -)

cat >"$work/guest.sh" <<'GUEST'
set -u
bin=$1 work=$2 kroot=$3 preload=${4:-}
server=$(fabric ip 1) me=$(fabric ip 2)
# nbdkit itself, with a sanitizer build's runtimes first (its own leaks are not ours to report).
nbdkit=(env ${preload:+LD_PRELOAD=$preload ASAN_OPTIONS=detect_leaks=0} nbdkit)
step() { echo "== $* at $SECONDS s"; }
cd /tmp # fio leaves its verify state files where it runs
modprobe -d "$kroot" nbd nbds_max=2 && modprobe -d "$kroot" ext4 || { echo "modules=failed"; exit 1; }
truncate -s 64M /tmp/disk.img
truncate -s 16M /tmp/roe.img # an export nobody writes is not created
start_target() {
	fabric on 1 "$bin/blk/blkd/rdmasec-blkd" --certs "$work/pki" --listen "$server:7472" \
		--export disk=/tmp/disk.img,size=64M --rw '*' --export rod=/tmp/rod.img,size=16M --ro '*' \
		--export roe=/tmp/roe.img,size=16M,ro --rw '*' 2>>"$work/blkd.log" &
	tpid=$!
	fabric wait-port 7472 30 || { cat "$work/blkd.log"; exit 1; }
}
start_target
blk() { timeout 120 fabric on 2 "$bin/blk/cli/rdmasec-blk" "$1" --server "$server" --certs "$work/pki" --export disk \
	--source "$me" "${@:2}"; }

step info
blk info >"$work/info.out" 2>&1; echo "info=$?"
step bench
blk bench --rw randwrite --bs 4k --queue-depth 32 --queues 2 --size 4M --verify --json >"$work/randwrite.json" 2>"$work/randwrite.err"
echo "randwrite=$?"
blk bench --rw randread --bs 4k --queue-depth 32 --size 4M --verify --json >"$work/randread.json" 2>"$work/randread.err"
echo "randread=$?"
blk bench --rw write --bs 128k --queue-depth 8 --size 4M --verify --seed 3 --json >"$work/write128.json" 2>"$work/write128.err"
echo "write128=$?"
blk bench --rw randread --bs 4k --queue-depth 32 --size 512K --verify --seed 9 --json >"$work/wrongseed.json" 2>"$work/wrongseed.err"
echo "wrongseed=$?"

step nbd
sock=/tmp/blk.sock
fabric on 2 "${nbdkit[@]}" -U "$sock" -P /tmp/nbdkit.pid "$bin/blk/nbdkit/nbdkit-rdmasec-plugin.so" server="$server" \
	certs="$work/pki" export=disk source="$me" queues=2 2>"$work/nbdkit.log"
echo "nbdkit=$?"
nbd-client -unix "$sock" /dev/nbd0 -b 4096 >"$work/nbd-client.out" 2>&1; echo "nbd-client=$?"
mkdir -p /tmp/mnt
head -c 2M /dev/urandom >/tmp/file
mkfs.ext4 -q -F /dev/nbd0 >"$work/mkfs.out" 2>&1; echo "mkfs=$?"
mount /dev/nbd0 /tmp/mnt && cp /tmp/file /tmp/mnt/file && umount /tmp/mnt; echo "write-file=$?"
echo 3 >/proc/sys/vm/drop_caches
mount /dev/nbd0 /tmp/mnt && cmp /tmp/file /tmp/mnt/file; echo "read-back=$?"
umount /tmp/mnt
timeout 120 fio --name=libaio --filename=/dev/nbd0 --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=32 \
	--size=2M --verify=crc32c >"$work/fio-libaio.out" 2>&1
echo "fio-libaio=$?"

step survive
head -c 4M /dev/urandom >/tmp/cli.src
(for i in $(seq 0 63); do dd if=/tmp/cli.src bs=64k skip="$i" count=1 status=none; sleep 0.1; done) |
	blk write --offset 48M >"$work/cli-survive.out" 2>&1 &
cpid=$!
timeout 240 fio --name=survive --filename=/dev/nbd0 --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
	--iodepth=16 --offset=32M --size=16M --verify=crc32c >"$work/fio-survive.out" 2>&1 &
fpid=$!
sleep 2
kill -9 $tpid
wait $tpid 2>/dev/null
echo "== killed at $SECONDS s"
opens=$(grep -c 'event=open ' "$work/blkd.log")
sleep 1
start_target
echo "== started again at $SECONDS s"
wait $fpid; echo "fio-survive=$?"
wait $cpid; echo "cli-survive=$?"
blk read --offset 48M --length 4M 2>"$work/cli-read.err" | cmp - /tmp/cli.src; echo "cli-readback=$?"
echo "reopened: $(($(grep -c 'event=open ' "$work/blkd.log") - opens))"
nbd-client -d /dev/nbd0 >/dev/null 2>&1; echo "nbd-detach=$?"

step fio-nbd
uri="nbd+unix:///?socket=$sock"
job=(--name=nbd --ioengine=nbd --uri="$uri" --rw=randwrite --bs=4k --iodepth=32 --size=2M --verify=crc32c)
timeout 120 fio "${job[@]}" >"$work/fio-nbd.out" 2>&1; echo "fio-nbd=$?"
head -c 4096 /dev/urandom | blk write --offset 4096 >"$work/poke.out" 2>&1; echo "poke=$?"
timeout 120 fio "${job[@]}" --verify_only=1 >"$work/fio-nbd-changed.out" 2>&1; echo "fio-nbd-changed=$?"

step multi-conn
# reconnect=0: the plugin offers multi-conn (no write of one connection is ever sent again behind another's).
fabric on 2 "${nbdkit[@]}" -U /tmp/mc.sock -P /tmp/nbdkit-mc.pid "$bin/blk/nbdkit/nbdkit-rdmasec-plugin.so" \
	server="$server" certs="$work/pki" export=disk source="$me" reconnect=0 2>"$work/nbdkit-mc.log"
before=$(grep -c 'event=open ' "$work/blkd.log")
nbd-client -unix /tmp/mc.sock /dev/nbd1 -b 4096 -connections 2 >"$work/nbd-client-mc.out" 2>&1; echo "nbd-client-mc=$?"
for _ in $(seq 50); do # the target logs an OPEN just after it answers it
	[ "$(grep -c 'event=open ' "$work/blkd.log")" -ge $((before + 2)) ] && break
	sleep 0.1
done
echo "mc-sessions: $(($(grep -c 'event=open ' "$work/blkd.log") - before))"
timeout 120 fio --name=mc --filename=/dev/nbd1 --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=16 \
	--offset=8M --size=2M --verify=crc32c >"$work/fio-mc.out" 2>&1
echo "fio-mc=$?"
nbd-client -d /dev/nbd1 >/dev/null 2>&1
kill -TERM "$(cat /tmp/nbdkit-mc.pid)"

step read-only
# In the foreground: a daemon nbdkit logs to syslog, and the log is what is checked.
for x in rod roe; do
	fabric on 2 "${nbdkit[@]}" -f -U "/tmp/$x.sock" -P "/tmp/nbdkit-$x.pid" "$bin/blk/nbdkit/nbdkit-rdmasec-plugin.so" \
		server="$server" certs="$work/pki" export=$x source="$me" 2>"$work/nbdkit-$x.log" &
	for _ in $(seq 1 100); do [ -S "/tmp/$x.sock" ] && break; sleep 0.1; done
	[ -S "/tmp/$x.sock" ]; echo "nbdkit-$x=$?"
done
nbd-client -unix /tmp/rod.sock /dev/nbd1 -b 4096 >"$work/nbd-client-rod.out" 2>&1; echo "nbd-client-rod=$?"
echo "rod-ro=$(blockdev --getro /dev/nbd1 2>&1)"
head -c 4096 /dev/urandom >/tmp/block
dd if=/tmp/block of=/dev/nbd1 bs=4096 count=1 oflag=direct >"$work/dd-rod-write.out" 2>&1; echo "dd-rod-write=$?"
dd if=/dev/nbd1 of=/dev/null bs=4096 count=1 iflag=direct >"$work/dd-rod-read.out" 2>&1; echo "dd-rod-read=$?"
nbd-client -d /dev/nbd1 >/dev/null 2>&1
timeout 60 fio --name=roe --ioengine=nbd --uri="nbd+unix:///?socket=/tmp/roe.sock" --rw=write --bs=4k --size=64k \
	>"$work/fio-roe.out" 2>&1
echo "fio-roe=$?"
kill -TERM "$(cat /tmp/nbdkit.pid)" "$(cat /tmp/nbdkit-rod.pid)" "$(cat /tmp/nbdkit-roe.pid)"
kill -TERM $tpid
wait $tpid
echo "target=$?"
GUEST

start=$SECONDS
"$fabric" run --hosts 2 --mem 2048 --timeout 400 -- bash "$work/guest.sh" "$bin" "$work" "$kroot" "$preload" \
	>"$work/run.out" 2>&1 || { cat "$work/run.out"; tail -n 20 "$work/blkd.log" "$work/nbdkit.log" 2>/dev/null; fail "fabric run failed"; }
cat "$work/run.out"
echo "fabric run: $((SECONDS - start)) s"
show() { echo "--- $1"; cat "$work/$1" 2>/dev/null; }

expect_match "$work/run.out" '^info=0$' "rdmasec-blk info failed"
expect_match "$work/info.out" '^size: 67108864$' "info does not report the export's 64 MiB"
for run in randwrite randread write128; do
	show $run.json
	show $run.err
	expect_match "$work/run.out" "^$run=0\$" "bench $run failed"
	expect_match "$work/$run.json" '"errors":0,"verify_errors":0,' "bench $run: errors"
	expect_match "$work/$run.json" '"read":\{"ios":[1-9]' "bench $run read nothing back"
done
expect_match "$work/randwrite.json" '"queues":2,' "bench randwrite did not get 2 queues"
expect_match "$work/randwrite.json" '"write":\{"ios":1024,' "bench randwrite did not write each of the 1024 blocks"
expect_match "$work/randread.json" '"read":\{"ios":1024,' "bench randread did not read each of the 1024 blocks"
show wrongseed.json
expect_match "$work/run.out" '^wrongseed=1$' "a verify run with the wrong seed passed"
expect_match "$work/wrongseed.json" '"verify_errors":128,' "the wrong seed did not fail every block"

show nbdkit.log
show nbd-client.out
show fio-libaio.out
for s in nbdkit nbd-client mkfs write-file read-back fio-libaio nbd-detach; do
	expect_match "$work/run.out" "^$s=0\$" "NBD: $s failed"
done
# The target's kill -9 and restart mid-fio: a new session, no error, verify clean.
show fio-survive.out
expect_match "$work/run.out" '^reopened: [1-9]' "the plugin opened no new session after the target restarted"
expect_match "$work/run.out" '^nbd-client-mc=0$' "nbd-client -connections 2 failed on reconnect=0 (multi-conn)"
expect_match "$work/run.out" '^mc-sessions: 2$' "nbd-client -connections 2 (multi-conn) did not make two sessions"
expect_match "$work/run.out" '^fio-mc=0$' "fio with verify over two NBD connections failed"
expect_match "$work/run.out" '^fio-survive=0$' "fio on /dev/nbd0 failed across the target's restart"
grep -Eq 'err= *[1-9]|verify: bad|Input/output error' "$work/fio-survive.out" && fail "fio saw an error across the restart"
show cli-survive.out
expect_match "$work/run.out" '^cli-survive=0$' "rdmasec-blk write failed across the target's restart"
expect_match "$work/cli-survive.out" 'new session' "rdmasec-blk write did not open a new session across the restart"
expect_match "$work/run.out" '^cli-readback=0$' "what rdmasec-blk write streamed across the restart did not read back the same"
show fio-nbd.out
expect_match "$work/run.out" '^fio-nbd=0$' "fio's nbd engine with verify failed"
expect_match "$work/run.out" '^poke=0$' "rdmasec-blk write failed"
show fio-nbd-changed.out
expect_match "$work/run.out" '^fio-nbd-changed=[1-9]' "fio's verify missed a block changed behind its back"
expect_match "$work/fio-nbd-changed.out" 'verify|bad' "fio did not say what failed its verify"

for f in nbdkit-rod.log nbdkit-roe.log nbd-client-rod.out dd-rod-write.out dd-rod-read.out fio-roe.out; do show $f; done
for x in rod roe; do
	expect_match "$work/run.out" "^nbdkit-$x=0\$" "nbdkit for export $x did not start"
	expect_match "$work/nbdkit-$x.log" "refused export \"$x\": read-only: serving it read-only" \
		"nbdkit's log does not say why export $x is read-only"
done
expect_match "$work/run.out" '^nbd-client-rod=0$' "nbd-client did not attach the export the identity may only read"
expect_match "$work/run.out" '^rod-ro=1$' "/dev/nbd1 is not read-only"
expect_match "$work/run.out" '^dd-rod-write=[1-9]' "a write to a read-only export succeeded"
expect_match "$work/dd-rod-write.out" 'Operation not permitted' "a write to a read-only export did not fail with EPERM"
grep -q 'Input/output error' "$work/dd-rod-write.out" && fail "a write to a read-only export failed with EIO"
expect_match "$work/run.out" '^dd-rod-read=0$' "a read of the read-only export failed"
expect_match "$work/run.out" '^fio-roe=[1-9]' "fio wrote to an export nobody writes"
expect_match "$work/fio-roe.out" 'Operation not permitted' "fio's write to an export nobody writes did not fail with EPERM"
expect_match "$work/run.out" '^target=0$' "rdmasec-blkd did not exit cleanly"
echo "blk_nbd: ok"
