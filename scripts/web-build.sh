#!/usr/bin/env bash
# make web-build: nav-web's package (Clients/web, its own build folder) with its tests, without a
# warning from its own code (as scripts/build-debug.sh for the main package). Always with the tests:
# a build without them and one with them each compile part of Hummingbird again (12-20 s a switch).
set -uo pipefail
cd "$(dirname "$0")/.."
# make test (scripts/test.sh) builds it first, beside navd's build, and sets NAVWEB_BUILT for the
# steps after: a build again could only repeat it (SwiftPM sometimes compiles Hummingbird again).
if [ -n "${NAVWEB_BUILT:-}" ]; then echo "web-build: built earlier in this run"; exit 0; fi
mkdir -p Clients/web/.build
log=Clients/web/.build/build.log
${SWIFT:-swift} build --package-path Clients/web --build-tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || exit "$status"
own=$(grep -E "^($(pwd)/)?Clients/web/Sources/[^:]*:[0-9]+:[0-9]+: warning:" "$log" | sort -u)
if [ -n "$own" ]; then
    echo "web-build: nav-web's code printed $(echo "$own" | wc -l) warning(s); make test builds without warnings:" >&2
    echo "$own" >&2
    exit 1
fi
