# SPDX-License-Identifier: MIT
# T3, the in-network observer. One boot, the bridge captured throughout:
# (1) ibv_rc_pingpong and (2) ib_write_bw between hosts 1 and 2, (3)
# rdmasec-server on host 1 with one rdmasec-client on host 3 (send, write,
# read), (4) the naive victim between hosts 2 and 3. Then `rdmasec-attack
# sniff` reads the capture: the QPNs and PSNs pingpong printed, and the rkey
# and VA perftest printed, must be found both in their plaintext TCP exchange
# and in the RoCE traffic; rdmasec's QPNs and PSNs are visible (BTH) but its
# TLS control channel yields nothing, and no rkey of its RETHs appears in any
# plaintext. A live `sniff -i fabbr` must see (1) too, and refuse to run
# without privilege.
. "$(dirname "$0")/common.bash"

bin=$build/tools
atk=$bin/attack/rdmasec-attack
for x in "$atk" "$bin/attack/rdmasec-naive-victim" "$bin/server/rdmasec-server" "$bin/client/rdmasec-client" \
	"$bin/keygen/rdmasec-keygen"; do
	[ -x "$x" ] || fail "build the tools first (missing $x)"
done
"$bin/keygen/rdmasec-keygen" "$work/pki" >/dev/null || fail "rdmasec-keygen failed"

cat >"$work/guest.sh" <<'EOF'
set -u
bin=$1 work=$2
atk=$bin/attack/rdmasec-attack
# ibv_rc_pingpong and perftest cannot pick their TCP source address, so on the
# one guest kernel host 2's exchange with host 1 would go through lo. Route
# host 2's connections to port 18515 out of its own veth (host 2's table,
# 102), so the exchange crosses the bridge as between two machines.
ip rule add pref 90 iif lo to 10.77.0.1 ipproto tcp dport 18515 lookup 102 || exit 1

# Without privilege, live capture is refused with a clear reason.
setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all \
	"$atk" sniff -i fabbr --count 1 >/dev/null 2>"$work/nonroot.err"
echo "nonroot=$?"

# A live observer on the bridge during (1); --seconds bounds it, SIGINT ends it.
"$atk" sniff -i fabbr --seconds 300 --json="$work/live.json" >"$work/live.txt" 2>"$work/live.err" &
live=$!
for _ in $(seq 1 100); do grep -q capturing "$work/live.err" && break; sleep 0.1; done

run_pair() { # NAME PORT SERVER-HOST CLIENT-HOST CMD: CMD on the server, then CMD SERVER-IP on the client
	local name=$1 port=$2 s=$3 c=$4 cmd=$5 spid
	fabric on "$s" bash -c "$cmd" >"$work/$name$s.out" 2>&1 &
	spid=$!
	fabric wait-port "$port" || return 1
	fabric on "$c" bash -c "$cmd $(fabric ip "$s")" >"$work/$name$c.out" 2>&1
	echo "$name$c=$?"
	wait $spid
	echo "$name$s=$?"
}
run_pair pp 18515 1 2 'ibv_rc_pingpong -d $FABRIC_DEV -g $FABRIC_GID_INDEX -n 20'
sleep 1
kill -INT $live
wait $live
echo "live=$?"

run_pair bw 18515 1 2 'ib_write_bw -d $FABRIC_DEV -x $FABRIC_GID_INDEX -s 65536 -n 20 -F'

fabric on 1 "$bin/server/rdmasec-server" --certs "$work/pki" --listen "$(fabric ip 1):7471" \
	--handshake-timeout 600000 2>"$work/server.log" &
spid=$!
fabric wait-port 7471 || exit 1
fabric on 3 "$bin/client/rdmasec-client" --certs "$work/pki" --source "$(fabric ip 3)" -t 600000 \
	-c "send hello; write abc; read; write -s 64K; read; quit" "$(fabric ip 1)" >"$work/client.out" 2>&1
