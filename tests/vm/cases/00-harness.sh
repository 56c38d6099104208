# The harness itself: a failing check is reported as FAIL (with its command and output) and
# counted, timeouts are enforced, and the other helpers judge what they claim to judge.
# Checks that are meant to fail run in a subshell with their own RESULTS directory, so they
# do not fail this case.
nested=$RESULTS/nested
mkdir -p "$nested"

(
    RESULTS=$nested
    check "intentional failure" sh -c 'echo why-it-broke; exit 3'
    expect_rc 2 "intentional wrong exit status" true
    expect_out "intentional missing output" '^never printed$' echo something-else
    CHECK_TIMEOUT=1 check "intentional hang" sleep 30
    check "a passing check" true
) >"$nested/console" 2>&1

check "a failing check is recorded as FAIL" grep -qx $'FAIL\tintentional failure' "$nested/checks"
check "FAIL lines name the command" grep -q 'command: sh -c' "$nested/console"
check "FAIL lines show the tail of the output" grep -q '| why-it-broke' "$nested/console"
check "FAIL lines give the exit status" grep -q 'exit status 3, expected 0' "$nested/console"
check "expect_rc with the wrong status fails" grep -qx $'FAIL\tintentional wrong exit status' "$nested/checks"
check "expect_out without a match fails" grep -qx $'FAIL\tintentional missing output' "$nested/checks"
check "a hanging command is killed by CHECK_TIMEOUT" grep -q 'killed by the 1s check timeout' "$nested/console"
check "a passing check in the same subshell is still PASS" grep -qx $'PASS\ta passing check' "$nested/checks"
expect_out "four of the five nested checks failed" '^4$' grep -c '^FAIL' "$nested/checks"

expect_rc 3 "expect_rc passes on the expected status" sh -c 'exit 3'
expect_out "expect_out matches stderr too" '^on-stderr$' sh -c 'echo on-stderr >&2'
expect_no_out "expect_no_out passes when nothing matches" 'panicked' echo fine

echo '[{"ifname":"rxe0","ports":[{"port":1,"state":"ACTIVE"}]}]' >"$RESULTS/sample.json"
json_has "json_has sees nested records with their parents' fields" "$RESULTS/sample.json" \
    ifname=rxe0 port=1 state=ACTIVE
(
    RESULTS=$nested/json
    json_has "json_has without a match" "$RESULTS/../../sample.json" ifname=rxe0 state=DOWN
) >/dev/null 2>&1
check "json_has without a matching record fails" grep -q '^FAIL' "$nested/json/checks"

bg_server sleeper sleep 30
expect_rc 124 "wait_pid_timeout kills a background job that outlives its deadline" \
    wait_pid_timeout "$BG_PID" 1
bg_server quick sh -c 'exit 7'
expect_rc 7 "wait_pid_timeout returns the job's exit status" wait_pid_timeout "$BG_PID" 10

(RESULTS=$nested/skip && skip "skipping on purpose") >/dev/null
check "skip records a SKIP" grep -qx $'SKIP\tskipping on purpose' "$nested/skip/checks"
check "the network is in its default state" net_is_default
