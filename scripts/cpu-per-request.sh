#!/usr/bin/env bash
# CPU time and system calls per request, navd beside Redis and the C echo server: where throughput
# alone cannot say which side is slower (both daemons saturate one cpu at P=16), this says what
# each request costs, in the server's own code (user) and in the kernel (sys).
#
#   scripts/cpu-per-request.sh              C=50 P=16, 1,000,000 requests to each daemon
#   C=10 P=16 N=2000000 NAVD=path ...       other connections, depth, count, navd binary
#   NAVD_ARGS="--state F --durability process"   navd's options in place of --ephemeral
#
# navd (--ephemeral) is driven by the perf anchors' loadgen with navigate/dismiss pairs, one session
# per connection, then with `ping` (a method that does no work: the transport, parser, dispatch and
# reply alone); the anchors' echo server by loadgen with the same pairs; Redis (no persistence) by
# redis-benchmark SET. Servers on cpu0, clients on cpu1. The last lines say how much CPU navd's own
# code may spend on a request for issue 51's goals (1.5 x Redis pipelined, 0.9 of the echo server at
# one in flight), given the kernel time navd spends now: the budget beside what it spends.
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
"${SRV[@]}" "$ANCHORS/build/echo-server" --quiet "$WORK/echo.sock" 2>/dev/null & PIDS+=($!); EP=$!
"${SRV[@]}" redis-server --port 0 --unixsocket "$WORK/redis.sock" --save '' --appendonly no --daemonize no \
    --dir "$WORK" --logfile "$WORK/redis.log" & PIDS+=($!); RP=$!
for _ in $(seq 100); do [ -S "$WORK/navd.sock" ] && [ -S "$WORK/redis.sock" ] && [ -S "$WORK/echo.sock" ] && break; sleep 0.05; done

open_sessions "$WORK/navd.sock" "$C"
write_pairs_template "$WORK/pairs.jsonl"

# user and system clock ticks, read and write calls of process $1, and the time (ns)
sample() { echo "$(awk '{print $14, $15}' "/proc/$1/stat") $(awk '/^syscr|^syscw/ {printf "%s ", $2}' "/proc/$1/io") $(date +%s%N)"; }
# name, rate, before, after: prints a row, and keeps the user and sys ns per request in U_name and
# S_name. "busy" is the server's CPU time over the wall time of the run: near 100 % the server was
# the limit; well below, it waited for its client.
report() {
    local tick un sn; tick=$(getconf CLK_TCK)
    read -r u0 s0 r0 w0 t0 <<<"$3"; read -r u1 s1 r1 w1 t1 <<<"$4"
    read -r un sn < <(awk -v n="$N" -v t="$tick" -v u=$((u1 - u0)) -v s=$((s1 - s0)) \
        'BEGIN { printf "%.0f %.0f\n", u * 1e9 / t / n, s * 1e9 / t / n }')
    awk -v name="$1" -v rps="$2" -v n="$N" -v t="$tick" -v un="$un" -v sn="$sn" -v r=$((r1 - r0)) -v w=$((w1 - w0)) \
        -v cpu=$((u1 - u0 + s1 - s0)) -v ns=$((t1 - t0)) \
        'BEGIN { printf "%-10s %10s req/s  user %4d ns  sys %4d ns  per request;  reads %.4f  writes %.4f per request;  busy %3.0f %%\n",
                 name, rps, un, sn, r / n, w / n, cpu * 1e9 / t / ns * 100 }'
    local key=${1// /_}
    printf -v "U_$key" '%s' "$un"
    printf -v "S_$key" '%s' "$sn"
}
# name, pid, socket, loadgen options: one loadgen run against a server, reported
drive_loadgen() {
    local name=$1 pid=$2 sock=$3 before after out errors; shift 3
    before=$(sample "$pid")
    out=$("${CLI[@]}" "$ANCHORS/build/loadgen" -s "$sock" -c "$C" -P "$P" -n "$N" -d 300 -q "$@")
    after=$(sample "$pid")
    report "$name" "$(sed -n 's/^rps=\([0-9]*\).*/\1/p' <<<"$out")" "$before" "$after"
    errors=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<<"$out"); [ "${errors:-0}" = 0 ] || echo "$name: $errors errors" >&2
}

echo "C=$C P=$P, $N requests each (servers on cpu0, clients on cpu1 when there are two)"
drive_loadgen navd "$NP" "$WORK/navd.sock" -t "$WORK/pairs.jsonl"
drive_loadgen "navd ping" "$NP" "$WORK/navd.sock"
drive_loadgen echo "$EP" "$WORK/echo.sock" -t "$WORK/pairs.jsonl"

before=$(sample "$RP")
rps=$("${CLI[@]}" redis-benchmark -s "$WORK/redis.sock" -c "$C" -P "$P" -n "$N" --csv -t set 2>/dev/null |
      awk -F',' '/^"SET"/ { gsub(/"/, ""); printf "%d", $2 }')
after=$(sample "$RP")
report redis "$rps" "$before" "$after"

# The goals' budget for navd's own code: the CPU a request may take in all, less the kernel time
# for the same reads and writes: navd's now, and ping's (a server that answers sooner leaves its
# client idle less often, and waking an idle client is part of a write's kernel time).
awk -v p="$P" -v un="$U_navd" -v sn="$S_navd" -v up="$U_navd_ping" -v sp="$S_navd_ping" -v ur="$U_redis" -v sr="$S_redis" \
    -v ue="$U_echo" -v se="$S_echo" 'BEGIN {
    if (p > 1) { goal = "1.5 x Redis"; total = (ur + sr) / 1.5 } else { goal = "0.9 of the echo server"; total = (ue + se) / 0.9 }
    printf "for %s: at most %.0f ns a request in all; navd'"'"'s own code may take %.0f ns beside its kernel time now (%.0f), %.0f beside ping'"'"'s (%.0f);\n", goal, total, total - sn, sn, total - sp, sp
    printf "navd'"'"'s own code takes %.0f ns, ping'"'"'s %.0f\n", un, up }'
