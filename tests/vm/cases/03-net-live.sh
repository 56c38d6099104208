# The netlink gatherer against iproute2 on a live kernel: the unit tests that are ignored on
# the build machine (they need addressed netdevs and neighbour entries) run here, where they
# must pass. A permanent neighbour entry on each veth gives the neighbour comparison data.
UNIT=/tmp/rdmactl-bin/rdmactl-unit

check "the unit-test binary is here" test -x "$UNIT"
check "a neighbour entry on veth0" ip neigh replace 192.168.77.9 lladdr 02:00:00:00:00:09 dev veth0 nud permanent
check "a neighbour entry on veth1" ip neigh replace 192.168.77.10 lladdr 02:00:00:00:00:0a dev veth1 nud permanent
expect_out "route lookups match ip -j route get (loopback and on-link, with and without oif)" \
  'test gather::net::live_tests::route_get_matches_ip_route_get \.\.\. ok' "$UNIT" --ignored --exact gather::net::live_tests::route_get_matches_ip_route_get
expect_out "links and addresses match ip -j addr" \
  'test gather::net::live_tests::links_and_addresses_match_ip \.\.\. ok' "$UNIT" --ignored --exact gather::net::live_tests::links_and_addresses_match_ip
expect_out "neighbours match ip -j neigh" \
  'test gather::net::live_tests::neighbours_match_ip_neigh \.\.\. ok' "$UNIT" --ignored --exact gather::net::live_tests::neighbours_match_ip_neigh
expect_rc 0 "every live netlink test passes" "$UNIT" --ignored gather::net::live_tests
ip neigh del 192.168.77.9 dev veth0 2>/dev/null
ip neigh del 192.168.77.10 dev veth1 2>/dev/null
