# SPDX-License-Identifier: MIT
# The fabric boots and every host has an ACTIVE rxe device with a RoCEv2 GID.
. "$(dirname "$0")/common.bash"

"$fabric" run --hosts 3 -- bash -c 'rdma link show; for i in 1 2 3; do echo "gid$i=$(fabric gid-index $i)"; done; ibv_devinfo -d rxe2' \
	>"$work/out" 2>&1 || fail "fabric run failed"
for i in 1 2 3; do
	expect_match "$work/out" "^link rxe$i/1 state ACTIVE .*netdev fab$i" "rxe$i is not ACTIVE on fab$i"
	expect_match "$work/out" "^gid$i=[0-9]+$" "rxe$i has no RoCEv2 GID"
done
expect_match "$work/out" "state:[[:space:]]+PORT_ACTIVE" "ibv_devinfo does not see an active port"
echo "boot: ok"
