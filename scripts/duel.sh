#!/usr/bin/env bash
# Two navd binaries compared in the same time window: where this VM's speed swings by tens of
# percent from one second to the next, runs taken one after the other cannot tell a 5 % change
# from noise, but two servers sharing one cpu through the same seconds see the same noise.
#
#   scripts/duel.sh OLD NEW             C=50 P=16, 5 s, three rounds
#   C=10 P=1 D=3 R=5 scripts/duel.sh A B
#   DURABILITY=process scripts/duel.sh A B   each with a state file of its own (else --ephemeral)
#   DURABILITY_B=process scripts/duel.sh A A  one side's mode alone (DURABILITY_A, DURABILITY_B): the
#                                      same binary durable against ephemeral, through the same seconds
#
# Both servers run at once on cpu0, each driven by its own perf-anchors loadgen on
# cpu1 with navigate/dismiss pairs (one session per connection). Each round prints, per binary, the
# CPU time navd used per request (from /proc/PID/stat) and the requests it served; the rounds take
# turns at which binary and which load generator start first. The last line is the median of the
# rounds' differences and in how many rounds NEW used less. The same binary twice comes out within
# about 0.5 % in most runs, but two runs of one pair have differed by 1.5 % in their medians: a
# difference under ~2 % needs two runs that agree.
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

DIFFS=()
for round in $(seq "$R"); do
    PIDS=(0 0)
    order=(0 1)
    [ $((round % 2)) -eq 0 ] && order=(1 0)
    for i in "${order[@]}"; do
        bin=${*:$((i + 1)):1}
        mode=${DURABILITY:-}
        [ "$i" -eq 0 ] && mode=${DURABILITY_A:-$mode}
        [ "$i" -eq 1 ] && mode=${DURABILITY_B:-$mode}
        if [ -n "$mode" ]; then
            rm -f "$WORK/$i.sqlite"*; state=(--state "$WORK/$i.sqlite" --durability "$mode")
        else
            state=(--ephemeral)
        fi
        taskset -c 0 "$bin" --socket "$WORK/$i.sock" "${state[@]}" --log-level error &
        PIDS[i]=$!
    done
    for i in 0 1; do
        for _ in $(seq 100); do [ -S "$WORK/$i.sock" ] && break; sleep 0.05; done
        open_sessions "$WORK/$i.sock" "$C"
    done
    before=($(cpu_ticks "${PIDS[0]}") $(cpu_ticks "${PIDS[1]}"))
    gens=()
    for i in "${order[@]}"; do
        taskset -c 1 "$ANCHORS/build/loadgen" -s "$WORK/$i.sock" -c "$C" -P "$P" -d "$D" -t "$WORK/pairs.jsonl" -q >"$WORK/$i.out" 2>&1 &
        gens+=($!)
    done
    wait "${gens[@]}"
    line="round $round (C=$C P=$P, ${D} s):"
    ns=()
    for i in 0 1; do
        ok=$(sed -n 's/.* ok=\([0-9]*\).*/\1/p' "$WORK/$i.out")
        errors=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' "$WORK/$i.out")
        used=$(( $(cpu_ticks "${PIDS[$i]}") - before[i] ))
        ns[i]=$(( used * 1000000000 / TICK / ok ))
        line+=$(printf "   %s %d ns/request, %d requests, %s errors" "${*:$((i + 1)):1}" "${ns[i]}" "$ok" "$errors")
    done
    DIFFS+=("${ns[0]} ${ns[1]}")
    kill "${PIDS[@]}"; wait "${PIDS[@]}" 2>/dev/null || true
    rm -f "$WORK"/*.sock
    echo "$line"
done
printf '%s\n' "${DIFFS[@]}" | awk '{ print $2 - $1, $1 }' | sort -n | awk '{ d[NR] = $1; base += $2; lower += ($1 < 0) }
    END { m = (NR % 2) ? d[(NR + 1) / 2] : (d[NR / 2] + d[NR / 2 + 1]) / 2
          printf "median difference NEW - OLD: %+.1f ns/request (%+.1f %%); NEW lower in %d of %d rounds\n", m, 100 * m * NR / base, lower, NR }'
