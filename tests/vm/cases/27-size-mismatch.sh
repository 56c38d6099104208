# shellcheck shell=bash
# vm-timeout: 300
# Issue 26 case 3: a SEND larger than the posted receive, with a peer that speaks
# ibv_rc_pingpong's exchange (which does not carry -s). Both directions, against the stock
# ibv_rc_pingpong and between two rdmactl ends with --compat rc_pingpong.
#
# Measured on rxe (kernel 6.1, Debian 12), before the rules were written:
#   ibv_rc_pingpong -s 8192 -> rdmactl server (4096): the server's receive completes with
#     IBV_WC_LOC_QP_OP_ERR (status 2, opcode 0, vendor_err 0); the stock client's SEND with
#     "remote operation error (11) for wr_id 2".
#   ibv_rc_pingpong (4096) -> rdmactl server -s 8192: the server's receive of the first
#     4096 bytes succeeds, its 8192-byte SEND completes with IBV_WC_REM_OP_ERR (11); the
#     stock client's receive with "local QP operation error (2) for wr_id 1".
#   The same statuses with rdmactl --compat rc_pingpong as the client, against a stock
#   server or an rdmactl server. Hardware reports LOC_LEN_ERR / REM_INV_REQ_ERR instead;
#   the same rule reads those (unit tests).
# Every rdmactl end names the size words and never a namespace, a kill or a link.

SERVER_IP=192.168.77.1
port=19270
next_port() { port=$((port + 1)); }
TRUE_WORDS='larger than the posted receive'
FIX_WORDS="use the same -s on both ends; ibv_rc_pingpong's exchange does not carry -s"
FALSE_WORDS='namespace|killed|link went down|no rule explains'

# says_size_mismatch LABEL FILE [SIZE_WORDS...]: the rdmactl end's report in FILE.
says_size_mismatch() {
    local label=$1 file=$2 w
    shift 2
    expect_out "$label: the true cause" "$TRUE_WORDS" one_line "$file"
    expect_out "$label: the fix" "$FIX_WORDS" one_line "$file"
    expect_out "$label: the stock exchange named" "ibv_rc_pingpong's exchange, which does not carry -s" one_line "$file"
    for w in "$@"; do
        expect_out "$label: names $w" "$w" one_line "$file"
    done
    expect_no_out "$label: no false cause" "$FALSE_WORDS" cat "$file"
}

