# SPDX-License-Identifier: MIT
# rxe-fabric itself: exit statuses come back, a hanging command is killed at
# the timeout, bad arguments are refused before anything boots.
. "$(dirname "$0")/common.bash"

"$fabric" run -- bash -c 'echo out; echo err >&2; exit 7' >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 7 ] || fail "exit status 7 came back as $rc"
expect_match "$work/out" '^out$' "stdout was not streamed"
expect_match "$work/err" '^err$' "stderr was not streamed"

"$fabric" run --hosts 2 --on 1 'exit 0' --on 2 'exit 3' >"$work/on" 2>&1
rc=$?
[ $rc = 3 ] || fail "--on: a failing host's status 3 came back as $rc"

start=$SECONDS
"$fabric" run --timeout 5 -- sleep 1000 >"$work/hang" 2>&1
rc=$?
took=$((SECONDS - start))
[ $rc = 124 ] || { cat "$work/hang"; fail "a hanging command returned $rc, not 124"; }
[ $took -lt 90 ] || fail "the timeout took ${took}s to act"
expect_match "$work/hang" 'timed out after 5s' "no timeout message"

for args in "--hosts 0 -- true" "--hosts 17 -- true" "--timeout x -- true" "--bogus" "" "--on 3 true"; do
	# shellcheck disable=SC2086
	"$fabric" run $args >"$work/bad" 2>&1
	rc=$?
	[ $rc = 2 ] || fail "'run $args' returned $rc, not 2"
	expect_match "$work/bad" 'rxe-fabric: ' "'run $args' gave no error message"
done
echo "control: ok"
