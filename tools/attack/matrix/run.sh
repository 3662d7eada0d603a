# SPDX-License-Identifier: MIT
# The attack matrix's guest side (run by `rdmasec-attack matrix` inside a
# 3-host fabric): runs every selected attack against every selected victim,
# one cell at a time, and prints one MATRIX line per cell on stdout.
#
# usage: bash run.sh --bin DIR --work DIR [--attacks a,b] [--victims x,y] [--cell-timeout S]
#
# Each cell is cells/<attack>.sh's function cell_<attack> VICTIM (see
# victims.bash for the helpers and docs/attack.md for the contract); the
# rdmasec-blk victim's cells are cells/rdmasec-blk.bash's blk_cell <attack>,
# sourced after cells/<attack>.sh (whose helpers they use). It runs in
# its own session; when it ends, or after --cell-timeout seconds, the whole
# process group is killed, so nothing survives into the next cell. A cell that
# printed no MATRIX line (or several) yields an `error` line saying so.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN='' work='' attacks='' victims='' cell_timeout=40
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) BIN=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--attacks) attacks=${2//,/ }; shift 2 ;;
	--victims) victims=${2//,/ }; shift 2 ;;
	--cell-timeout) cell_timeout=$2; shift 2 ;;
	*) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$BIN" ] && [ -d "$BIN" ] && [ -n "$work" ] || { echo "run.sh: --bin DIR and --work DIR are required" >&2; exit 2; }
case "$cell_timeout" in '' | *[!0-9]*) echo "run.sh: bad --cell-timeout" >&2; exit 2 ;; esac
REPO=$(cd "$here/../../.." && pwd)
export BIN REPO
# shellcheck source=victims.bash
. "$here/victims.bash"
[ -n "$victims" ] || victims=$(victim_names)
if [ -z "$attacks" ]; then
	for f in "$here"/cells/*.sh; do attacks="$attacks $(basename "$f" .sh)"; done
fi
mkdir -p "$work" || exit 1
# One PKI for every rdmasec cell: keygen is slow under emulation.
export MATRIX_PKI=$work/pki
"$BIN/keygen/rdmasec-keygen" "$MATRIX_PKI" >/dev/null || echo "run.sh: rdmasec-keygen failed" >&2

for a in $attacks; do
	for v in $victims; do
		CELL=$work/$a-$v
		rm -rf "$CELL" && mkdir -p "$CELL" || exit 1
		if [ ! -f "$here/cells/$a.sh" ]; then
			matrix_result "$a" "$v" error "" "no cell script tools/attack/matrix/cells/$a.sh"
			continue
		fi
		start=$SECONDS
		limit=$cell_timeout
		# matrix.c's NVMF_CELL_TIMEOUT_MIN: the kernel's NVMe-oF takes minutes per cell.
		[ "$v" = nvmf ] && [ "$limit" -lt 300 ] && limit=300
		# matrix.c's BLK_CELL_TIMEOUT_MIN.
		[ "$v" = rdmasec-blk ] && [ "$limit" -lt 240 ] && limit=240
		# matrix.c's MPI_CELL_TIMEOUT_MIN.
		case "$v" in mpi-*) [ "$limit" -lt 120 ] && limit=120 ;; esac
		# setsid: the cell leads its own process group, killed as a whole below.
		# CELL_TIMEOUT: the cell's budget, for a cell that retries until judged (cells/common.bash).
		CELL=$CELL CELL_TIMEOUT=$limit setsid bash -c '. "$1/victims.bash" && . "$1/cells/$2.sh" &&
			if [ "$3" = rdmasec-blk ]; then . "$1/cells/rdmasec-blk.bash" && blk_cell "$2"; else "cell_${2//-/_}" "$3"; fi' \
			cell "$here" "$a" "$v" >"$CELL/stdout" 2>"$CELL/stderr" </dev/null &
		pid=$!
		timed_out=0
		while kill -0 $pid 2>/dev/null; do
			if [ $((SECONDS - start)) -ge "$limit" ]; then
				timed_out=1
				break
			fi
			sleep 0.2
		done
		kill -KILL -- -$pid 2>/dev/null
		wait $pid 2>/dev/null
		sleep 0.3
		kill -KILL -- -$pid 2>/dev/null # anything the group spawned while dying
		n=$(grep -c '^MATRIX ' "$CELL/stdout")
		if [ "$timed_out" = 1 ] && [ "$n" = 0 ]; then
			matrix_result "$a" "$v" error "" "cell timed out after ${limit} s"
		elif [ "$n" = 1 ]; then
			grep '^MATRIX ' "$CELL/stdout"
		else
			matrix_result "$a" "$v" error "" "cell printed $n result lines; stderr: $(tail -n 1 "$CELL/stderr")"
		fi
		echo "matrix: $a x $v: $(grep -m1 -o '"outcome":"[a-z-]*"' "$CELL/stdout" || echo error) ($((SECONDS - start)) s)" >&2
	done
done
exit 0
