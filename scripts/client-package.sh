#!/usr/bin/env bash
# A package outside the repository depends on NavClient by version (a clone of this repository's
# HEAD, tagged 1.0.0, as a git dependency), builds, and talks to a navd with it: NavClient is usable
# as a dependency, with no unsafe build flags (make test runs this).
#
# The navd it talks to is built from the same package graph without cluster mode (NAVD_CLUSTER=off,
# `swift build --product navd`, the dependency's own product) and checked as `make
# build-no-cluster` checks its own (scripts/check-no-cluster.sh): the two builds share the modules
# NavClient and navd both use, where building them apart compiled those twice (89 cpu-seconds
# together, 27 + 94 apart). Without the index store, which only an editor reads: 83 -> 71
# cpu-seconds.
#   scripts/client-package.sh
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/navd-client-package.XXXXXX)
NAVD_PID=
cleanup() { [ -n "$NAVD_PID" ] && kill "$NAVD_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
git clone -q "$REPO" "$WORK/navd"
git -C "$WORK/navd" -c user.name=navd -c user.email=navd@localhost tag -a 1.0.0 -m 1.0.0
mkdir -p "$WORK/app/Sources/app"
cat > "$WORK/app/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "app",
    dependencies: [.package(url: "file://$WORK/navd", from: "1.0.0")],
    targets: [.executableTarget(name: "app", dependencies: [.product(name: "NavClient", package: "navd")])]
)
SWIFT
cat > "$WORK/app/Sources/app/main.swift" <<'SWIFT'
import NavClient

let navd = try NavClient(socketPath: CommandLine.arguments[1])
try navd.ping()
let mirror = try navd.subscribe()
let r = try navd.navigate(to: "shop.Product", with: ["id": "p42"])
print("navigated: version \(r.version), from version \(mirror.version)")
SWIFT
echo "client-package: building a package that depends on NavClient 1.0.0 (a tagged clone of HEAD), and navd from it without cluster mode…"
export NAVD_CLUSTER=off
env -u NAVD_TUNED swift build --package-path "$WORK/app" --scratch-path "$WORK/build" --disable-index-store 2>&1 | tail -3
env -u NAVD_TUNED swift build --package-path "$WORK/app" --scratch-path "$WORK/build" --disable-index-store --product navd 2>&1 | tail -1
NAVD=$WORK/build/debug/navd
"$REPO/scripts/check-no-cluster.sh" "$WORK/build/debug"
"$NAVD" serve --ephemeral --socket "$WORK/navd.sock" 2>/dev/null &
NAVD_PID=$!
for _ in $(seq 200); do [ -S "$WORK/navd.sock" ] && break; sleep 0.05; done
out=$("$WORK/build/debug/app" "$WORK/navd.sock")
echo "client-package: $out"
[ "$out" = "navigated: version 1, from version 0" ] || { echo "client-package: unexpected output" >&2; exit 1; }
