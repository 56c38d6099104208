# vm-timeout: 240
# rdmactl exporter on real rxe devices: Debian's node_exporter reads the file that
# `exporter --textfile` writes; a real Prometheus scrapes `exporter --listen` every second
# and its query API returns the series of rxe0 and rxe1; veth0 taken down shows up there as
# doctor's port-state finding and as a counted state change. Loopback only.

TEXTDIR=/tmp/textfile
EXP_PORT=10078
NE_PORT=19100
PROM_PORT=19090
mkdir -p "$TEXTDIR"

# The guest has the host's userspace: curl when the host has it, else python3's urllib.
if command -v curl >/dev/null; then
    get() { curl -fsS --max-time 10 "$1"; }
    query() { curl -fsS --max-time 10 -G --data-urlencode "query=$1" "http://127.0.0.1:$PROM_PORT/api/v1/query"; }
else
    get() { python3 -c 'import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$1"; }
    query() { python3 -c 'import sys,urllib.parse,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1] + "?" + urllib.parse.urlencode({"query": sys.argv[2]}), timeout=10).read().decode())' "http://127.0.0.1:$PROM_PORT/api/v1/query" "$1"; }
fi

# until_query EXPR JQ SECS: polls Prometheus until the query's JSON satisfies `jq -e JQ`.
until_query() {
    local deadline=$((SECONDS + $3)) out
    while ((SECONDS < deadline)); do
        out=$(query "$1" 2>/dev/null) && jq -e "$2" >/dev/null 2>&1 <<<"$out" && {
            echo "$out"
            return 0
        }
        sleep 0.5
    done
    echo "after ${3}s: $out" >&2
    return 1
}

# 1. The textfile, read by node_exporter's textfile collector.
check "exporter --textfile writes rdmactl.prom" "$RDMACTL" exporter --textfile "$TEXTDIR"
PROM_FILE=$TEXTDIR/rdmactl.prom
echo "textfile: $(wc -c <"$PROM_FILE") bytes, $(grep -vc '^#' "$PROM_FILE") samples"
check "the textfile passes promtool check metrics" bash -c "promtool check metrics <$PROM_FILE"
expect_out "textfile: rxe0's active MTU from libibverbs" \
    '^rdmactl_port_active_mtu_bytes\{device="rxe0",port="1"\} (1024|2048|4096)$' cat "$PROM_FILE"
expect_out "textfile: rxe's hw_counters exported" '^rdmactl_hw_sent_pkts_total\{device="rxe1",port="1"\} [0-9]+$' cat "$PROM_FILE"
expect_out "textfile: this host's memlock limit" '^rdmactl_memlock_limit_bytes ' cat "$PROM_FILE"
expect_out "textfile: the IPv4 RoCE v2 GID index is 1" \
    '^rdmactl_port_roce_v2_ipv4_gid_index\{device="rxe0",port="1"\} 1$' cat "$PROM_FILE"
expect_no_out "textfile: no failing finding on a healthy host" '^rdmactl_finding\{[^}]*severity="fail"' cat "$PROM_FILE"

bg_start node_exporter prometheus-node-exporter --collector.disable-defaults --collector.textfile \
    "--collector.textfile.directory=$TEXTDIR" "--web.listen-address=127.0.0.1:$NE_PORT"
NE_PID=$BG_PID
check "node_exporter listens" wait_listen "$NE_PORT" 60
expect_out "node_exporter serves rdmactl_port_state of rxe1 from the textfile" \
    '^rdmactl_port_state\{device="rxe1",port="1"\} 4$' get "http://127.0.0.1:$NE_PORT/metrics"
expect_out "node_exporter read the textfile without error" '^node_textfile_scrape_error 0$' \
    get "http://127.0.0.1:$NE_PORT/metrics"
kill "$NE_PID" 2>/dev/null

# 2. --listen, scraped by a real Prometheus every second.
bg_start exporter "$RDMACTL" exporter --listen "127.0.0.1:$EXP_PORT"
EXP_PID=$BG_PID
check "exporter says where it serves" wait_line "$RESULTS/exporter.err" \
    "serving http://127.0.0.1:$EXP_PORT/metrics" 15 "$EXP_PID"
check "/metrics passes promtool check metrics" \
    bash -c "curl -fsS http://127.0.0.1:$EXP_PORT/metrics | promtool check metrics"
for _ in 1 2 3 4 5; do
    get "http://127.0.0.1:$EXP_PORT/metrics" | grep '^rdmactl_scrape_duration_seconds '
done | tee "$RESULTS/scrape-durations"

cat >/tmp/prometheus.yml <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: rdmactl
    static_configs:
      - targets: ['127.0.0.1:$EXP_PORT']
YML
bg_start prometheus prometheus --config.file=/tmp/prometheus.yml --storage.tsdb.path=/tmp/prometheus-data \
    "--web.listen-address=127.0.0.1:$PROM_PORT"
PROM_PID=$BG_PID
check "prometheus listens" wait_listen "$PROM_PORT" 90
check "prometheus scraped rdmactl_port_state of rxe0 and rxe1, both ACTIVE" until_query rdmactl_port_state \
    '[.data.result[] | select(.value[1] == "4") | .metric.device] | sort == ["rxe0","rxe1"]' 60
check "prometheus: the target is up" until_query 'up{job="rdmactl"}' '.data.result[0].value[1] == "1"' 30

# 3. veth0 down: rxe0's port follows; doctor's finding and the state change reach Prometheus.
check "take veth0 down" ip link set veth0 down
check "prometheus: port-state finding for rxe0" until_query \
    'rdmactl_finding{code="port-state",severity="fail",device="rxe0"}' '.data.result | length == 1' 30
check "prometheus: rxe0's state change counted" until_query \
    'rdmactl_port_state_changes_total{device="rxe0",port="1"}' '(.data.result[0].value[1] | tonumber) >= 1' 30
# veth1 loses its carrier with its peer, so rxe1 goes down too: counted, and named.
check "prometheus: rxe1 (veth0's peer) counted too" until_query \
    'rdmactl_port_state_changes_total{device="rxe1",port="1"}' '(.data.result[0].value[1] | tonumber) >= 1' 30
check "bring veth0 up" ip link set veth0 up
restore_net
check "back up: the change back is counted too, and the finding is gone" bash -c "
    for _ in \$(seq 1 40); do
        m=\$(curl -fsS http://127.0.0.1:$EXP_PORT/metrics)
        grep -Eq '^rdmactl_port_state_changes_total\{device=\"rxe0\",port=\"1\"\} ([2-9]|[1-9][0-9]+)\$' <<<\"\$m\" &&
            ! grep -Eq '^rdmactl_finding\\{[^}]*severity=\"fail\"' <<<\"\$m\" && exit 0
        sleep 0.5
    done
    echo \"\$m\" | grep -E 'state_changes|finding'; exit 1"
expect_no_out "the exporter printed no panic" 'panicked' cat "$RESULTS/exporter.err"
kill "$PROM_PID" "$EXP_PID" 2>/dev/null
wait "$PROM_PID" "$EXP_PID" 2>/dev/null
true
