#!/usr/bin/env bash
# Instructions navd executes per request (or per message fanned out), counted by valgrind's
# callgrind: repeatable to a fraction of a percent on a noisy machine, where timings are not.
# Used to justify each hot-path change (figures in BENCHMARKS.md and in commit messages).
#
#   scripts/instructions.sh            navigate/dismiss pairs, 10 connections, 16 in flight, 20,000 requests
#   MODE=fanout scripts/instructions.sh   one publisher (16 in flight), 100 subscribers, 4,000 messages
#   MODE=fanout FORM=compact ...       the subscribers ask for the compact form of stackChanged
#   MODE=ping scripts/instructions.sh  the loadgen's default request, `ping` (a method that does no work):
#                                      the floor of the per-line path (transport, parser, dispatch, reply)
#   N=... C=... P=... NAVD=path        other counts, connections, depth, binary
#   SCREENS=10000 scripts/instructions.sh   the pairs on a graph of that many screens named alike
#                                      (app.S0 …), to the middle one by name: what a large graph adds
#   NAVD_ARGS="--state F --durability process"   navd's options in place of --ephemeral
#   CACHE=1 scripts/instructions.sh    also: instruction-cache misses and mispredicted branches per
#                                      request, from callgrind's simulation of this CPU's caches
#                                      (I1=SIZE,WAYS,LINE simulates another first-level cache)
#   CODE=1 scripts/instructions.sh     also: the code a request runs, in 64-byte lines, by object and by
#                                      function (scripts/hot-code.py), to hold against the 32 KiB
#                                      first-level instruction cache
#   RC=1 scripts/instructions.sh       also: the runtime's retains and releases per request, by the
#                                      function that calls them (scripts/refcount-sites.py)
#   PROFILE=1 scripts/instructions.sh  also: where they go, by function and by source line (a build with
#                                      DWARF 4 debug info in .build-prof, which valgrind can read; the
#                                      callgrind file is kept and named at the end)
#
# Needs valgrind (installed when missing) and the perf anchors' loadgen (PERF_ANCHORS, default
# ../shared/perf-anchors). Counts navd's user-space instructions from the first request to the last
# (the counters are zeroed once the sessions are open); kernel time is not counted.
set -euo pipefail
export NAVD_TUNED=${NAVD_TUNED:-1}  # tuned release builds (Package.swift)
cd "$(dirname "$0")/.."
. scripts/workload.sh
ANCHORS=${PERF_ANCHORS:-../shared/perf-anchors}
MODE=${MODE:-pairs}
NAVD=${NAVD:-}
if [ ! -f "$ANCHORS/loadgen.c" ]; then echo "instructions: no perf anchors at $ANCHORS (set PERF_ANCHORS)" >&2; exit 2; fi
install_missing valgrind
make -s -C "$ANCHORS" >/dev/null
PROFILE=${PROFILE:-}
if [ -n "$PROFILE" ]; then
    # valgrind cannot read Swift's default DWARF 5; version 4 it can, for Swift and the C++ shim alike.
    scripts/build-release.sh --product navd --scratch-path .build-prof \
        -Xswiftc -g -Xswiftc -dwarf-version=4 -Xcc -gdwarf-4 -Xcxx -gdwarf-4 >/dev/null
    NAVD=.build-prof/release/navd
elif [ -z "$NAVD" ]; then
    scripts/build-release.sh --product navd >/dev/null; NAVD=.build/release/navd
fi

