#!/usr/bin/env bash
# make build-debug: the debug build with the tests, which must compile without a warning from the
# project's own code (Sources, Clients, Tests, Fuzz, Benchmarks, Plugins, and the test macros'
# expansions in them); warnings of dependencies are not counted. An incremental build shows the
# warnings of the files it compiled; a fresh clone (CI) compiles them all.
set -uo pipefail
cd "$(dirname "$0")/.."
# make test (scripts/test.sh) builds first and sets NAVD_BUILT for the steps after (make install's
# test among them): SwiftPM takes about 9 s to find that nothing is left to build.
if [ -n "${NAVD_BUILT:-}" ]; then echo "build-debug: built earlier in this run"; exit 0; fi
mkdir -p .build
log=.build/build-debug.log
${SWIFT:-swift} build --build-tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || exit "$status"
here=$(pwd)
own=$(grep -E "^($here/)?(Sources|Clients|Tests|Fuzz|Benchmarks|Plugins)/[^:]*:[0-9]+:[0-9]+: warning:|^macro expansion [^:]*:[0-9]+:[0-9]+: warning:" "$log" | sort -u)
if [ -n "$own" ]; then
    echo "build-debug: the build printed $(echo "$own" | wc -l) warning(s) from navd's own code; make test builds without warnings:" >&2
    echo "$own" >&2
    exit 1
fi
