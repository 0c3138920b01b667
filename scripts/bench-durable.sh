#!/usr/bin/env bash
# make bench-durable: navd's durable modes beside Redis's append-only file, in one run (issue 38).
#
# navigate/dismiss pairs (one session per loadgen connection), 1 in flight, at 10 and 50
# connections, with 50 and with 10,000 open sessions: navd --ephemeral, --durability process,
# --durability full (state file and log on this disk), and redis-benchmark SET against Redis with
# appendonly yes, appendfsync no and appendfsync always; then the ratios (median of RUNS runs),
# bytes navd wrote per request (write(2) bytes, /proc/PID/io: the replies, and the log's records
# where its segment is not mapped into memory) and the log's compactions.
# Knobs: DUR [3] measured seconds per cell, WARMUP [0.5], RUNS [3], SESSIONS ["50 10000"], PERF_ANCHORS.
set -euo pipefail
export NAVD_TUNED=${NAVD_TUNED:-1}
cd "$(dirname "$0")/.."
. scripts/workload.sh

DUR=${DUR:-3}
WARMUP=${WARMUP:-0.5}
RUNS=${RUNS:-3}
SESSIONS=${SESSIONS:-"50 10000"}
ANCHORS=${PERF_ANCHORS:-../shared/perf-anchors}
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/navd-bench-durable.XXXXXX")  # on disk, not tmpfs: fsync means something
BIN=.build/release
SRV=() CLI=()
if command -v taskset >/dev/null && (( $(nproc) >= 2 )); then SRV=(taskset -c 0); CLI=(taskset -c 1); fi
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "$@" >&2; }
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p; s/^$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }
wait_socket() { for _ in $(seq 400); do [ -S "$1" ] && return 0; sleep 0.05; done; log "bench: $1 did not appear"; exit 1; }

[ -f "$ANCHORS/loadgen.c" ] || { log "bench-durable: needs the perf anchors (PERF_ANCHORS, default ../shared/perf-anchors)"; exit 1; }
install_missing redis-server build-essential
make -s -C "$ANCHORS" >/dev/null
LOADGEN=$ANCHORS/build/loadgen
log "bench-durable: building release navd…"
scripts/build-release.sh --product navd >/dev/null

TEMPLATE=$WORK/pairs.jsonl
write_pairs_template "$TEMPLATE"
RESULTS=$WORK/results.tsv
: >"$RESULTS"
wchar() { awk '/^wchar/{print $2}' "/proc/$1/io"; }

navd_cells() { # NAME SESSIONS ARGS…: loadgen at C=10 and 50, P=1; one line per cell in RESULTS
    local name=$1 n=$2; shift 2
    local sock=$WORK/$name.sock
    "${SRV[@]}" "$BIN/navd" --socket "$sock" --log-level error "$@" 2>>"$WORK/navd.log" &
    local pid=$!
    PIDS+=("$pid")
    wait_socket "$sock"
    open_sessions "$sock" "$n"
    for c in 10 50; do
        local before out after
        before=$(wchar "$pid")
        out=$("${CLI[@]}" "$LOADGEN" -s "$sock" -c "$c" -P 1 -d "$DUR" -w "$WARMUP" -t "$TEMPLATE" -q) || true
        after=$(wchar "$pid")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$name" "$n" "$c" "$(kv rps "$out")" "$(kv p99_us "$out")" \
            "$(awk -v b="$before" -v a="$after" -v r="$(kv rps "$out")" -v d="$(awk -v d="$DUR" -v w="$WARMUP" 'BEGIN{print d+w}')" \
              'BEGIN{ if (r > 0) printf "%.0f", (a - b) / (r * d); else print "-" }')" >>"$RESULTS"
    done
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}

redis_cells() { # NAME ARGS…: redis-benchmark SET at C=10 and 50, P=1
    local name=$1; shift
    local sock=$WORK/$name.redis.sock
    rm -rf "$WORK"/appendonly* "$WORK"/*.aof
    "${SRV[@]}" redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save '' "$@" \
        --daemonize no --dir "$WORK" --logfile "$WORK/redis.log" &
    local pid=$!
    PIDS+=("$pid")
    wait_socket "$sock"
    for _ in $(seq 100); do [ "$(redis-cli -s "$sock" ping 2>/dev/null)" = PONG ] && break; sleep 0.05; done
    for c in 10 50; do
        local out
        out=$("${CLI[@]}" redis-benchmark -s "$sock" -c "$c" -P 1 -n $(( c * 3000 > 60000 ? c * 3000 : 60000 )) --csv -t set 2>/dev/null |
            awk -F',' '/^"SET"/{gsub(/"/, ""); printf "%d %.1f", $2, $7 * 1000}')
        printf '%s\t%s\t-\t%s\t%s\t%s\t-\n' "$run" "$name" "$c" "${out% *}" "${out#* }" >>"$RESULTS"
    done
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}

for run in $(seq "$RUNS"); do
    log "bench-durable: run $run of $RUNS"
    for n in $SESSIONS; do
        navd_cells ephemeral "$n" --ephemeral
        rm -f "$WORK"/state-*; navd_cells process "$n" --state "$WORK/state-p.sqlite" --durability process
        rm -f "$WORK"/state-*; navd_cells full "$n" --state "$WORK/state-f.sqlite" --durability full
    done
    redis_cells aof-no --appendonly yes --appendfsync no
    redis_cells aof-always --appendonly yes --appendfsync always
done

echo "navigate/dismiss pairs, 1 in flight, median of $RUNS run(s) (${DUR}s per cell); Redis: SET"
awk -F'\t' '
    function median(k,   n, i, j, t, a) { n = split(vals[k], a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n ? a[int((n + 1) / 2)] : 0 }
    { k = $2 " " $3 " " $4; vals[k "rps"] = vals[k "rps"] " " $5; vals[k "p99"] = vals[k "p99"] " " $6; vals[k "bytes"] = vals[k "bytes"] " " $7; seen[$3] = 1 }
    END {
        printf "%-9s %5s %12s %12s %12s %11s %12s %10s %10s %10s %10s\n", "sessions", "conns", "ephemeral", "process", "full", "redis no", "redis always",
               "proc/eph", "proc/no", "full/alw", "B/req proc"
        for (n in seen) { if (n == "-") continue
            for (c = 10; c <= 50; c += 40) {
                e = median("ephemeral " n " " c "rps"); p = median("process " n " " c "rps"); f = median("full " n " " c "rps")
                rn = median("aof-no - " c "rps"); ra = median("aof-always - " c "rps"); b = median("process " n " " c "bytes")
                printf "%-9s %5d %12d %12d %12d %11d %12d %10.2f %10.2f %10.2f %10s\n", n, c, e, p, f, rn, ra,
                       (e ? p / e : 0), (rn ? p / rn : 0), (ra ? f / ra : 0), b }
        }
        print "goals (issue 38): process >= 0.8x ephemeral and >= 1.5x Redis appendfsync no; full >= 1.3x Redis appendfsync always"
    }' "$RESULTS"
