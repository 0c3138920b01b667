#!/usr/bin/env bash
# make bench: navd's throughput, latency and fan-out, printed as tables.
#
#  1. navbench matrix against a release navd (--ephemeral): connections 1 10 50 x depth 1 16 x
#     subscribers 0 100, plus navigate/dismiss at C=10 P=1 with --durability process and full.
#     Then 10,000 idle connections: accepted, served, navd's memory per connection.
#  2. When the perf anchors are present (PERF_ANCHORS, default ../shared/perf-anchors): the same
#     load generator (loadgen) against navd and against the C echo server, redis-benchmark SET against
#     Redis, pub/sub fan-out to 100 subscribers on navd, on the echo server (the most loadgen counts)
#     and on Redis, with each server's messages per second of its own CPU; all in one run, RUNS times,
#     then navd's ratios (median over the runs) and each cell's spread (largest minus smallest run,
#     in percent of the median: navd/redis/echo), with navd --ephemeral and --durability process,
#     and the floor: `ping` (a method that does no work) at 10 connections, 1 and 16 in flight.
#
# Knobs (environment): DUR [2] measured seconds per cell, WARMUP [0.5], RUNS [3],
# CONNS ["1 10 50"], DEPTHS ["1 16"], SUBS ["0 100"], IDLE [10000], PERF_ANCHORS.
# HEADLINE=1: also rewrite BENCHMARKS.md's headline table (between its headline markers) from the
# side-by-side runs, with the machine, the commit and the date.
# Servers run on cpu0 and load generators on cpu1 when the machine has two cpus (as the anchors do).
set -euo pipefail
export NAVD_TUNED=${NAVD_TUNED:-1}  # tuned release builds (Package.swift)
cd "$(dirname "$0")/.."
. scripts/workload.sh

DUR=${DUR:-2}
WARMUP=${WARMUP:-0.5}
RUNS=${RUNS:-3}
CONNS=${CONNS:-"1 10 50"}
DEPTHS=${DEPTHS:-"1 16"}
SUBS=${SUBS:-"0 100"}
IDLE=${IDLE:-10000}
ANCHORS=${PERF_ANCHORS:-../shared/perf-anchors}
WORK=$(mktemp -d /tmp/navd-bench.XXXXXX)
BIN=.build/release

SRV=() CLI=()
if command -v taskset >/dev/null && (( $(nproc) >= 2 )); then SRV=(taskset -c 0); CLI=(taskset -c 1); fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "$@" >&2; }
# kv KEY LINE: the value of KEY= in a key=value line
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p; s/^$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }
wait_socket() { for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done; log "bench: $1 did not appear"; exit 1; }

# start_navd NAME ARGS...: a release navd on $WORK/NAME.sock; sets NAVD_PID and NAVD_SOCK
start_navd() {
    local name=$1; shift
    NAVD_SOCK=$WORK/$name.sock
    "${SRV[@]}" "$BIN/navd" --socket "$NAVD_SOCK" --log-level error "$@" 2>>"$WORK/navd.log" &
    NAVD_PID=$!
    PIDS+=("$NAVD_PID")
    wait_socket "$NAVD_SOCK"
}
stop_navd() { kill -TERM "$NAVD_PID"; wait "$NAVD_PID" 2>/dev/null || true; }

TICK=$(getconf CLK_TCK)
# drive SERVER_PID CMD...: runs the load generator CMD, its output in $OUT, and sets BUSY to
# "S/C": the server's and the client's CPU time over the run, in percent of one cpu (from
# /proc/PID/stat and the shell's `time`). A side near 100 was the limit: a cell whose client is
# at 100 while its server is well below measured the client, not the server.
drive() {
    local pid=$1 t0 t1 s0 s1 times; shift
    s0=$(awk '{print $14 + $15}' "/proc/$pid/stat"); t0=$(date +%s%N)
    times=$( { TIMEFORMAT='%U %S'; time "$@" >"$WORK/cli.out" 2>>"$WORK/cli.err"; } 2>&1 ) || true
    t1=$(date +%s%N); s1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    OUT=$(cat "$WORK/cli.out")
    BUSY=$(awk -v s=$((s1 - s0)) -v tick="$TICK" -v ns=$((t1 - t0)) -v u="${times% *}" -v k="${times#* }" \
        'BEGIN { w = ns / 1e9; printf "%.0f/%.0f", w ? 100 * s / tick / w : 0, w ? 100 * (u + k) / w : 0 }')
}

