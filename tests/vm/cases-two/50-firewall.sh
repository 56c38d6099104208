# shellcheck shell=bash
# vm-timeout: 300
# A host firewall on one host only (issue 36, item 4): B drops RoCE v2 arriving on its
# eth0 (`iptables -I INPUT -i eth0 -p udp --dport 4791 -j DROP`), A has no rule. A's client
# runs out of retries and sees nothing wrong on its side; B's server learns of it over the
# exchange, finds its own rule and says so, and sends its cause back, so A prints B's cause
# too: the firewall of host vm-b, with the rule and its counter. Neither end guesses a
# switch, RoCE v1 or a dead peer. check agrees on each host: A passes, B fails.

on_b sh -c 'command -v iptables' >/dev/null || skip "no iptables on B (scripts/setup installs it)"
on_b sh -c 'modprobe nf_tables; modprobe ip_tables; modprobe iptable_filter; true' >/dev/null
trap 'on_b iptables -F INPUT >/dev/null' EXIT
check "B drops RoCE v2 arriving on eth0" on_b iptables -I INPUT -i eth0 -p udp --dport 4791 -j DROP

port=18750
# The IPv4 GIDs' indices, as 10-pingpong finds them.
gid_of() { jq -r --arg a "$2" '[.[] | select(.ip == $a) | .index][0] // empty' "$1"; }
"$RDMACTL" -j gids -d "$TWO_DEV" >"$RESULTS/gids-a.json"
on_b "$RDMACTL" -j gids -d "$TWO_PEER_DEV" >"$RESULTS/gids-b.json"
a4=$(gid_of "$RESULTS/gids-a.json" "$TWO_V4")
b4=$(gid_of "$RESULTS/gids-b.json" "$TWO_PEER_V4")
check "IPv4 GIDs: A index '$a4', B index '$b4'" test -n "$a4" -a -n "$b4"
FALSE='switch filtering|RoCE v1 across L3|peer process is alive|find where packets are dropped'
RULE='rule 1 of chain INPUT in table ip filter \(nftables, handle [0-9]+\)'
bg_b fw-server "$RDMACTL" pingpong -d "$TWO_PEER_DEV" -g "${b4:-1}" -p "$port" --timeout 20
check "B's server listens on $port" on_b wait_listen "$port" 30
expect_rc 1 "A's client fails" "$RDMACTL" pingpong -d "$TWO_DEV" -g "${a4:-1}" -p "$port" --timeout 20 "$TWO_PEER_V4"
cp "$LAST_OUT" "$RESULTS/client.txt"
expect_rc 1 "B's server fails" wait_b fw-server 60
expect_out "B: its own firewall is the cause" \
    "why: +the firewall of host vm-b drops the RoCE v2 packets \(UDP 4791\) arriving on eth0 from $TWO_V4, so none is acknowledged: $RULE" \
    cat "$B_RESULTS/fw-server.out" "$B_RESULTS/fw-server.err"
expect_out "B: the rule and its counter" 'its counter: [1-9][0-9]* packets' cat "$B_RESULTS/fw-server.out" "$B_RESULTS/fw-server.err"
expect_out "A: B's cause, relayed" \
    "why: +the server found the cause: the firewall of host vm-b drops the RoCE v2 packets \(UDP 4791\) arriving on eth0 from $TWO_V4" \
    cat "$RESULTS/client.txt"
expect_out "A: B's fix" 'fix: +delete the rule: `iptables -D INPUT 1`' cat "$RESULTS/client.txt"
expect_no_out "A: none of the old guesses" "why:.*($FALSE)|fix:.*($FALSE)" cat "$RESULTS/client.txt"
expect_no_out "B: none of the old guesses" "why:.*($FALSE)|fix:.*($FALSE)" cat "$B_RESULTS/fw-server.out" "$B_RESULTS/fw-server.err"

expect_rc 0 "check on A passes" "$RDMACTL" check -d "$TWO_DEV" -g "${a4:-1}" --peer "$TWO_PEER_V4"
expect_out "A: its firewall passes RoCE v2" "^ok +firewall +this host.s firewall passes RoCE v2 \(UDP 4791\) arriving on eth0 from $TWO_PEER_V4" cat "$LAST_OUT"
expect_rc 1 "check on B fails" on_b "$RDMACTL" check -d "$TWO_PEER_DEV" -g "${b4:-1}" --peer "$TWO_V4"
expect_out "B: FAIL firewall" "^FAIL +firewall +this host.s firewall drops RoCE v2 \(UDP 4791\) arriving on eth0 from $TWO_V4: $RULE" cat "$LAST_OUT"
