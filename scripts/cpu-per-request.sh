#!/usr/bin/env bash
# CPU time and system calls per request, navd beside Redis: where throughput alone cannot say
# which side is slower (both daemons saturate one cpu at P=16), this says what each request costs.
#
#   scripts/cpu-per-request.sh              C=50 P=16, 1,000,000 requests to each daemon
#   C=10 P=16 N=2000000 NAVD=path ...       other connections, depth, count, navd binary
#   NAVD_ARGS="--state F --durability process"   navd's options in place of --ephemeral
#
# navd (--ephemeral) is driven by the perf anchors' loadgen with navigate/dismiss pairs, one session
# per connection; Redis (no persistence) by redis-benchmark SET. Servers on cpu0, clients on cpu1.
# From /proc/PID/stat and /proc/PID/io before and after: user and system nanoseconds, read(2) and
# write(2) calls per request. Needs the perf anchors (PERF_ANCHORS); installs redis-server when missing.
set -euo pipefail
export NAVD_TUNED=${NAVD_TUNED:-1}  # tuned release builds (Package.swift)
cd "$(dirname "$0")/.."
. scripts/workload.sh
ANCHORS=${PERF_ANCHORS:-../shared/perf-anchors}
C=${C:-50}; P=${P:-16}; N=${N:-1000000}
NAVD=${NAVD:-}
[ -f "$ANCHORS/loadgen.c" ] || { echo "cpu-per-request: no perf anchors at $ANCHORS (set PERF_ANCHORS)" >&2; exit 2; }
install_missing redis-server build-essential
make -s -C "$ANCHORS" >/dev/null
if [ -z "$NAVD" ]; then scripts/build-release.sh --product navd >/dev/null; NAVD=.build/release/navd; fi

SRV=() CLI=()
if command -v taskset >/dev/null && (( $(nproc) >= 2 )); then SRV=(taskset -c 0); CLI=(taskset -c 1); fi
WORK=$(mktemp -d /tmp/navd-cpu.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

"${SRV[@]}" "$NAVD" --socket "$WORK/navd.sock" ${NAVD_ARGS:---ephemeral} --log-level error & PIDS+=($!); NP=$!
"${SRV[@]}" redis-server --port 0 --unixsocket "$WORK/redis.sock" --save '' --appendonly no --daemonize no \
    --dir "$WORK" --logfile "$WORK/redis.log" & PIDS+=($!); RP=$!
for _ in $(seq 100); do [ -S "$WORK/navd.sock" ] && [ -S "$WORK/redis.sock" ] && break; sleep 0.05; done

open_sessions "$WORK/navd.sock" "$C"
write_pairs_template "$WORK/pairs.jsonl"

# user and system clock ticks, read and write calls of process $1, and the time (ns)
sample() { echo "$(awk '{print $14, $15}' "/proc/$1/stat") $(awk '/^syscr|^syscw/ {printf "%s ", $2}' "/proc/$1/io") $(date +%s%N)"; }
# name, rate, before, after. "busy" is the server's CPU time over the wall time of the run: near
# 100 % the server was the limit; well below, it waited for its client.
report() {
    local tick; tick=$(getconf CLK_TCK)
    read -r u0 s0 r0 w0 t0 <<<"$3"; read -r u1 s1 r1 w1 t1 <<<"$4"
    awk -v name="$1" -v rps="$2" -v n="$N" -v t="$tick" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v r=$((r1 - r0)) -v w=$((w1 - w0)) \
        -v ns=$((t1 - t0)) \
        'BEGIN { printf "%-6s %10s req/s  user %4.0f ns  sys %4.0f ns  per request;  reads %.4f  writes %.4f per request;  busy %3.0f %%\n",
                 name, rps, u * 1e9 / t / n, s * 1e9 / t / n, r / n, w / n, (u + s) * 1e9 / t / ns * 100 }'
}

echo "C=$C P=$P, $N requests each (servers on cpu0, clients on cpu1 when there are two)"
before=$(sample "$NP")
out=$("${CLI[@]}" "$ANCHORS/build/loadgen" -s "$WORK/navd.sock" -c "$C" -P "$P" -n "$N" -d 300 -t "$WORK/pairs.jsonl" -q)
after=$(sample "$NP")
report navd "$(sed -n 's/^rps=\([0-9]*\).*/\1/p' <<<"$out")" "$before" "$after"
errors=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<<"$out"); [ "${errors:-0}" = 0 ] || echo "navd: $errors errors" >&2

before=$(sample "$RP")
rps=$("${CLI[@]}" redis-benchmark -s "$WORK/redis.sock" -c "$C" -P "$P" -n "$N" --csv -t set 2>/dev/null |
      awk -F',' '/^"SET"/ { gsub(/"/, ""); printf "%d", $2 }')
after=$(sample "$RP")
report redis "$rps" "$before" "$after"