if command -v ibv_rc_pingpong >/dev/null; then
    # --- 1. stock client -s 8192, rdmactl server (4096): the server's receive fails
    next_port
    bg_start stock-big-srv "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20 --timeout 5
    srv=$BG_PID
    wait_listen "$port" 15
    expect_rc 1 "stock client -s 8192: the stock client fails" \
        ibv_rc_pingpong -d rxe1 -g 1 -p "$port" -n 20 -s 8192 "$SERVER_IP"
    expect_out "stock client -s 8192: rxe gives its SEND REM_OP_ERR" 'remote operation error \(11\)' cat "$LAST_OUT"
    wait_pid_timeout "$srv" 15
    check "stock client -s 8192: the rdmactl server exits 1" test $? -eq 1
    expect_out "stock client -s 8192: the server's receive got LOC_QP_OP_ERR" \
        'IBV_WC_LOC_QP_OP_ERR' cat "$RESULTS/stock-big-srv.err"
    says_size_mismatch "stock client -s 8192, server" "$RESULTS/stock-big-srv.err" \
        'a receive' '4096 bytes'

    # --- 2. stock client (4096), rdmactl server -s 8192: the server's SEND fails
    next_port
    bg_start stock-small-srv "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20 -s 8192 --timeout 5
    srv=$BG_PID
    wait_listen "$port" 15
    expect_rc 1 "rdmactl server -s 8192: the stock client fails" \
        ibv_rc_pingpong -d rxe1 -g 1 -p "$port" -n 20 "$SERVER_IP"
    expect_out "rdmactl server -s 8192: rxe gives the stock receive LOC_QP_OP_ERR" \
        'local QP operation error \(2\)' cat "$LAST_OUT"
    wait_pid_timeout "$srv" 15
    check "rdmactl server -s 8192: exits 1" test $? -eq 1
    expect_out "rdmactl server -s 8192: its SEND got REM_OP_ERR" 'IBV_WC_REM_OP_ERR' cat "$RESULTS/stock-small-srv.err"
    says_size_mismatch "rdmactl server -s 8192" "$RESULTS/stock-small-srv.err" \
        "8192-byte SEND" 'a SEND'

    # --- 3. rdmactl --compat client -s 8192 against a stock server: the client's SEND fails
    next_port
    bg_start compat-big-stock ibv_rc_pingpong -d rxe0 -g 1 -p "$port" -n 20
    srv=$BG_PID
    wait_listen "$port" 15
    expect_rc 1 "--compat client -s 8192, stock server: exits 1" \
        "$RDMACTL" pingpong --compat rc_pingpong -d rxe1 -g 1 -p "$port" -n 20 -s 8192 --timeout 5 "$SERVER_IP"
    cp "$LAST_OUT" "$RESULTS/compat-big-stock-client.out"
    says_size_mismatch "--compat client -s 8192, stock server" "$RESULTS/compat-big-stock-client.out" \
        "8192-byte SEND"
    wait_pid_timeout "$srv" 15 >/dev/null

    # --- 4. rdmactl --compat client (4096) against a stock server -s 8192: its receive fails
    next_port
    bg_start compat-small-stock ibv_rc_pingpong -d rxe0 -g 1 -p "$port" -n 20 -s 8192
    srv=$BG_PID
    wait_listen "$port" 15
    expect_rc 1 "--compat client, stock server -s 8192: exits 1" \
        "$RDMACTL" pingpong --compat rc_pingpong -d rxe1 -g 1 -p "$port" -n 20 --timeout 5 "$SERVER_IP"
    cp "$LAST_OUT" "$RESULTS/compat-small-stock-client.out"
    says_size_mismatch "--compat client, stock server -s 8192" "$RESULTS/compat-small-stock-client.out" \
        '4096 bytes'
    wait_pid_timeout "$srv" 15 >/dev/null
else
    skip_here "ibv_rc_pingpong is not installed"
fi

# --- 5. two rdmactl ends, --compat rc_pingpong client -s 8192: both ends name the cause
next_port
bg_start both-srv "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20 --timeout 5
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "rdmactl --compat -s 8192 to rdmactl: the client exits 1" \
    "$RDMACTL" pingpong --compat rc_pingpong -d rxe1 -g 1 -p "$port" -n 20 -s 8192 --timeout 5 "$SERVER_IP"
cp "$LAST_OUT" "$RESULTS/both-client.out"
wait_pid_timeout "$srv" 15
check "rdmactl --compat -s 8192 to rdmactl: the server exits 1" test $? -eq 1
says_size_mismatch "rdmactl to rdmactl, client (sender)" "$RESULTS/both-client.out" "8192-byte SEND"
says_size_mismatch "rdmactl to rdmactl, server (receiver)" "$RESULTS/both-srv.err" '4096 bytes'

# --- 6. the same the other way round, -j on both ends: the code is the contract
next_port
bg_start json-srv "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" -n 20 -s 8192 --timeout 5
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "-j, server -s 8192: the client exits 1" \
    "$RDMACTL" -j pingpong --compat rc_pingpong -d rxe1 -g 1 -p "$port" -n 20 --timeout 5 "$SERVER_IP"
cp "$LAST_STDOUT" "$RESULTS/json-client.json"
wait_pid_timeout "$srv" 15 >/dev/null
check "-j client (receiver): code send-larger-than-receive" \
    jqf '.failure.explanation.code == "send-larger-than-receive"' "$RESULTS/json-client.json"
check "-j client: the failed request is named RECV" \
    jqf '.failure.cause.op == "RECV"' "$RESULTS/json-client.json"
check "-j server (sender): code send-larger-than-receive" \
    jqf '.failure.explanation.code == "send-larger-than-receive"' "$RESULTS/json-srv.out"
check "-j server: the failed request is named SEND" \
    jqf '.failure.cause.op == "SEND"' "$RESULTS/json-srv.out"
expect_no_out "-j both ends: no false cause" "$FALSE_WORDS" cat "$RESULTS/json-client.json" "$RESULTS/json-srv.out"