navbench() { "${CLI[@]}" "$BIN/navbench" --socket "$NAVD_SOCK" --duration "$DUR" --warmup "$WARMUP" "$@"; }

# ---- 1. navbench matrix ------------------------------------------------------------------
if [ "${NAVD_PGO:-}" = off ] || [ ! -f Profiles/navd.profdata ]; then layout="without a profile"; else layout="laid out by Profiles/navd.profdata"; fi
log "bench: building release navd and navbench ($layout)…"
scripts/build-release.sh --product navd >/dev/null
scripts/build-release.sh --product navbench >/dev/null
scripts/build-release.sh --product navctl >/dev/null

start_navd matrix --ephemeral
echo "navbench against navd --ephemeral (${DUR}s per cell, navigate/dismiss pairs, one session per connection)"
fmt="%5s %5s %5s %10s %9s %9s %9s %9s %12s %6s\n"
printf "$fmt" conns depth subs "req/s" p50_us p99_us p99.9_us max_us "notif/s all" errors
for c in $CONNS; do for p in $DEPTHS; do for k in $SUBS; do
    out=$(navbench --connections "$c" --depth "$p" --subscribers "$k") || true
    printf "$fmt" "$c" "$p" "$k" "$(kv rps "$out")" "$(kv p50_us "$out")" "$(kv p99_us "$out")" \
        "$(kv p999_us "$out")" "$(kv max_us "$out")" "$(kv notif_all_rps "$out")" "$(kv errors "$out")"
done; done; done
stop_navd

echo
echo "durable state, navbench --connections 10 --depth 1 (and depth 16)"
printf "%-22s %10s %10s %9s %9s %6s\n" mode "req/s P1" "req/s P16" p99_us_P1 max_us_P1 errors
for mode in process full; do
    start_navd "durable-$mode" --state "$WORK/state-$mode.sqlite" --durability "$mode"
    a=$(navbench --connections 10 --depth 1) || true
    b=$(navbench --connections 10 --depth 16) || true
    printf "%-22s %10s %10s %9s %9s %6s\n" "--durability $mode" "$(kv rps "$a")" "$(kv rps "$b")" "$(kv p99_us "$a")" \
        "$(kv max_us "$a")" "$(( $(kv errors "$a") + $(kv errors "$b") ))"
    stop_navd
done

echo
start_navd idle --ephemeral
python3 scripts/idle-connections.py "$NAVD_SOCK" "$IDLE"
stop_navd

# ---- 2. side by side with the anchors ------------------------------------------------------
if [ ! -f "$ANCHORS/loadgen.c" ]; then
    echo
    echo "(no perf anchors at $ANCHORS: navd's own figures only; set PERF_ANCHORS to compare with echo and Redis)"
    exit 0
fi
install_missing redis-server build-essential
make -s -C "$ANCHORS" >/dev/null
LOADGEN=$ANCHORS/build/loadgen
FANOUT=$ANCHORS/build/redis-fanout

ECHO_SOCK=$WORK/echo.sock REDIS_SOCK=$WORK/redis.sock
"${SRV[@]}" "$ANCHORS/build/echo-server" --quiet "$ECHO_SOCK" 2>/dev/null &
ECHO_PID=$!
PIDS+=("$ECHO_PID")
"${SRV[@]}" redis-server --port 0 --unixsocket "$REDIS_SOCK" --unixsocketperm 700 --save '' --appendonly no \
    --daemonize no --dir "$WORK" --logfile "$WORK/redis.log" &
