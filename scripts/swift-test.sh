#!/usr/bin/env bash
# make test's Swift tests: `swift test --skip-build`, its output kept in .build/swift-test.log and
# its results in .build/swift-test-swift-testing.xml (xUnit). When a test fails, the failures are
# printed again at the end, each with its message, so that the last lines of a long run (all a CI
# log may show) say which test failed and why.
#
# With no arguments, the cluster suite (serialized: one PostgreSQL and its nodes at a time) runs in
# a process of its own beside the rest, its output in .build/swift-test-cluster.log and printed
# after the rest's. The tests block their threads on sockets and child processes, and a test
# process runs as many at once as there are cpus: in one process the cluster suite's ~50 s chain
# started late and ran alone at the end (171 s in all; 127 s as two processes).
#   scripts/swift-test.sh [swift test arguments…]   (with arguments: one process, as given)
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build
log=.build/swift-test.log
xml=.build/swift-test.xml
cluster_log=.build/swift-test-cluster.log
cluster_xml=.build/swift-test-cluster.xml
cluster='EndToEndTests\.ClusterTests/'
rm -f .build/swift-test-swift-testing.xml "$xml" "$cluster_xml" "$cluster_log"
cluster_pid=
if [ $# -eq 0 ]; then
    # The test binary itself: a second `swift test` would wait for the first's lock on .build.
    bin=$(${SWIFT:-swift} build --show-bin-path)/navdPackageTests.xctest
    NO_COLOR=1 "$bin" --testing-library swift-testing --filter "$cluster" --xunit-output "$cluster_xml" \
        >"$cluster_log" 2>&1 &
    cluster_pid=$!
    set -- --skip "$cluster"
fi
${SWIFT:-swift} test --skip-build --xunit-output "$xml" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
logs=("$log")
if [ -n "$cluster_pid" ]; then
    wait "$cluster_pid"
    cluster_status=$?
    echo
    echo "swift-test: the cluster suite, run beside the rest (status $cluster_status, $cluster_log):"
    cat "$cluster_log"
    [ "$status" -ne 0 ] || status=$cluster_status
    logs+=("$cluster_log")
fi
if [ "$status" -ne 0 ]; then
    echo
    echo "swift-test: the tests failed (status $status); the failures, from ${logs[*]} and the xUnit results:"
    grep -a -h -E "^✘ Test .*(recorded an issue|failed after)" "${logs[@]}" | head -40
    for f in .build/swift-test-swift-testing.xml "$xml" "$cluster_xml"; do
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
