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
#  - fio's own nbd engine through nbdkit: randwrite with verify=crc32c clean;
#    one block then changed behind fio's back (rdmasec-blk write): fio's
#    verify_only run must fail.
. "$(dirname "$0")/common.bash"

bin=$build/tools
plugin=$bin/blk/nbdkit/nbdkit-rdmasec-plugin.so
blkd=$bin/blk/target/rdmasec-blkd
for f in "$bin/blk/cli/rdmasec-blk" "$plugin" "$blkd"; do
	[ -x "$f" ] || [ -f "$f" ] || fail "build it first (missing $f)"
done
for t in nbdkit nbd-client fio mkfs.ext4; do
	command -v $t >/dev/null || fail "$t is missing (scripts/install-deps installs it)"
done
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"
kroot=${RXE_FABRIC_CACHE:-$repo/build/fabric}/kernel/root

cat >"$work/guest.sh" <<'GUEST'
set -u
bin=$1 work=$2 kroot=$3
server=$(fabric ip 1) me=$(fabric ip 2)
step() { echo "== $* at $SECONDS s"; }
cd /tmp # fio leaves its verify state files where it runs
modprobe -d "$kroot" nbd nbds_max=2 && modprobe -d "$kroot" ext4 || { echo "modules=failed"; exit 1; }
truncate -s 64M /tmp/disk.img
fabric on 1 "$bin/blk/target/rdmasec-blkd" --certs "$work/pki" --listen "$server:7472" \
	--export disk=/tmp/disk.img,size=64M --rw '*' 2>"$work/blkd.log" &
tpid=$!
fabric wait-port 7472 30 || { cat "$work/blkd.log"; exit 1; }
blk() { timeout 120 fabric on 2 "$bin/blk/cli/rdmasec-blk" "$1" --server "$server" --certs "$work/pki" --export disk \
	--source "$me" "${@:2}"; }

step info
blk info >"$work/info.out" 2>&1; echo "info=$?"
step bench
blk bench --rw randwrite --bs 4k --iodepth 32 --queues 2 --size 4M --verify --json >"$work/randwrite.json" 2>"$work/randwrite.err"
echo "randwrite=$?"
blk bench --rw randread --bs 4k --iodepth 32 --size 4M --verify --json >"$work/randread.json" 2>"$work/randread.err"
echo "randread=$?"
blk bench --rw write --bs 128k --iodepth 8 --size 4M --verify --seed 3 --json >"$work/write128.json" 2>"$work/write128.err"
echo "write128=$?"
blk bench --rw randread --bs 4k --iodepth 32 --size 512K --verify --seed 9 --json >"$work/wrongseed.json" 2>"$work/wrongseed.err"
echo "wrongseed=$?"

step nbd
sock=/tmp/blk.sock
fabric on 2 nbdkit -U "$sock" -P /tmp/nbdkit.pid "$bin/blk/nbdkit/nbdkit-rdmasec-plugin.so" server="$server" \
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
nbd-client -d /dev/nbd0 >/dev/null 2>&1; echo "nbd-detach=$?"

step fio-nbd
uri="nbd+unix:///?socket=$sock"
job=(--name=nbd --ioengine=nbd --uri="$uri" --rw=randwrite --bs=4k --iodepth=32 --size=2M --verify=crc32c)
timeout 120 fio "${job[@]}" >"$work/fio-nbd.out" 2>&1; echo "fio-nbd=$?"
head -c 4096 /dev/urandom | blk write --offset 4096 >"$work/poke.out" 2>&1; echo "poke=$?"
timeout 120 fio "${job[@]}" --verify_only=1 >"$work/fio-nbd-changed.out" 2>&1; echo "fio-nbd-changed=$?"
kill -TERM "$(cat /tmp/nbdkit.pid)"
kill -TERM $tpid
wait $tpid
echo "target=$?"
GUEST

start=$SECONDS
"$fabric" run --hosts 2 --mem 2048 --timeout 400 -- bash "$work/guest.sh" "$bin" "$work" "$kroot" \
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
show fio-nbd.out
expect_match "$work/run.out" '^fio-nbd=0$' "fio's nbd engine with verify failed"
expect_match "$work/run.out" '^poke=0$' "rdmasec-blk write failed"
show fio-nbd-changed.out
expect_match "$work/run.out" '^fio-nbd-changed=[1-9]' "fio's verify missed a block changed behind its back"
expect_match "$work/fio-nbd-changed.out" 'verify|bad' "fio did not say what failed its verify"
expect_match "$work/run.out" '^target=0$' "rdmasec-blkd did not exit cleanly"
echo "blk_nbd: ok"
