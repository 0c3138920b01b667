#!/usr/bin/env bash
# What a navd built without cluster mode (NAVD_CLUSTER=off) must be: linked without libpq, built
# without the NavCluster module, and refusing --store with a message that says why.
#   scripts/check-no-cluster.sh BIN_DIR     (the build's bin folder: BIN_DIR/navd, BIN_DIR/Modules)
# `make build-no-cluster` runs it on its own build; `make test` on the navd that
# scripts/client-package.sh builds from its package.
set -uo pipefail
dir=${1:?usage: scripts/check-no-cluster.sh BIN_DIR}
if ldd "$dir/navd" | grep -q libpq; then echo "no-cluster: $dir/navd links libpq" >&2; exit 1; fi
if ls "$dir/Modules/NavCluster.swiftmodule" >/dev/null 2>&1; then echo "no-cluster: NavCluster was built in $dir" >&2; exit 1; fi
out=$("$dir/navd" serve --socket "/tmp/navd-nocluster-$$.sock" --store postgres://nobody/none 2>&1)
status=$?
if [ "$status" -ne 1 ] || ! echo "$out" | grep -q "built without cluster mode"; then
    echo "no-cluster: --store answered $status: $out" >&2
    exit 1
fi
echo "no-cluster: navd without cluster mode builds, links no libpq, and refuses --store"
