#!/usr/bin/env bash
# Two navd binaries compared in the same time window: where this VM's speed swings by tens of
# percent from one second to the next, runs taken one after the other cannot tell a 5 % change
# from noise, but two servers sharing one cpu through the same seconds see the same noise.
#
#   scripts/duel.sh OLD NEW             C=50 P=16, 5 s, three rounds
#   C=10 P=1 D=3 R=5 scripts/duel.sh A B
#   DURABILITY=process scripts/duel.sh A B   each with a state file of its own (else --ephemeral)
#
# Both servers run at once on cpu0, each driven by its own perf-anchors loadgen on
# cpu1 with navigate/dismiss pairs (one session per connection). Each round prints, per binary, the
# CPU time navd used per request (from /proc/PID/stat) and the requests it served. The same binary
# twice comes out within about 0.5 %.
set -euo pipefail
export NAVD_TUNED=${NAVD_TUNED:-1}  # tuned release builds (Package.swift)
cd "$(dirname "$0")/.."
. scripts/workload.sh
[ $# -eq 2 ] || { echo "usage: scripts/duel.sh NAVD_A NAVD_B" >&2; exit 2; }
ANCHORS=${PERF_ANCHORS:-../shared/perf-anchors}
[ -f "$ANCHORS/loadgen.c" ] || { echo "duel: no perf anchors at $ANCHORS (set PERF_ANCHORS)" >&2; exit 2; }
make -s -C "$ANCHORS" >/dev/null
C=${C:-50}; P=${P:-16}; D=${D:-5}; R=${R:-3}
TICK=$(getconf CLK_TCK)
WORK=$(mktemp -d /tmp/navd-duel.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
write_pairs_template "$WORK/pairs.jsonl"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

for round in $(seq "$R"); do
    PIDS=()
    for i in 0 1; do
        bin=${*:$((i + 1)):1}
        if [ -n "${DURABILITY:-}" ]; then
            rm -f "$WORK/$i.sqlite"*; state=(--state "$WORK/$i.sqlite" --durability "$DURABILITY")
        else
            state=(--ephemeral)
        fi
        taskset -c 0 "$bin" --socket "$WORK/$i.sock" "${state[@]}" --log-level error &
        PIDS+=($!)
    done
    for i in 0 1; do
        for _ in $(seq 100); do [ -S "$WORK/$i.sock" ] && break; sleep 0.05; done
        open_sessions "$WORK/$i.sock" "$C"
    done
    before=($(cpu_ticks "${PIDS[0]}") $(cpu_ticks "${PIDS[1]}"))
    gens=()
    for i in 0 1; do
        taskset -c 1 "$ANCHORS/build/loadgen" -s "$WORK/$i.sock" -c "$C" -P "$P" -d "$D" -t "$WORK/pairs.jsonl" -q >"$WORK/$i.out" 2>&1 &
        gens+=($!)
    done
    wait "${gens[@]}"
    line="round $round (C=$C P=$P, ${D} s):"
    for i in 0 1; do
        ok=$(sed -n 's/.* ok=\([0-9]*\).*/\1/p' "$WORK/$i.out")
        errors=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' "$WORK/$i.out")
        used=$(( $(cpu_ticks "${PIDS[$i]}") - before[i] ))
        line+=$(printf "   %s %d ns/request, %d requests, %s errors" "${*:$((i + 1)):1}" $(( used * 1000000000 / TICK / ok )) "$ok" "$errors")
    done
    kill "${PIDS[@]}"; wait "${PIDS[@]}" 2>/dev/null || true
    rm -f "$WORK"/*.sock
    echo "$line"
done
