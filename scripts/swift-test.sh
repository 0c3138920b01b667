#!/usr/bin/env bash
# make test's Swift tests: `swift test --skip-build`, its output kept in .build/swift-test.log and
# its results in .build/swift-test-swift-testing.xml (xUnit). When a test fails, the failures are
# printed again at the end, each with its message, so that the last lines of a long run (all a CI
# log may show) say which test failed and why.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build
log=.build/swift-test.log
xml=.build/swift-test.xml
rm -f .build/swift-test-swift-testing.xml "$xml"
${SWIFT:-swift} test --skip-build --xunit-output "$xml" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    echo
    echo "swift-test: the tests failed (status $status); the failures, from $log and the xUnit results:"
    grep -a -E "^✘ Test .*(recorded an issue|failed after)" "$log" | head -40
    for f in .build/swift-test-swift-testing.xml "$xml"; do
        [ -f "$f" ] || continue
        python3 - "$f" <<'PY'
import sys, xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    for failure in list(case.findall("failure")) + list(case.findall("error")):
        message = failure.get("message") or (failure.text or "")
        print(f"FAILED {case.get('classname')}.{case.get('name')}: {message[:4000]}")
PY
    done
fi
exit "$status"
