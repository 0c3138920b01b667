#!/usr/bin/env bash
# The end-to-end tests and nav-web's server tests against navd, its clients and nav-web built with
# AddressSanitizer (in .build-asan).
# Every process writes any report to $REPORTS; the run fails if a test fails or a report appears.
set -euo pipefail
cd "$(dirname "$0")/.."
REPORTS=$(mktemp -d /tmp/navd-asan.XXXXXX)
swift build --build-tests --sanitize=address --scratch-path .build-asan >/dev/null
status=0
NAVD_BIN_DIR=$PWD/.build-asan/debug ASAN_OPTIONS="detect_leaks=0:log_path=$REPORTS/asan:suppressions=$PWD/scripts/asan-suppressions.txt" SWIFT_BACKTRACE=enable=no \
    swift test --skip-build --sanitize=address --scratch-path .build-asan --filter "${FILTER:-EndToEndTests|NavWebServerTests}" || status=$?
if ls "$REPORTS"/asan.* >/dev/null 2>&1; then
    echo "test-asan: AddressSanitizer reports:" >&2
    cat "$REPORTS"/asan.* >&2
    status=1
else
    echo "test-asan: no AddressSanitizer report"
fi
rm -rf "$REPORTS"
exit $status