REDIS_PID=$!
PIDS+=("$REDIS_PID")
wait_socket "$ECHO_SOCK"
wait_socket "$REDIS_SOCK"
for _ in $(seq 100); do [ "$(redis-cli -s "$REDIS_SOCK" ping 2>/dev/null)" = PONG ] && break; sleep 0.05; done

# navd's template: navigate/dismiss pairs, one session per loadgen connection ({{conn}}).
TEMPLATE=$WORK/navigate-dismiss.jsonl
write_pairs_template "$TEMPLATE"
redis_n() { # C P: requests for about DUR seconds of SET
    local rps
    rps=$("${CLI[@]}" redis-benchmark -s "$REDIS_SOCK" -c "$1" -P "$2" -n $(( $1 * $2 * 200 > 20000 ? $1 * $2 * 200 : 20000 )) --csv -t set 2>/dev/null |
        awk -F',' '/^"SET"/{gsub(/"/, ""); print int($2)}')
    awk -v r="${rps:-50000}" -v d="$DUR" 'BEGIN{n=int(r*d); if (n<20000) n=20000; print n}'
}
RESULTS=$WORK/results.tsv
: >"$RESULTS"
for run in $(seq "$RUNS"); do
    log "bench: side-by-side run $run of $RUNS"
    start_navd "side-$run" --ephemeral
    open_sessions "$NAVD_SOCK" 50
    for c in 10 50; do for p in 1 16; do
        drive "$NAVD_PID" "${CLI[@]}" "$LOADGEN" -s "$NAVD_SOCK" -c "$c" -P "$p" -d "$DUR" -w "$WARMUP" -t "$TEMPLATE" -q
        printf '%s\tnavd\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$c" "$p" "$(kv rps "$OUT")" "$(kv p99_us "$OUT")" "$(kv errors "$OUT")" "$(kv p999_us "$OUT")" "$BUSY" >>"$RESULTS"
        drive "$ECHO_PID" "${CLI[@]}" "$LOADGEN" -s "$ECHO_SOCK" -c "$c" -P "$p" -d "$DUR" -w "$WARMUP" -q
        printf '%s\techo\t%s\t%s\t%s\t%s\t%s\t-\t%s\n' "$run" "$c" "$p" "$(kv rps "$OUT")" "$(kv p99_us "$OUT")" "$(kv errors "$OUT")" "$BUSY" >>"$RESULTS"
        n=$(redis_n "$c" "$p")
        drive "$REDIS_PID" "${CLI[@]}" redis-benchmark -s "$REDIS_SOCK" -c "$c" -P "$p" -n "$n" --csv -t set
        out=$(awk -F',' '/^"SET"/{gsub(/"/, ""); printf "%d %.1f", $2, $7 * 1000}' <<<"$OUT")
        printf '%s\tredis\t%s\t%s\t%s\t%s\t-\t-\t%s\n' "$run" "$c" "$p" "${out% *}" "${out#* }" "$BUSY" >>"$RESULTS"
    done; done
    # The floor: `ping`, a method that does no work, through the same transport, parser, dispatch
    # and reply writer; what is between it and navigate/dismiss is the navigation's own cost.
    for p in 1 16; do
        drive "$NAVD_PID" "${CLI[@]}" "$LOADGEN" -s "$NAVD_SOCK" -c 10 -P "$p" -d "$DUR" -w "$WARMUP" -q
        printf '%s\tnavd-ping\t10\t%s\t%s\t%s\t%s\t-\t%s\n' "$run" "$p" "$(kv rps "$OUT")" "$(kv p99_us "$OUT")" "$(kv errors "$OUT")" "$BUSY" >>"$RESULTS"
    done
    # Fan-out: one publisher connection (16 in flight) on session s0, 100 subscribers of s0.
    drive "$NAVD_PID" "${CLI[@]}" "$LOADGEN" -s "$NAVD_SOCK" -c 1 -P 16 -d "$DUR" -w "$WARMUP" -t "$TEMPLATE" -k 100 \
        --subscribe-request '{"jsonrpc":"2.0","id":{{id}},"method":"subscribe","params":{"session":"s0"}}' -q
    printf '%s\tnavd-fanout\t1\t16\t%s\t-\t%s\t-\t%s\n' "$run" "$(kv notif_all_rps "$OUT")" "$(kv errors "$OUT")" "$BUSY" >>"$RESULTS"
    # The same with subscribers that ask for the compact form of stackChanged.
    drive "$NAVD_PID" "${CLI[@]}" "$LOADGEN" -s "$NAVD_SOCK" -c 1 -P 16 -d "$DUR" -w "$WARMUP" -t "$TEMPLATE" -k 100 \
        --subscribe-request '{"jsonrpc":"2.0","id":{{id}},"method":"subscribe","params":{"session":"s0","notifications":"compact"}}' -q
    printf '%s\tnavd-fanout-compact\t1\t16\t%s\t-\t%s\t-\t%s\n' "$run" "$(kv notif_all_rps "$OUT")" "$(kv errors "$OUT")" "$BUSY" >>"$RESULTS"
    # The echo server's own fan-out through the same load generator: what loadgen can count when the
    # server does no work (one fixed 59-byte notification line per request per subscriber).
    drive "$ECHO_PID" "${CLI[@]}" "$LOADGEN" -s "$ECHO_SOCK" -c 1 -P 16 -d "$DUR" -w "$WARMUP" -k 100 -q
    printf '%s\techo-fanout\t1\t16\t%s\t-\t%s\t-\t%s\n' "$run" "$(kv notif_all_rps "$OUT")" "$(kv errors "$OUT")" "$BUSY" >>"$RESULTS"
    drive "$REDIS_PID" "${CLI[@]}" "$FANOUT" -s "$REDIS_SOCK" -n 100 -P 16 -W 4096 -z 40 -d "$DUR" -w "$WARMUP" -q
    printf '%s\tredis-fanout\t1\t16\t%s\t-\t%s\t-\t%s\n' "$run" "$(kv notif_all_rps "$OUT")" "$(kv errors "$OUT")" "$BUSY" >>"$RESULTS"
    stop_navd
    # Durable state: every commit written to SQLite before its reply (--durability process).
    start_navd "durable-side-$run" --state "$WORK/side-$run.sqlite" --durability process
    open_sessions "$NAVD_SOCK" 50
    for cp in "10 1" "50 1" "10 16"; do
        set -- $cp
        drive "$NAVD_PID" "${CLI[@]}" "$LOADGEN" -s "$NAVD_SOCK" -c "$1" -P "$2" -d "$DUR" -w "$WARMUP" -t "$TEMPLATE" -q
        printf '%s\tnavd-durable\t%s\t%s\t%s\t%s\t%s\t-\t%s\n' "$run" "$1" "$2" "$(kv rps "$OUT")" "$(kv p99_us "$OUT")" "$(kv errors "$OUT")" "$BUSY" >>"$RESULTS"
    done
    stop_navd
