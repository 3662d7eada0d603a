# SPDX-License-Identifier: MIT
# perftest's ib_write_bw runs between two hosts and reports a bandwidth.
. "$(dirname "$0")/common.bash"

bw='ib_write_bw -d $FABRIC_DEV -x $FABRIC_GID_INDEX -s 65536 -n 200 -F --report_gbits'
"$fabric" run --hosts 2 \
	--on 1 "$bw" \
	--on 2 "fabric wait-port 18515 && $bw \$(fabric ip 1)" >"$work/out" 2>&1 ||
	{ cat "$work/out"; fail "ib_write_bw failed"; }
# The result row: bytes, iterations, peak and average Gb/s, message rate.
expect_match "$work/out" '^\[h2\][[:space:]]+65536[[:space:]]+200[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+' "no ib_write_bw result row"
grep '^\[h2\] *65536' "$work/out"
echo "write_bw: ok"
