#!/usr/bin/env bash
# The release build of this package, the same for every make target and script that makes one
# (ARGS go to `swift build`: --product navd, and so on):
#   - tuned: the flags Package.swift keeps behind NAVD_TUNED (and its profile-guided layout);
#   - the Swift runtime, standard library and Foundation linked statically (--static-swift-stdlib):
#     navd's many calls into the runtime (reference counting above all) go straight to it, not
#     through the PLT, it starts without resolving their symbols, and the binaries run where no
#     Swift is installed. BENCHMARKS.md "The Swift runtime linked statically" has the figures.
# Every release build of the package must pass the same flags: a build with other ones compiles
# every module of .build/release again.
set -euo pipefail
cd "$(dirname "$0")/.."
export NAVD_TUNED=${NAVD_TUNED:-1}
exec "${SWIFT:-swift}" build -c release --static-swift-stdlib "$@"
