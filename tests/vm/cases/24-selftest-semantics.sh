# shellcheck shell=bash
# vm-timeout: 400
# rdmactl selftest's semantic steps on rxe: on one device (rxe0) and between two (rxe0, rxe1),
# each step passes and its line says what it proved; --steps runs a subset.

setup='["open","pd","mr","cq","qp create","init","rtr","rts"]'
semantic='["unsignaled","events","solicited","inline","pkey","flush","threads","shared qp","fetch-add","srq"]'
semantic_arg=unsignaled,events,solicited,inline,pkey,flush,threads,shared-qp,fetch-add,srq

# detail_is LABEL FILE STEP REGEX: the step passed and its detail matches.
detail_is() {
    check "selftest $1: $3 ok, detail /$4/" \
        jq -e --arg s "$3" --arg re "$4" '.steps[] | select(.step == $s) | .ok and (.detail | test($re))' "$2"
}

semantics_ok() { # semantics_ok LABEL ARGS...
    local label=$1 json
    shift
    json="$RESULTS/semantics-$label.json"
    expect_rc 0 "selftest $label --steps (all semantic) exits 0" \
        "$RDMACTL" -j selftest "$@" -g 1 --steps "$semantic_arg"
    cp "$LAST_STDOUT" "$json"
    check "selftest $label JSON: setup then the 10 semantic steps, in order, all ok" \
        jq -e --argjson setup "$setup" --argjson semantic "$semantic" \
        '[.steps[].step] == $setup + $semantic and all(.steps[]; .ok) and .ok' "$json"
    detail_is "$label" "$json" unsignaled '^[0-9]+ SENDs, every 4th signalled: [0-9]+ completions, as signalled; at most [0-9]+ outstanding on a send queue of [0-9]+; [0-9]+ receives checked$'
    detail_is "$label" "$json" events '^8 SENDs, 8 events taken from the channel and acknowledged'
    detail_is "$label" "$json" solicited '^unsolicited SEND: received, no event in 300 ms; solicited SEND: event after'
    detail_is "$label" "$json" inline '^max_inline_data [1-9][0-9]*: a [0-9]+-byte inline SEND arrived intact; [0-9]+ bytes refused: (EINVAL|ENOMEM) .*\[inline-too-large: an inline send of [0-9]+ bytes is more than'
    # Debian 12's kernel lets rxe take an index past the table; a kernel that checks it
    # refuses it, and the refusal is explained.
    detail_is "$label" "$json" pkey '^P_Key table \[0\] 0xffff; INIT with index 0 \(0xffff\) holds it; index 1(, past the table, accepted at INIT by rxe0 \(its kernel does not check P_Key indices| refused: EINVAL .*\[pkey-index-past-table: the P_Key index 1 is past the end)'
    detail_is "$label" "$json" flush '^3 receives and 1 SEND \(held by the peer.s RNR NAKs\) flushed: 4 × IBV_WC_WR_FLUSH_ERR, each once$'
    detail_is "$label" "$json" threads '^4 threads × 16 SENDs on their own QPs, one PD and one CQ per end polled by all: every message checked$'
    detail_is "$label" "$json" "shared qp" '^4 threads × 16 SENDs posted at once on one QP: all 64 arrived once, intact$'
    detail_is "$label" "$json" fetch-add 'returned the old word; compare-and-swap on the sum'
    detail_is "$label" "$json" srq '^4 receives posted once on one SRQ; 2 SENDs on QPN 0x[0-9a-f]{6}, 2 SENDs on QPN 0x[0-9a-f]{6}: each message checked$'
    check "selftest $label: the flush step's RNR NAKs raise no counters-rnr finding" \
        jq -e '[.counters.findings[]?.code] | index("counters-rnr") == null' "$json"
}

semantics_ok rxe0 -d rxe0
semantics_ok rxe0+rxe1 -d rxe0 -d rxe1

# The default run is every step; the text has one checked line per semantic step.
expect_rc 0 "selftest (every step) on rxe0+rxe1 exits 0" "$RDMACTL" selftest -d rxe0 -d rxe1 -g 1
for s in unsignaled events solicited inline pkey flush threads "shared qp" fetch-add srq "atomic cas"; do
    expect_out "selftest text: an ok line for $s" "^  ok +[0-9.]+ ms  $s " cat "$LAST_STDOUT"
done
expect_out "selftest text: all steps passed" '^all steps passed$' cat "$LAST_STDOUT"

# A subset: the setup steps, then only what was named.
check "selftest --steps pkey -j runs" "$RDMACTL" -j selftest -d rxe0 -g 1 --steps pkey
check "selftest --steps pkey: setup then pkey only" \
    jq -e --argjson setup "$setup" '[.steps[].step] == $setup + ["pkey"] and .ok' "$LAST_STDOUT"
expect_rc 2 "selftest --steps with an unknown name is a usage error" "$RDMACTL" selftest -d rxe0 --steps nosuch
expect_out "the usage error lists the step names" 'possible values: basic, unsignaled, events' cat "$LAST_OUT"

# The P_Key table the pkey step reads, in ports -v and devices -v (rxe: 0xffff at index 0).
expect_out "ports -v shows the P_Key table" '^rxe0/1 .* \[0\] 0xffff *$' "$RDMACTL" ports -v rxe0/1
check "ports -v -j runs" "$RDMACTL" -j ports -v rxe0
check "ports -v -j: pkeys is [{index 0, pkey 0xffff}]" \
    jq -e '.[0].pkeys == [{"index": 0, "pkey": "0xffff"}]' "$LAST_STDOUT"
check "ports -j (no -v) has no pkeys" sh -c "'$RDMACTL' -j ports rxe0 | jq -e '.[0] | has(\"pkeys\") | not'"
expect_out "devices -v shows the P_Key table" $'^\t\t\tpkeys:\t+\\[0\\] 0xffff$' "$RDMACTL" devices -v -d rxe1
