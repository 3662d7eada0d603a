# SPDX-License-Identifier: MIT
# Investigation, not a test: does this kernel's rxe still panic when a peer
# sends SEND_WITH_INV for a type-2 memory window that is already invalidated?
# lib/grant.c is built around the answer (windows are deallocated, never
# invalidated and kept). Run by hand after a kernel update:
#   RSEC_BUILD_DIR=build bash tests/investigations/rxe_reinvalidate_panic.sh
. "$(dirname "$0")/../fabric/common.bash"
prog=${VERBS_CHECK:-$build/tests/verbs_check}
port=7471
# Linux 6.1: SEND_WITH_INV: SEND_WITH_INV of a type-2 window that is already
# invalidated (FREE) dereferences its NULL QP in softirq context and panics
# the host.
"$fabric" run --hosts 3 --timeout 400 \
	--on 1 "VERBS_CHECK_REINVALIDATE=1 $prog server \$FABRIC_IP $port" \
	--on 2 "fabric wait-port $port && $prog client \$FABRIC_IP \$(fabric ip 1) $port" \
	--on 3 "fabric wait-port $port && $prog third \$FABRIC_IP \$(fabric ip 1) $port" \
	>"$work/panic" 2>&1
rc=$?
if [ $rc = 125 ] && grep -q '__rxe_put' "$work/panic" && grep -q 'Kernel panic' "$work/panic"; then
	echo "verbs: known kernel bug still present: remote SEND_WITH_INV of a FREE type-2 window panics the host (__rxe_put)"
elif [ $rc = 0 ]; then
	grep -h 'RESULT send-with-inv-same-key-again' "$work/panic"
	echo "verbs: NOTE: re-invalidating a FREE window no longer panics this kernel; update docs/verbs.md"
else
	cat "$work/panic"
	fail "re-invalidation run: unexpected exit $rc"
fi
echo "rxe_reinvalidate_panic: done"
