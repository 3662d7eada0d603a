# SPDX-License-Identifier: MIT
# Sealed grants on real rxe, watched by the in-network observer (--capture).
# rdmasec-client writes and reads a known text through a sealed grant: no
# 16-byte window of it appears in any frame on the wire; the same client with
# a plain grant and another text: that text is found (so the search can fail).
# sealed_check, with both AEADs: a sealed write of 4 chunks opened by the
# granter, a sealed READ grant read and opened, plain calls through a sealed
# grant refused, and a byte the granter changes (after a write, or while a
# READ grant is out) or a forger writes through another window, detected
# with the bytes wiped; grants overlapping a sealed READ grant refused; and a
# peer that vanishes while a sealed READ grant is out leaves the granter its
# plaintext. Both sides of sealed_check renew their keys every 64 bytes of
# messages: all of it runs across rekeys, and each side counts at least 3.
. "$(dirname "$0")/common.bash"

bin=$build/tools
check=$build/tests/sealed_check
[ -x "$check" ] || fail "build sealed_check first (missing $check)"
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

# Printable, no ';' (the client's command separator), unlike anything else on the wire.
secret="sealed-canary-$(head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n')-the-observer-must-never-see-this"
plain="plain-canary-$(head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n')-the-observer-sees-this-one"
printf '%s\n%s\n' "$secret" "$plain" >"$work/texts"

cat >"$work/guest.sh" <<'GUEST'
set -u
bin=$1 check=$2 work=$3
server=$(fabric ip 1)
secret=$(sed -n 1p "$work/texts") plain=$(sed -n 2p "$work/texts")
fabric on 1 "$check" serve "$work/pki" "$server" 7472 2 >"$work/check-server.out" 2>&1 &
cpid=$!
fabric on 1 "$bin/server/rdmasec-server" --certs "$work/pki" --listen "$server:7471" \
	--audit "$work/audit.jsonl" 2>"$work/server.log" &
spid=$!
fabric wait-port 7472 || { cat "$work/check-server.out"; exit 1; }
for aead in aes chacha; do
	fabric on 2 "$check" run "$work/pki" "$server" "$(fabric ip 2)" 7472 $aead >"$work/check-$aead.out" 2>&1
	echo "check-$aead=$?"
done
wait $cpid
echo "check-server=$?"
fabric wait-port 7471 || { cat "$work/server.log"; exit 1; }
client() { fabric on 2 "$bin/client/rdmasec-client" --certs "$work/pki" --source "$(fabric ip 2)" "$@" "$server"; }
client -c "write --sealed $secret; read --sealed; quit" >"$work/sealed.out" 2>&1
echo "sealed=$?"
client -c "write $plain; read; quit" >"$work/plain.out" 2>&1
echo "plain=$?"
kill -TERM $spid
wait $spid
echo "server=$?"
GUEST

"$fabric" run --hosts 2 --mem 2048 --timeout 600 --capture "$work/wire.pcap" -- \
	bash "$work/guest.sh" "$bin" "$check" "$work" >"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "fabric run failed"; }
cat "$work/run.out"

