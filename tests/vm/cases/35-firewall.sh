# vm-timeout: 300
# A host firewall dropping RoCE v2 (issue 36, item 4). Soft-RoCE sends RoCE v2 as UDP to
# port 4791 through the kernel's IP stack, so netfilter filters it while TCP (the exchange)
# passes. Measured here (Debian 12, kernel 6.1, iptables 1.8.9 nf_tables, nftables 1.0.6):
# `iptables -I INPUT -i veth0 -p udp --dport 4791 -j DROP` stops every packet rxe1 sends to
# rxe0 (the rule counts them: 28 for one run), the client ends in IBV_WC_RETRY_EXC_ERR after
# its 7 tries, and the server hears of it over the exchange. Both ends must name the rule
# and its counter, and none of the old guesses (switch filtering, RoCE v1 across L3, a wrong
# GID, a dead peer); check and doctor fail on it and pass once the fix is applied. Then the
# same through a native nftables chain whose policy drops, a rule that only may drop, an
# iptables-legacy table, and a user without CAP_NET_ADMIN, who is told it cannot be read.

command -v iptables >/dev/null && command -v nft >/dev/null || skip "no iptables/nft (scripts/setup installs them)"
modprobe nf_tables 2>/dev/null; modprobe ip_tables 2>/dev/null; modprobe iptable_filter 2>/dev/null
cleanup() {
    iptables -F INPUT 2>/dev/null
    nft delete table inet fw 2>/dev/null
    iptables-legacy -F INPUT 2>/dev/null
}
trap cleanup EXIT
cleanup
FALSE='switch filtering|RoCE v1 across L3|wrong GID|peer process is alive|packets from rxe1 to rxe0 are being lost'

check "iptables drops RoCE v2 arriving on veth0" iptables -I INPUT -i veth0 -p udp --dport 4791 -j DROP

# --- a run: both ends name the rule
port=18610
bg_server server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" --timeout 10
srv=$BG_PID
check "server listens" wait_listen "$port"
expect_rc 1 "the client fails" "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" --timeout 10 192.168.77.1
cp "$LAST_OUT" "$RESULTS/client.txt"
wait_pid_timeout "$srv" 20
RULE='rule 1 of chain INPUT in table ip filter \(nftables, handle [0-9]+\)'
# The host by name when it has one (this guest has none: "(none)").
WHOSE="(the firewall of host $(hostname | sed 's/[^A-Za-z0-9-]/./g')|this host's firewall)"
expect_out "client: the firewall is the cause, on the other end's netdev of this host" \
    "why: +$WHOSE drops the RoCE v2 packets \(UDP 4791\) arriving on veth0 \(the other end's netdev: both ends are on this host\) from 192.168.77.2, so none is acknowledged: $RULE" \
    cat "$RESULTS/client.txt"
expect_out "client: the rule as nft lists it" \
    'seen: +arriving on veth0 .*: iifname "veth0" meta l4proto udp th dport 4791 counter packets [1-9][0-9]* bytes [0-9]+ drop' \
    cat "$RESULTS/client.txt"
expect_out "client: its counter" 'seen: +its counter: [1-9][0-9]* packets' cat "$RESULTS/client.txt"
expect_out "client: the fix deletes it or accepts RoCE v2 ahead of it" \
    'fix: +delete the rule: `iptables -D INPUT 1` \(or `nft delete rule ip filter INPUT handle [0-9]+`\); or accept RoCE v2 from the RDMA peers ahead of it: `iptables -I INPUT -i veth0 -p udp --dport 4791 -j ACCEPT`' \
    cat "$RESULTS/client.txt"
expect_no_out "client: none of the old guesses" "why:.*($FALSE)|fix:.*($FALSE)" cat "$RESULTS/client.txt"
expect_out "server: the firewall is the cause on its own netdev, in its own words" \
    "why: +$WHOSE drops the RoCE v2 packets \(UDP 4791\) arriving on veth0 from 192.168.77.2, so none is acknowledged: $RULE" \
    cat "$RESULTS/server.out"
expect_out "server: what the client said stays as evidence" 'seen: +the client said: work completion failed .*IBV_WC_RETRY_EXC_ERR' \
    cat "$RESULTS/server.out"
expect_no_out "server: none of the old guesses" "why:.*($FALSE)|fix:.*($FALSE)" cat "$RESULTS/server.out"
expect_out "server: the counters' loss defers to the failure" \
    'fix: +the loss is the run.s failure \(firewall\): its explanation says where the packets are dropped' cat "$RESULTS/server.out"
expect_no_out "server: no list of places to look" 'find where packets are dropped' cat "$RESULTS/server.out"

# --- check and doctor fail on it, with the counter iptables shows
pkts=$(iptables -L INPUT -v -x -n --line-numbers | awk '$1 == 1 {print $2}')
expect_rc 1 "check fails" "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
cp "$LAST_OUT" "$RESULTS/check.txt"
expect_out "check: FAIL firewall names the rule" \
    "^FAIL +firewall +this host's firewall drops RoCE v2 \(UDP 4791\) arriving on veth0 from 192.168.77.2: $RULE" \
    cat "$RESULTS/check.txt"
expect_out "check: the counter is iptables' ($pkts)" "its counter: $pkts packets" cat "$RESULTS/check.txt"
expect_out "check: says why netfilter sees RoCE at all" 'rxe sends and receives RoCE v2 as UDP to port 4791 through this host' cat "$RESULTS/check.txt"
expect_rc 1 "doctor fails" "$RDMACTL" doctor
cp "$LAST_OUT" "$RESULTS/doctor.txt"
expect_out "doctor: FAIL firewall on rxe0/1" "^FAIL +firewall +rxe0/1 +this host's firewall drops RoCE v2 \(UDP 4791\) arriving on veth0 from any peer: $RULE" \
    cat "$RESULTS/doctor.txt"
