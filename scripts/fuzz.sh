#!/usr/bin/env bash
# Runs navd's libFuzzer targets (framing, json, graph, argv, state, session, log, coverage, policy, pattern, link, http, websocket), each for SECONDS (default 60), from the
# seed corpus in Fuzz/corpus. New inputs go to .build-fuzz/corpus/TARGET (the seeds are not
# changed); a crash leaves its input in .build-fuzz/artifacts/ and fails the run. Replay one with
#   NAVD_FUZZ_TARGET=json .build-fuzz/debug/navd-fuzz .build-fuzz/artifacts/crash-…
#
#   scripts/fuzz.sh [SECONDS] [TARGET…]      (FUZZ_JOBS=N: targets run at once, default one per cpu)
#   scripts/fuzz.sh --build                  (only the build: make test builds it beside other work)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_ONLY=
[ "${1:-}" = --build ] && BUILD_ONLY=1
SECONDS_EACH=${1:-60}
shift || true
TARGETS=${*:-framing json graph argv state session log coverage policy pattern link http websocket}
# The C++ of the JSON parser (simdjson's shim: batches, padding) is instrumented too, so that the
# json target's inputs are guided through it and its memory accesses checked. Without the index
# store, which only an editor reads (69 -> 61 cpu-seconds from scratch).
swift build --product navd-fuzz --scratch-path .build-fuzz --disable-index-store \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -parse-as-library \
    -Xcxx -fsanitize=fuzzer-no-link,address >/dev/null
[ -z "$BUILD_ONLY" ] || { echo "fuzz: built .build-fuzz/debug/navd-fuzz"; exit 0; }
BIN=.build-fuzz/debug/navd-fuzz
mkdir -p .build-fuzz/artifacts
# The targets that write files (log) write them here, removed at the end.
TMPDIR=$(mktemp -d /tmp/navd-fuzz.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
# The targets run side by side, one per cpu (FUZZ_JOBS): each is one process on one core.
JOBS=${FUZZ_JOBS:-$(nproc)}
run_target() {
    local t=$1
    mkdir -p ".build-fuzz/corpus/$t"
    local rc=0
    NAVD_FUZZ_TARGET=$t SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 "$BIN" \
        -max_total_time="$SECONDS_EACH" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=.build-fuzz/artifacts/ ".build-fuzz/corpus/$t" "Fuzz/corpus/$t" >".build-fuzz/$t.log" 2>&1 || rc=$?
    echo "$rc" >".build-fuzz/$t.rc"
}
running=0
for t in $TARGETS; do
    rm -f ".build-fuzz/$t.rc"
    run_target "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
done
wait
failed=0
for t in $TARGETS; do
    log=".build-fuzz/$t.log"
    if [ "$(cat ".build-fuzz/$t.rc" 2>/dev/null)" != 0 ]; then
        echo "fuzz $t: FAILED (input kept in .build-fuzz/artifacts/); the end of its log:" >&2
        tail -n 30 "$log" >&2
        failed=1
        continue
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    echo "fuzz $t: ${runs:-?} inputs in ${SECONDS_EACH} s, $cov, no crash"
done
exit "$failed"
