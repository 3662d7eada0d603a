# SPDX-License-Identifier: MIT
# The kernel's NVMe over Fabrics on the fabric, in one 2-host boot: the target
# (fabric nvmf-target) on host 1 over a RAM disk holding the known pattern,
# the host (fabric nvmf-connect) on host 2. Checks, each byte for byte at an
# LBA chosen at random:
#  - the pattern on host 1's backing store reads back through /dev/nvmeXnY;
#  - random blocks written through the device (dd oflag=direct) are found on
#    the backing store, and their neighbours keep the pattern;
#  - random blocks written to the backing store read back through the device
#    (iflag=direct);
#  - the comparison fails on other bytes (a mismatch is seen);
#  - fabric nvmf-disconnect removes the controller and its device, and
#    fabric nvmf-target-stop the target.
. "$(dirname "$0")/common.bash"

cat >"$work/guest.sh" <<'GUEST'
set -u
w=$1
fail() { echo "FAIL: $*"; exit 1; }
# same FILE_A FILE_B WHAT: byte for byte, or fail saying where they differ.
same() { cmp "$1" "$2" >"$w/cmp.txt" 2>&1 || fail "$3: $(cat "$w/cmp.txt")"; }
# blocks DEV LBA N FILE: N 512-byte blocks of DEV from LBA, read past any cache.
blocks() { dd if="$1" of="$4" bs=512 skip="$2" count="$3" iflag=direct status=none || fail "cannot read $1 at $2"; }

fabric nvmf-target 1 --size 16 >"$w/target.txt" || fail "nvmf-target failed"
cat "$w/target.txt"
back=$(awk '$1 == "device" {print $2}' "$w/target.txt")
[ "$back" = /dev/ram0 ] || fail "no backing device printed"
fabric on 2 fabric nvmf-connect 2 1 >"$w/connect.txt" || fail "nvmf-connect failed"
cat "$w/connect.txt"
dev=$(awk '$1 == "device" {print $2}' "$w/connect.txt") ctrl=$(awk '$1 == "controller" {print $2}' "$w/connect.txt")
[ -b "$dev" ] || fail "no block device printed"
grep -q "traddr=10.77.0.1,trsvcid=4420" "/sys/class/nvme/$ctrl/address" && grep -q rdma "/sys/class/nvme/$ctrl/transport" ||
	fail "$ctrl is not the RDMA controller of 10.77.0.1:4420: $(cat "/sys/class/nvme/$ctrl/address")"
[ "$(cat "/sys/block/${dev#/dev/}/size")" = 32768 ] || fail "$dev does not have the target's 16 MiB"

# Two distinct 4 KiB-aligned LBAs in 8..32759 (the device has 32768 blocks).
a=$(((RANDOM % 4094 + 1) * 8)) b=$(((RANDOM % 4094 + 1) * 8))
[ "$a" = "$b" ] && b=$(((a + 64) % 32752 + 8))
echo "LBAs: written through the device at $a, on the backing store at $b"

fabric nvmf-pattern "$a" 8 >"$w/pattern-a"
blocks "$dev" "$a" 8 "$w/dev-a-before"
same "$w/pattern-a" "$w/dev-a-before" "the backing store's pattern at LBA $a through $dev"

head -c 4096 /dev/urandom >"$w/rand-a"
dd if="$w/rand-a" of="$dev" bs=4096 seek=$((a / 8)) oflag=direct status=none || fail "cannot write $dev"
blocks "$back" "$a" 8 "$w/back-a"
same "$w/rand-a" "$w/back-a" "blocks written through $dev at LBA $a, on host 1's $back"
blocks "$back" $((a - 1)) 1 "$w/back-before"
blocks "$back" $((a + 8)) 1 "$w/back-after"
fabric nvmf-pattern $((a - 1)) 1 | cmp - "$w/back-before" >/dev/null && fabric nvmf-pattern $((a + 8)) 1 |
	cmp - "$w/back-after" >/dev/null || fail "the write through $dev changed blocks beside LBA $a..$((a + 7))"

head -c 4096 /dev/urandom >"$w/rand-b"
dd if="$w/rand-b" of="$back" bs=4096 seek=$((b / 8)) oflag=direct status=none || fail "cannot write $back"
blocks "$dev" "$b" 8 "$w/dev-b"
same "$w/rand-b" "$w/dev-b" "blocks written to $back at LBA $b, read through $dev"

# The comparison sees a difference: the device's block at a against b's bytes.
cmp -s "$w/rand-b" "$w/dev-a-before" && fail "cmp found no difference between different blocks"
blocks "$dev" "$a" 8 "$w/dev-a-after"
cmp -s "$w/rand-b" "$w/dev-a-after" && fail "LBA $a holds LBA $b's bytes"
echo "data: ok (LBA $a host 2 -> host 1, LBA $b host 1 -> host 2)"

fabric on 2 fabric nvmf-disconnect || fail "nvmf-disconnect failed"
[ -e "/sys/class/nvme/$ctrl" ] && fail "$ctrl is still there after nvmf-disconnect"
[ -b "$dev" ] && fail "$dev is still there after nvmf-disconnect"
fabric on 2 fabric nvmf-disconnect 2>/dev/null && fail "a second nvmf-disconnect succeeded"
fabric nvmf-target-stop || fail "nvmf-target-stop failed"
[ -e /sys/block/ram0 ] && fail "the RAM disk is still there after nvmf-target-stop"
rdma resource show cm_id | grep -q "LISTEN .*10.77.0.1:4420" && fail "the target still listens"
dmesg | grep -E 'nvme|nvmet' | tail -n 8
echo "nvmf: ok"
GUEST

start=$SECONDS
"$fabric" run --hosts 2 --timeout 240 "${build_share[@]}" -- bash "$work/guest.sh" "$work" >"$work/out" 2>&1
rc=$?
cat "$work/out"
echo "(fabric run: $((SECONDS - start)) s)"
[ $rc = 0 ] || fail "the guest's checks failed (exit $rc)"
grep -q '^nvmf: ok$' "$work/out" || fail "the guest did not finish its checks"
echo "nvmf: ok"