expect_out "doctor: rxe1's netdev passes" '^ok +firewall +rxe1/1 +this host.s firewall passes RoCE v2 \(UDP 4791\) arriving on veth1 from any peer and leaving through veth1' \
    cat "$RESULTS/doctor.txt"
"$RDMACTL" -j doctor >"$RESULTS/doctor.json"
json_has "doctor -j: the finding's code and port" "$RESULTS/doctor.json" code=firewall severity=fail device=rxe0 port=1

# --- the fix as given works
check "the fix: iptables -D INPUT 1" iptables -D INPUT 1
expect_rc 0 "check passes" "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
expect_out "check: ok firewall" '^ok +firewall +this host.s firewall passes RoCE v2 \(UDP 4791\) arriving on veth0 from 192.168.77.2 and leaving through veth0 toward 192.168.77.2' \
    cat "$LAST_OUT"
bg_server server2 "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20
check "server listens again" wait_listen "$port"
check "a run works again" "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 20 192.168.77.1
wait_pid_timeout "$BG_PID" 20 >/dev/null

# --- nftables: a chain whose policy drops, with TCP accepted (the exchange works)
check "nft: table inet fw" nft add table inet fw
check "nft: policy drop on input" nft add chain inet fw in '{ type filter hook input priority 0; policy drop; }'
check "nft: TCP accepted" nft add rule inet fw in meta l4proto tcp accept
check "nft: ICMP accepted" nft add rule inet fw in meta l4proto '{ icmp, icmpv6 }' accept
expect_rc 1 "check fails on the policy" "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
expect_out "check: the drop policy of inet fw's chain" \
    "^FAIL +firewall +this host.s firewall drops RoCE v2 \(UDP 4791\) arriving on veth0 from 192.168.77.2: the drop policy of chain in in table inet fw \(nftables\): no rule accepts it first" cat "$LAST_OUT"
expect_out "check: the fix inserts an nft accept" 'fix: +accept RoCE v2 from the RDMA peers in that chain: `nft insert rule inet fw in iifname "veth0" udp dport 4791 accept`' cat "$LAST_OUT"
# A same-host test crosses the policy twice: the fix names an accept for each netdev.
expect_out "check: an accept for the other end's netdev too" 'nft insert rule inet fw in iifname "veth1" udp dport 4791 accept' cat "$LAST_OUT"
grep -o 'nft insert rule inet fw in iifname "veth[01]" udp dport 4791 accept' "$LAST_OUT" | sort -u >"$RESULTS/nft-fix.sh"
check "nft: the fix as given" sh -e "$RESULTS/nft-fix.sh"
expect_rc 0 "check passes with the accept" "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
nft delete table inet fw
# A rule under a test rdmactl does not evaluate (a rate limit): a warning, named.
check "nft: a rate-limited drop" sh -c "nft add table inet fw && nft add chain inet fw in '{ type filter hook input priority 0; policy accept; }' && nft add rule inet fw in udp dport 4791 limit rate over 10/second drop"
expect_rc 0 "check warns only" "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
expect_out "check: WARN may drop, naming the untested part" \
    '^warn +firewall +this host.s firewall may drop RoCE v2 \(UDP 4791\) arriving on veth0 from 192.168.77.2: rule 1 of chain in in table inet fw .*\[limit\]' cat "$LAST_OUT"
nft delete table inet fw

# --- iptables-legacy
if command -v iptables-legacy >/dev/null; then
    check "legacy: drop UDP 4791 from the peer" iptables-legacy -A INPUT -s 192.168.77.2/32 -p udp --dport 4791 -j DROP
    expect_rc 1 "check fails on the legacy rule" "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
    expect_out "check: the legacy rule, read through ip_tables" \
        "^FAIL +firewall .*: rule 1 of chain INPUT in table ip filter \(iptables-legacy\)" cat "$LAST_OUT"
    expect_out "check: as the legacy rule reads" 'ip saddr 192.168.77.2/32 meta l4proto udp udp dport 4791 counter packets 0 bytes 0 drop' cat "$LAST_OUT"
    expect_out "check: the legacy tool in the fix" 'fix: +delete the rule: `iptables-legacy -D INPUT 1`' cat "$LAST_OUT"
    # Another source: not this peer.
    iptables-legacy -R INPUT 1 -s 10.9.9.9/32 -p udp --dport 4791 -j DROP
    expect_rc 0 "check passes when the rule is for another source" "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
    iptables-legacy -F INPUT
else
    skip_here "no iptables-legacy"
fi

# --- without CAP_NET_ADMIN: unknown, never "passes"
check "iptables drops RoCE v2 again" iptables -I INPUT -i veth0 -p udp --dport 4791 -j DROP
expect_rc 0 "check as nobody" setpriv --reuid=65534 --regid=65534 --clear-groups "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
expect_out "check as nobody: info, cannot tell, EPERM and how to read it" \
    "^info +firewall +cannot tell whether this host's firewall drops RoCE v2 \(UDP 4791\): nftables: the kernel answered the nf_tables chain dump with EPERM" cat "$LAST_OUT"
expect_no_out "check as nobody: never says it passes" 'firewall passes' cat "$LAST_OUT"