for aead in aes chacha; do
	out=$work/check-$aead.out
	echo "--- $aead"
	cat "$out"
	expect_match "$work/run.out" "^check-$aead=0$" "sealed_check failed ($aead)"
	expect_match "$out" '^RESULT plain-on-sealed=value out of range$' "rsec_write went through a sealed grant ($aead)"
	expect_match "$out" '^RESULT sealed-write=opened 200000$' "the granter did not open the sealed write ($aead)"
	expect_match "$out" '^RESULT tamper-write=detected$' "a byte changed after a sealed write went unnoticed ($aead)"
	expect_match "$out" '^RESULT forged-write=detected$' "a forged write onto sealed bytes went unnoticed ($aead)"
	expect_match "$out" '^RESULT sealed-read=opened 150000, granter restored$' "sealed read failed ($aead)"
	expect_match "$out" '^RESULT tamper-read=message authentication failed, wiped; granter: mac wiped$' \
		"a byte changed in a sealed READ grant went unnoticed ($aead)"
	expect_match "$out" '^RESULT alive=yes$' "the connection did not survive detected tampering ($aead)"
	expect_match "$out" '^RESULT overlap=overlap value out of range value out of range$' \
		"a grant overlapping a sealed READ grant was not refused ($aead)"
	expect_match "$out" '^RESULT posted-write=opened$' "the granter did not open a posted sealed write ($aead)"
	expect_match "$out" '^RESULT posted-write-refusals=value out of range unknown, expired or revoked grant$' \
		"rsec_post took unsealed bytes, or a used grant was sealed for again ($aead)"
	expect_match "$out" '^RESULT posted-read=8 of 8 opened; partial read value out of range$' \
		"posted sealed reads did not all open, or a partial one was taken ($aead)"
	expect_match "$out" '^RESULT vanish=granted$' "the last sealed READ grant was not made ($aead)"
	rekeys=$(sed -n 's/^RESULT rekeys=client \([0-9]*\), server \([0-9]*\)$/\1 \2/p' "$out")
	read -r rk_client rk_server <<<"${rekeys:-0 0}"
	[ "$rk_client" -ge 3 ] && [ "$rk_server" -ge 3 ] || fail "too few rekeys ($aead): ${rekeys:-none}"
done
expect_match "$work/run.out" '^check-server=0$' "the sealed_check server failed"
cat "$work/check-server.out"
# Both clients vanished with a sealed READ grant out: the granter got its plaintext back each time.
[ "$(grep -c '^RESULT restored-after-close=yes$' "$work/check-server.out")" = 2 ] ||
	fail "a sealed READ grant stayed encrypted after its peer vanished"

cat "$work/sealed.out" "$work/plain.out"
expect_match "$work/run.out" '^sealed=0$' "the sealed client run failed"
expect_match "$work/run.out" '^plain=0$' "the plain client run failed"
expect_match "$work/run.out" '^server=0$' "rdmasec-server did not exit cleanly"
secret=$(sed -n 1p "$work/texts") plain=$(sed -n 2p "$work/texts")
expect_match "$work/sealed.out" "^write: ${#secret} bytes sealed, server opened them and verified sha256$" \
	"no sealed write reported"
grep -qxF "read: $secret" "$work/sealed.out" || fail "the sealed read did not give the text back"
grep -qxF "read: $plain" "$work/plain.out" || fail "the plain read did not give the text back"
expect_match "$work/audit.jsonl" '"event":"sealed_open".*"result":"ok"' "no sealed_open record in the audit log"

# The observer's view: every captured frame, TCP and RoCE alike.
python3 - "$work/wire.pcap" "$work/texts" <<'PY' || fail "the observer saw sealed data"
import struct, sys
raw = open(sys.argv[1], "rb").read()
magic = raw[:4]
endian = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}[magic]
frames, off = [], 24
while off + 16 <= len(raw):
    caplen = struct.unpack(endian + "I", raw[off + 8:off + 12])[0]
    frames.append(raw[off + 16:off + 16 + caplen])
    off += 16 + caplen
secret, plain = (l.encode() for l in open(sys.argv[2]).read().split("\n")[:2])
def windows(text):
    return {text[i:i + 16] for i in range(len(text) - 15)}
# A window both texts have (their random parts can meet the shared words)
# would find the plain text's frames: each text is searched by its own.
shared = windows(secret) & windows(plain)
def seen(text):
    w = windows(text) - shared
    return sum(1 for f in frames if any(x in f for x in w))
print(f"observer: {len(frames)} frames, {len(raw)} bytes; windows the texts share: {len(shared)}")
s, p = seen(secret), seen(plain)
print(f"frames with a 16-byte window of the sealed text: {s}; of the plain text: {p}")
assert p > 0, "the plain text is not on the wire: the search cannot tell"
assert s == 0, "a sealed text crossed the wire in clear"
PY
echo "sealed: ok"