echo "client=$?"
kill -TERM $spid
wait $spid
echo "server=$?"

vic=$bin/attack/rdmasec-naive-victim
fabric on 2 bash -c "$vic server -d \$FABRIC_DEV -g \$FABRIC_GID_INDEX -t 3" >"$work/nv2.out" 2>&1 &
spid=$!
fabric wait-port 18516 || exit 1
fabric on 3 bash -c "$vic client -d \$FABRIC_DEV -g \$FABRIC_GID_INDEX -l \$FABRIC_IP -t 1 -m hello $(fabric ip 2)" \
	>"$work/nv3.out" 2>&1
echo "nv3=$?"
wait $spid
echo "nv2=$?"
# tcpdump on the bridge loses what is still in the kernel's buffer when it is stopped.
sleep 2
EOF

# --share: the build directory may live outside the repository (only shares are visible in the guest).
"$fabric" run --hosts 3 --share "$build" --capture "$work/wire.pcap" -- \
	bash "$work/guest.sh" "$bin" "$work" >"$work/run.out" 2>&1 ||
	{ cat "$work/run.out"; fail "the fabric run failed"; }
cat "$work/run.out"
for x in pp1 pp2 bw1 bw2 client server nv2 nv3 live; do
	expect_match "$work/run.out" "^$x=0$" "$x failed: $(tail -n 5 "$work/$x.out" 2>/dev/null)"
done
expect_match "$work/run.out" '^nonroot=1$' "unprivileged live capture did not fail with status 1"
expect_match "$work/nonroot.err" 'not permitted: it needs root' "unprivileged live capture: no clear reason"

"$atk" sniff "$work/wire.pcap" --json="$work/sniff.json" >"$work/sniff.txt" || fail "sniff failed on the capture"
cat "$work/sniff.txt"
# An independent reading of the RETHs, to check sniff's.
tshark -r "$work/wire.pcap" -Y 'infiniband.reth' -T fields -e ip.src -e ip.dst -e infiniband.bth.destqp \
	-e infiniband.reth.r_key >"$work/reth.txt" 2>/dev/null || fail "tshark cannot read the capture"

python3 - "$work" <<'PY' || fail "the observer's findings are wrong"
import json, re, sys
work = sys.argv[1]
h1, h2, h3 = "10.77.0.1", "10.77.0.2", "10.77.0.3"
d = json.load(open(f"{work}/sniff.json"))
live = json.load(open(f"{work}/live.json"))
num = lambda s: int(s, 16)

def conn(src, dst, qpn):
    c = [c for c in d["connections"] if (c["src"], c["dst"], num(c["dest_qpn"])) == (src, dst, qpn)]
    assert len(c) == 1, f"no connection {src} -> {dst} QPN {qpn:#x}"
    return c[0]

def exchange(doc, fmt, src, qpn):
    e = [e for e in doc["exchanges"] if (e["format"], e["src"], num(e["qpn"])) == (fmt, src, qpn)]
    assert e, f"no {fmt} exchange from {src} telling QPN {qpn:#x}"
    return e[0]

def printed(path, which):
    line = next(l for l in open(path) if f"{which} address" in l)
    return [int(x, 16) for x in re.findall(r"(?:QPN|PSN|RKey|VAddr) (0x[0-9a-f]+)", line)]

# (1) ibv_rc_pingpong: each side's QPN and PSN, as printed, in clear and on the wire.
pp = {h: printed(f"{work}/pp{h[-1]}.out", "local") for h in (h1, h2)}
for me, peer in ((h1, h2), (h2, h1)):
    qpn, psn = pp[me]
    for doc in (d, live):
        e = exchange(doc, "ibv_rc_pingpong", me, qpn)
        assert num(e["psn"]) == psn and e["dst"] == peer and e["gid_is_src"], e
    e = exchange(d, "ibv_rc_pingpong", me, qpn)
    assert e["qpn_seen"] and e["psn_seen"], e
    c = conn(peer, me, qpn)  # the peer's requests to my QP
    assert c["plaintext_exchange"] and c["requests"] > 0, c
    c = conn(me, peer, pp[peer][0])  # my requests start at the PSN I told
    assert num(c["first_psn"]) == psn, (c["first_psn"], hex(psn))
    assert num(c["peer_qpn"]) == qpn, c
