#!/usr/bin/env bash
# make test: every build, check and test, in an order that keeps both cpus busy.
#
#   1. The package's debug build with its tests (navd, its clients, nav-web).
#   2. The builds only `make test` needs (NavClient as another package's dependency, with navd
#      without cluster mode built from that package; the fuzz targets with their sanitizers) start
#      in the background as idle work
#      (SCHED_IDLE, `chrt --idle`): they run on a cpu the rest leaves idle, and a process of the
#      rest that wakes takes its cpu back. They still slow what runs beside them (the cpus share
#      their caches), but less than they take after the tests (114 s), and less than beside navd's
#      build: started before it, they slowed it from 279 to 437 s in a fresh clone and the whole
#      run from 791 to 846 s, where they shortened the Swift tests only from 299 to 186 s. Their
#      output goes to
#      .build/test-background.log, printed once they end.
#   3. The chaos run (60 s of faults on three cluster nodes) starts beside them, at the usual
#      priority: it keeps about half a cpu busy, the rest of its time it waits for its faults and
#      leases, so the background builds use the rest. Its output goes to .build/test-chaos.log,
#      printed once it ends, which is before the Swift tests start.
#   4. The checks and the tests, one after the other: profile, lint, man pages, protocol, embedded
#      page, the chaos run's verdict, the Swift tests (nav-web's server tests among them).
#   5. The background builds' results; then the fuzz smoke (its own build was one of them) in the
#      background at nice 19, beside nav-web's tests, then the Python client's tests. Each fuzz
#      target runs for a fixed time (6 s), so the smoke ends when it would have alone, and nav-web's
#      browser tests mostly wait (about one cpu busy in their 60-70 s), so they lose little to it.
#      Its output goes to .build/test-fuzz.log, printed when it ends. One after the other the three
#      took 43 + 68 + 33 s; this way 61 + 40 (the Python tests need both cpus: not beside it).
#
# Exits with the first failure's status; a failure stops the run (the background work is stopped too).
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
SWIFT=${SWIFT:-swift}
export SWIFT
mkdir -p .build
start=$(date +%s)
bg_log=.build/test-background.log
bg_status=.build/test-background.status
bg_pid=
chaos_log=.build/test-chaos.log
chaos_status=.build/test-chaos.status
chaos_pid=
fuzz_log=.build/test-fuzz.log
fuzz_status=.build/test-fuzz.status
fuzz_pid=

stop_background() {
    for p in $bg_pid $chaos_pid $fuzz_pid; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null; done
}
trap stop_background EXIT
fail() {
    local status=$1; shift
    echo "test: FAILED ($*, status $status, after $(( $(date +%s) - start )) s)" >&2
    exit "$status"
}
# Each step, then its time, so that a slow run shows where it went.
run() {
    local t0=$(date +%s)
    "$@" || fail $? "$*"
    echo "test: $* took $(( $(date +%s) - t0 )) s (at $(( $(date +%s) - start )) s)"
}
# A job in a process group of its own, so that a failure elsewhere stops all of it.
in_background() { setsid "$@" & }
# A background job's end (its pid in the variable named $1), its log and its status.
wait_for() {
    local var=$1 what=$2 log=$3 status_file=$4 command=$5 t0=$(date +%s) status
    wait "${!var}"
    printf -v "$var" ''
    echo "test: $what ($log, waited for $(( $(date +%s) - t0 )) s):"
    cat "$log"
    read -r status < "$status_file" 2>/dev/null || status=1
    [ "$status" = 0 ] || fail "$status" "$command"
}

# 1. navd's build.
run scripts/build-debug.sh
export NAVD_BUILT=1

# 2. The builds only make test needs, as idle work, while the rest runs.
rm -f "$bg_status"
echo "test: in the background as idle work ($bg_log): scripts/client-package.sh (with navd without cluster mode), scripts/fuzz.sh --build"
in_background chrt --idle 0 bash -c "
    for step in 'scripts/client-package.sh' 'scripts/fuzz.sh --build'; do
        echo \"== \$step (at \$(( \$(date +%s) - $start )) s)\"
        \$step || { echo \"\$? \$step\" > $bg_status; exit 1; }
    done
    echo \"== done (at \$(( \$(date +%s) - $start )) s)\"
    echo 0 > $bg_status" > "$bg_log" 2>&1
bg_pid=$!

# 3. The chaos run, beside what follows.
rm -f "$chaos_status"
echo "test: beside the rest ($chaos_log): ${CHAOS_SMOKE:?make test sets CHAOS_SMOKE}"
in_background bash -c "$CHAOS_SMOKE; echo \$? > $chaos_status; echo \"(ended at \$(( \$(date +%s) - $start )) s)\"" > "$chaos_log" 2>&1
chaos_pid=$!

# 4. The checks and the tests.
run scripts/profile-sources.sh --check
run scripts/lint.sh
run scripts/man.sh --check
run python3 scripts/protocol.py --check
run python3 scripts/embed-web.py --check
# The chaos run ends before the tests start: its three nodes and PostgreSQL beside tests that
# time their clients would make those tests' timing depend on it (in a fresh clone it ended long
# before, beside nav-web's build; in a built tree the wait is up to a minute).
wait_for chaos_pid "the chaos run" "$chaos_log" "$chaos_status" "$CHAOS_SMOKE"
run scripts/swift-test.sh

# 5. The background builds (done by now), then the fuzz smoke beside nav-web's and the Python
#    client's tests.
wait "$bg_pid"
bg_pid=
echo "test: the background builds ($bg_log):"
cat "$bg_log"
read -r status step < "$bg_status" 2>/dev/null || { status=1; step="the background builds (no status)"; }
[ "$status" = 0 ] || fail "$status" "$step"
rm -f "$fuzz_status"
echo "test: beside nav-web's tests, at nice 19 ($fuzz_log): make fuzz-smoke"
in_background nice -n 19 bash -c "$MAKE --no-print-directory fuzz-smoke; echo \$? > $fuzz_status" > "$fuzz_log" 2>&1
fuzz_pid=$!
run "$MAKE" --no-print-directory test-web
wait_for fuzz_pid "the fuzz smoke" "$fuzz_log" "$fuzz_status" "make fuzz-smoke"
run "$MAKE" --no-print-directory test-python
echo "test: every build, check and test passed in $(( $(date +%s) - start )) s"
