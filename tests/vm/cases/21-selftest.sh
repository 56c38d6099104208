# shellcheck shell=bash
# rdmactl selftest: two QPs in one process on rxe0, and one QP on each of rxe0 and rxe1.

steps='["open","pd","mr","cq","qp create","init","rtr","rts","post recv","send","rdma write","rdma read","atomic cas","zero-byte send","poll","unsignaled","events","solicited","inline","pkey","flush","threads","shared qp","fetch-add","srq"]'

selftest_ok() { # selftest_ok LABEL ARGS...
    local label=$1
    shift
    expect_rc 0 "selftest $label exits 0" "$RDMACTL" selftest "$@" -g 1
    expect_out "selftest $label: every step ok" '^all steps passed$' cat "$LAST_STDOUT"
    expect_no_out "selftest $label: no FAIL line" 'FAIL' cat "$LAST_STDOUT"
    check "selftest $label -j runs" "$RDMACTL" -j selftest "$@" -g 1
    cp "$LAST_STDOUT" "$RESULTS/selftest-$label.json"
    check "selftest $label JSON: 25 steps, all ok, in order" \
        jq -e --argjson want "$steps" '[.steps[].step] == $want and all(.steps[]; .ok) and .ok' \
        "$RESULTS/selftest-$label.json"
}

selftest_ok rxe0 -d rxe0
selftest_ok rxe0+rxe1 -d rxe0 -d rxe1

expect_rc 3 "selftest on a missing device exits 3" "$RDMACTL" selftest -d nosuch0 -g 1
expect_out "selftest on a missing device lists what exists" "no device 'nosuch0'; devices: rxe0, rxe1" cat "$LAST_OUT"

expect_out "selftest -g auto on rxe0+rxe1 names the chosen index and why" \
    '^rdmactl: -g auto on rxe1/1: chose GID index 1 \(RoCE v2, ::ffff:192\.168\.77\.2 on veth1\): RoCE v2, IPv4' \
    "$RDMACTL" selftest -d rxe0 -d rxe1 -g auto
check "selftest -g auto exits 0 with every step passed" test "$LAST_RC" -eq 0 -a -n "$(grep -x 'all steps passed' "$LAST_STDOUT")"
# Without -d the first device libibverbs lists (rxe0), as ibv_rc_pingpong picks it.
expect_rc 0 "selftest without -d (the first device) exits 0" "$RDMACTL" selftest -g 1
expect_out "selftest without -d ran on rxe0" 'rxe0' cat "$LAST_OUT"
