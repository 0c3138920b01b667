#!/usr/bin/env bash
# The fingerprint of the sources Profiles/navd.profdata lays out: every Swift and C file of the
# daemon's tuned modules (generated resource files aside). `make pgo-profile` records it in
# Profiles/navd.sources; with --check (make test) a fingerprint that differs fails: the profile is
# stale, retake it with `make pgo-profile`.
set -euo pipefail
cd "$(dirname "$0")/.."
fingerprint=$(find Sources/Unchecked Sources/UV Sources/JSON Sources/RPC Sources/NavGraph Sources/NavigationCore Sources/NavServer \
        Sources/NavCluster Sources/CLibUV Sources/CSimdJSON Sources/CChecksum -type f \( -name '*.swift' -o -name '*.h' -o -name '*.cpp' -o -name '*.c' \) -not -path '*/Generated/*' \
    | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
if [ "${1:-}" = --check ]; then
    recorded=$(cat Profiles/navd.sources 2>/dev/null || echo none)
    if [ "$fingerprint" != "$recorded" ]; then
        echo "profile-check: Profiles/navd.profdata was taken from other sources than these (recorded $recorded, now $fingerprint):" >&2
        echo "profile-check: the request path changed since; run \`make pgo-profile\` and commit Profiles/ and Package.swift" >&2
        exit 1
    fi
    echo "profile-check: Profiles/navd.profdata matches the sources ($fingerprint)"
else
    echo "$fingerprint"
fi