WORK=$(mktemp -d /tmp/navd-instructions.XXXXXX)
VP=
cleanup() { [ -n "$VP" ] && kill "$VP" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
# valgrind cannot read the DWARF of Swift binaries; the symbol table is enough to count.
cp "$NAVD" "$WORK/navd"
[ -n "$PROFILE" ] || strip --strip-debug "$WORK/navd"
SOCK=$WORK/navd.sock
SIM=()
[ -n "${CACHE:-}" ] && SIM=(--cache-sim=yes --branch-sim=yes ${I1:+--I1=$I1})
[ -n "${CODE:-}${RC:-}" ] && SIM+=(--dump-instr=yes)
TEMPLATE=$WORK/navigate-dismiss.jsonl
GRAPH_ARGS=()
if [ -n "${SCREENS:-}" ]; then
    mkdir "$WORK/graph" && write_screens_graph "$WORK/graph" "$SCREENS" "$TEMPLATE"
    GRAPH_ARGS=(--graph "$WORK/graph")
else
    write_pairs_template "$TEMPLATE"
fi
valgrind --tool=callgrind "${SIM[@]}" --callgrind-out-file="$WORK/cg.out" "$WORK/navd" --socket "$SOCK" ${NAVD_ARGS:---ephemeral} "${GRAPH_ARGS[@]}" --log-level error \
    >"$WORK/valgrind.log" 2>&1 &
VP=$!
for _ in $(seq 600); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { echo "instructions: navd did not start under valgrind" >&2; cat "$WORK/valgrind.log" >&2; exit 1; }

C=${C:-10}
open_sessions "$SOCK" $((C > 1 ? C : 1))
callgrind_control -z "$VP" >/dev/null 2>&1
if [ "$MODE" = fanout ]; then
    N=${N:-4000}
    "$ANCHORS/build/loadgen" -s "$SOCK" -c 1 -P "${P:-16}" -n "$N" -d 300 -t "$TEMPLATE" -k 100 -q \
        --subscribe-request '{"jsonrpc":"2.0","id":{{id}},"method":"subscribe","params":{"session":"s0"'"${FORM:+,\"notifications\":\"$FORM\"}"'}}' >"$WORK/loadgen.out"
    what="per message fanned out to 100 subscribers (${FORM:-full} form)"
else
    # Without a template the load generator sends its own request, ping.
    N=${N:-20000} LINES=(-t "$TEMPLATE") kind="navigate/dismiss pairs"
    [ "$MODE" = ping ] && LINES=() kind=ping
    "$ANCHORS/build/loadgen" -s "$SOCK" -c "$C" -P "${P:-16}" -n "$N" -d 300 "${LINES[@]}" -q >"$WORK/loadgen.out"
    what="per request ($kind, C=$C P=${P:-16})"
fi
callgrind_control -d "$VP" >/dev/null 2>&1
sleep 0.5
total=$(grep -h -m1 "^summary:\|^totals:" "$WORK"/cg.out.* | awk '{print $2}')
if [ -n "${CACHE:-}" ]; then
    # events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
    grep -h -m1 "^summary:\|^totals:" "$WORK"/cg.out.* | awk -v n="$N" '{
        printf "per request: instruction-cache misses %.1f, data-cache misses %.1f, mispredicted branches %.1f (conditional %.1f, indirect %.1f)\n",
               $5 / n, ($6 + $7) / n, ($12 + $14) / n, $12 / n, $14 / n }'
fi
errors=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' "$WORK/loadgen.out")
echo "instructions $what: $((total / N))  (N=$N, loadgen errors=${errors:-?})"
if [ -n "${CODE:-}" ]; then
    python3 scripts/hot-code.py "$(ls "$WORK"/cg.out.* | head -1)" "$N" 25 | swift demangle --simplified
fi
if [ -n "${RC:-}" ]; then
    python3 scripts/refcount-sites.py "$(ls "$WORK"/cg.out.* | head -1)" "$WORK/navd" "$N" 30
    cp "$(ls "$WORK"/cg.out.* | head -1)" /tmp/navd-callgrind.rc.out
    echo "callgrind file: /tmp/navd-callgrind.rc.out (each call site: objdump -dl of a build with line tables, PROFILE=1)"
fi
if [ -n "$PROFILE" ]; then
    out=/tmp/navd-callgrind.$MODE.out
    cp "$WORK"/cg.out.* "$out"
    echo "functions by own instructions per request:"
    callgrind_annotate --threshold=100 "$out" 2>/dev/null | swift demangle --simplified |
        awk -v n="$N" '/^ *[0-9,]+ +\(/ { c = $1; gsub(",", "", c); f = substr($0, index($0, ")") + 3); sub(/^[^:]*:/, "", f); sub(/ \[\/.*$/, "", f)
                                         if (c / n >= 20) printf "%8.0f  %s\n", c / n, substr(f, 1, 110) }' | sed -n '2,40p'
    echo "callgrind file: $out  (callgrind_annotate --auto=yes --show-percs=no $out: costs by source line)"
fi