print(f"pingpong: QPNs {pp[h1][0]:#x}/{pp[h2][0]:#x} and PSNs {pp[h1][1]:#x}/{pp[h2][1]:#x} "
      "found in the TCP exchange and the RoCE traffic (also by the live observer)")

# (2) ib_write_bw: the server's rkey and VA, as the client printed them, in RETHs and in clear.
qpn, psn, rkey, va = printed(f"{work}/bw2.out", "remote")
cq, cpsn, _, _ = printed(f"{work}/bw2.out", "local")
c = conn(h2, h1, qpn)
r = [r for r in c["reths"] if num(r["rkey"]) == rkey]
assert r and num(r[0]["va"]) <= va < num(r[0]["end"]), (c["reths"], hex(rkey), hex(va))
assert r[0]["in_plaintext"] and c["plaintext_exchange"], r
assert num(c["first_psn"]) == cpsn, c
e = exchange(d, "perftest", h1, qpn)
assert num(e["rkey"]) == rkey and num(e["va"]) == va and e["rkey_seen"] and e["va_seen"], e
assert exchange(d, "perftest", h2, cq)["psn_seen"]
print(f"ib_write_bw: rkey {rkey:#x} VA {va:#x} found in {r[0]['count']} RETHs and in the TCP exchange")

# (3) rdmasec: BTHs visible, the TLS channel yields nothing, no RETH rkey in any plaintext.
tls = [t for t in d["tcp_streams"] if 7471 in (t["sport"], t["dport"])]
assert len(tls) == 2 and all(t["tls"] and t["messages"] == 0 and t["bytes"] > 0 for t in tls), tls
assert not [e for e in d["exchanges"] if 7471 in (e["sport"], e["dport"])]
sec = [c for c in d["connections"] if {c["src"], c["dst"]} == {h1, h3}]
assert len(sec) >= 2, sec
for c in sec:
    assert c["first_psn"] is not None and c["peer_qpn"] is not None, c
    assert c["plaintext_exchange"] is False and c["exchange"] is None, c
reths = [r for c in sec for r in c["reths"]]
assert reths and not any(r["in_plaintext"] for r in reths), reths
# tshark reads the same rkeys from the same connections.
wire = {(s, t, int(q, 0), int(k, 0)) for s, t, q, k in (l.split() for l in open(f"{work}/reth.txt") if l.strip())}
ours = {(c["src"], c["dst"], num(c["dest_qpn"]), num(r["rkey"])) for c in d["connections"] for r in c["reths"]}
assert wire == ours, (sorted(wire ^ ours))
print(f"rdmasec: {len(sec)} connections, {sum(c['packets'] for c in sec)} packets with QPNs and PSNs in clear; "
      f"{sum(t['bytes'] for t in tls)} TLS bytes gave 0 parameters; {len(reths)} RETH rkeys, none in plaintext")

# (4) the naive victim: everything in clear, both ways.
for me, peer in ((h2, h3), (h3, h2)):
    e = [e for e in d["exchanges"] if e["format"] == "naive-victim" and e["src"] == me]
    assert e and e[0]["qpn_seen"] and e[0]["len"] == 4096, e
e = [e for e in d["exchanges"] if e["format"] == "naive-victim" and e["src"] == h2][0]
assert conn(h3, h2, num(e["qpn"]))["plaintext_exchange"]
print("naive victim: QPN, PSN, GID, rkey and VA of both sides in clear")
PY
echo "attack_sniff: ok"