done

echo
echo "side by side, same load generator and socket kind, median of $RUNS run(s) (navd --ephemeral)"
HEAD_MD=$WORK/headline.md
awk -F'\t' -v runs="$RUNS" -v md="$HEAD_MD" '
    function median(key,   n, i, j, t, a) {
        n = split(vals[key], a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n ? a[int((n + 1) / 2)] : 0
    }
    # How far the runs lie apart: (largest - smallest) / median, in percent.
    function spread(key,   n, i, lo, hi, m, a) {
        n = split(vals[key], a, " ")
        if (n < 2) return "-"
        lo = hi = a[1] + 0
        for (i = 2; i <= n; i++) { if (a[i] + 0 < lo) lo = a[i] + 0; if (a[i] + 0 > hi) hi = a[i] + 0 }
        m = median(key)
        return m ? sprintf("%.0f%%", 100 * (hi - lo) / m) : "-"
    }
    { k = $2 " " $3 " " $4; vals[k "rps"] = vals[k "rps"] " " $5; vals[k "p99"] = vals[k "p99"] " " $6; err[$2] += ($7 == "-" ? 0 : $7)
      if ($8 != "-") vals[k "p999"] = vals[k "p999"] " " $8
      split($9, b, "/"); vals[k "srv"] = vals[k "srv"] " " b[1]; vals[k "cli"] = vals[k "cli"] " " b[2]
      # What the server did per second of its own CPU (req/s or messages/s over its busy share).
      if (b[1] > 0) vals[k "eff"] = vals[k "eff"] " " int($5 * 100 / b[1]) }
    # "S/C": the median CPU busy share of the server and of its load generator in a cell, in percent.
    function busy(key) { return sprintf("%d/%d", median(key "srv"), median(key "cli")) }
    # The fan-out rows: navd cell `cell` beside Redis PUBLISH and the echo server, printed as `label`
    # and written to the headline as `name`.
    function fanout(cell, label, name,   n, r, e, sp, cpu) {
        n = median(cell " 1 16rps"); r = median("redis-fanout 1 16rps"); e = median("echo-fanout 1 16rps")
        sp = spread(cell " 1 16rps") "/" spread("redis-fanout 1 16rps") "/" spread("echo-fanout 1 16rps")
        cpu = busy(cell " 1 16") "; " busy("redis-fanout 1 16") "; " busy("echo-fanout 1 16")
        printf "%-28s %10d %10d %10d %8.2f %8.2f %14s  %s\n", label, n, r, e, (r ? n / r : 0), (e ? n / e : 0), sp, cpu
        row(name, n, r, e, sprintf("%.2f", r ? n / r : 0), sprintf("%.2f", e ? n / e : 0), ">= 1.5 Redis PUBLISH", sp, cpu)
    }
    # The navd cell `cell` (of server `navd`: navd or navd-ping) beside the same cell of Redis and the echo
    # server, printed as `label` with `goal` and written to the headline as `name` with `rowgoal`.
    function beside(navd, cell, label, goal, name, rowgoal,   n, r, e, sp, cpu) {
        n = median(navd " " cell "rps"); r = median("redis " cell "rps"); e = median("echo " cell "rps")
        sp = spread(navd " " cell "rps") "/" spread("redis " cell "rps") "/" spread("echo " cell "rps")
        cpu = busy(navd " " cell) "; " busy("redis " cell) "; " busy("echo " cell)
        printf "%-28s %10d %10d %10d %8.2f %8s %14s  %s\n", label, n, r, e, (r ? n / r : 0), goal, sp, cpu
        row(name, n, r, e, sprintf("%.2f", r ? n / r : 0), sprintf("%.2f", e ? n / e : 0), rowgoal, sp, cpu)
    }
    # One row of the headline table (markdown), beside the printed one.
    function row(name, n, r, e, ratio, eratio, goal, sp, cpu) {
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, n, r, e, ratio, eratio, goal, sp, cpu > md
    }
    END {
        printf "%-28s %10s %10s %10s %8s %8s %14s  %s\n", "workload", "navd", "redis SET", "echo", "ratio", "goal", "spread n/r/e", "busy % server/client n; r; e"
        print "| workload | navd | Redis | C echo | navd / Redis | navd / echo | goal | spread navd/Redis/echo | CPU busy %, server/client: navd; Redis; echo |" > md
        print "|---|---|---|---|---|---|---|---|---|" > md
        split("10 1,10 16,50 1,50 16", cells, ",")
        for (i = 1; i <= 4; i++) {
            split(cells[i], cp, " ")
            beside("navd", cells[i], "navigate/dismiss C=" cp[1] " P=" cp[2] " req/s", ">= 1", cp[1] " connections, " cp[2] " in flight, req/s",
                   cp[2] == 16 ? ">= 1.5 Redis, >= 0.6 echo" : ">= 0.9 echo")
        }
        # The floor rows: ping (no method work) beside the same cells of Redis and the echo server.
        for (p = 1; p <= 16; p += 15)
            beside("navd-ping", "10 " p, "  ping (no method) C=10 P=" p, "(floor)", "floor: `ping` (a method that does no work), 10 connections, " p " in flight", "(info)")
        split("10 1,50 1,10 16", dcells, ",")
        for (i = 1; i <= 3; i++) {
            split(dcells[i], cp, " ")
            n = median("navd-durable " dcells[i] "rps"); r = median("redis " dcells[i] "rps"); e = median("navd " dcells[i] "rps")
            printf "%-28s %10d %10d %10s %8.2f %8s %14s\n", "  durable (default) C=" cp[1] " P=" cp[2], n, r, "-", (r ? n / r : 0), "(info)",
                   spread("navd-durable " dcells[i] "rps") "/" spread("redis " dcells[i] "rps") "/-"
            printf "%-28s %10.2f %10s %10s %8s %8s\n", "    durable / ephemeral", (e ? n / e : 0), "-", "-", "-", ">= 0.8"
            row("default durable mode, " cp[1] " connections, " cp[2] " in flight", n, r, "-", sprintf("%.2f", r ? n / r : 0),
                sprintf("%.2f of ephemeral", e ? n / e : 0), ">= 0.8 ephemeral", spread("navd-durable " dcells[i] "rps") "/" spread("redis " dcells[i] "rps") "/-",
                busy("navd-durable " dcells[i]) "; " busy("redis " dcells[i]) "; -")
        }
        n = median("navd 10 16p99"); x = median("navd 10 16p999"); r = median("redis 10 16p99")
        printf "%-28s %10.0f %10.0f %10s %8s %8s\n", "p99/p999 us C=10 P=16", n, r, "-", sprintf("%.0f", x), "(p999)"
        row("latency, 10 connections, 16 in flight", sprintf("p99 %.0f us, p999 %.0f us", n, x), sprintf("p99 %.0f us", r), "-", "-", "-", "p99 not worse", "-", "-")
        n = median("navd 50 1p99"); r = median("redis 50 1p99")
        printf "%-28s %10.0f %10.0f %10s %8.2f %8s\n", "p99 us C=50 P=1", n, r, "-", (r ? n / r : 0), "<= 1"
        # The echo column of the fan-out rows: the fan-out of the echo server itself through loadgen, the
        # most loadgen counts (it reads all 100 subscribers on one cpu).
        fanout("navd-fanout", "fan-out to 100, msgs/s all", "fan-out to 100 subscribers, messages/s to all")
        fanout("navd-fanout-compact", "  same, compact subscribers", "same, subscribers in the compact form")
        # A fan-out cell can measure loadgen (one cpu reading 100 subscribers), not the server: per
        # second of the server CPU tells what the server itself would carry.
        n = median("navd-fanout-compact 1 16eff"); r = median("redis-fanout 1 16eff"); e = median("echo-fanout 1 16eff")
        printf "%-28s %10d %10d %10d %8.2f %8.2f\n", "  same, per s of server CPU", n, r, e, (r ? n / r : 0), (e ? n / e : 0)
        row("same, compact, messages to all per second of server CPU", n, r, e, sprintf("%.2f", r ? n / r : 0), sprintf("%.2f", e ? n / e : 0), "(info)",
            spread("navd-fanout-compact 1 16eff") "/" spread("redis-fanout 1 16eff") "/" spread("echo-fanout 1 16eff"), "-")
        printf "errors: navd %d, navd ping %d, navd durable %d, navd fan-out %d\n", err["navd"], err["navd-ping"], err["navd-durable"], err["navd-fanout"] + err["navd-fanout-compact"]
    }' "$RESULTS"

if [ -n "${HEADLINE:-}" ]; then
    python3 scripts/bench-headline.py "$HEAD_MD" "$RUNS" "$DUR"
fi

