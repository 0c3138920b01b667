#!/usr/bin/env bash
# Makes Profiles/navd.profdata, the profile that lays out release builds of navd's modules
# (Package.swift; BENCHMARKS.md "Profile-guided layout"). Run it again after a change to the request
# path: a function whose code changed since the profile was taken is built without it (still
# correct, just laid out without the profile), so a stale profile costs speed, never behaviour.
#
#   scripts/pgo-profile.sh        (make pgo-profile)
#
# 1. Builds an instrumented navd (NAVD_PGO=generate: LLVM's IR-level instrumentation of the Swift
#    modules and of CSimdJSON's C++, linked with the toolchain's profile runtime) in .build-pgo-gen.
# 2. Runs it under a mix of what navd serves: navigate/dismiss pairs at depths 1 and 16 on 1, 10 and
#    50 connections; a session watched by 100 subscribers; keyed, routed and deep-link navigations,
#    trees, facts, pings, batches and bad requests; and the same pairs with a state file
#    (--durability process). Most of the weight is the pairs, as in use.
# 3. Merges what it wrote with the toolchain's llvm-profdata into Profiles/navd.profdata, and writes
#    its digest into Package.swift (profileDigest), so that the next release build uses it.
# Needs the perf anchors' loadgen (PERF_ANCHORS, default ../shared/perf-anchors).
set -euo pipefail
export NAVD_TUNED=${NAVD_TUNED:-1}  # tuned release builds (Package.swift)
cd "$(dirname "$0")/.."
. scripts/workload.sh
ANCHORS=${PERF_ANCHORS:-../shared/perf-anchors}
[ -f "$ANCHORS/loadgen.c" ] || { echo "pgo-profile: no perf anchors at $ANCHORS (set PERF_ANCHORS)" >&2; exit 2; }
install_missing socat build-essential
make -s -C "$ANCHORS" >/dev/null
LOADGEN=$ANCHORS/build/loadgen

# The toolchain's own llvm-profdata and profile runtime: the profile's format must be the compiler's.
TOOLCHAIN=$(dirname "$(readlink -f "$(command -v swiftc)")")
PROFDATA=$TOOLCHAIN/llvm-profdata
RUNTIME=$(ls "$TOOLCHAIN"/../lib/clang/*/lib/linux/libclang_rt.profile-"$(uname -m)".a 2>/dev/null | head -1)
[ -x "$PROFDATA" ] && [ -f "$RUNTIME" ] || { echo "pgo-profile: no llvm-profdata or profile runtime beside $TOOLCHAIN/swiftc" >&2; exit 2; }

WORK=$(mktemp -d /tmp/navd-pgo.XXXXXX)
NAVD_PID=
cleanup() { [ -n "$NAVD_PID" ] && kill "$NAVD_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

SOURCES=$(scripts/profile-sources.sh)  # what this profile is taken from (make test checks it)
echo "building the instrumented navd (.build-pgo-gen)…"
NAVD_PGO=generate swift build -c release --product navd --scratch-path .build-pgo-gen \
    -Xlinker "$RUNTIME" -Xlinker -u__llvm_profile_runtime >/dev/null
NAVD=.build-pgo-gen/release/navd

# start_navd ARGS…: the instrumented navd on $WORK/navd.sock.
start_navd() {
    rm -f "$WORK/navd.sock"
    LLVM_PROFILE_FILE="$WORK/navd-%p.profraw" "$NAVD" --socket "$WORK/navd.sock" --log-level error "$@" &
    NAVD_PID=$!
    for _ in $(seq 100); do [ -S "$WORK/navd.sock" ] && return 0; sleep 0.05; done
    echo "pgo-profile: navd did not start" >&2; exit 1
}
# stop_navd: SIGTERM; navd exits normally and the runtime writes the profile.
stop_navd() { kill -TERM "$NAVD_PID"; wait "$NAVD_PID" || true; NAVD_PID=; }
# load pairs|mixed LOADGEN-ARGS…: one phase of the training. A phase that served nothing, or
# pairs that got errors (the mixed phase errs on purpose), mean a broken training run (navd down,
# the example graph changed): the profile would then lay navd out for the wrong paths, so the
# script stops instead of writing it.
load() {
    local kind=$1 out ok errors
    shift
    out=$("$LOADGEN" -s "$WORK/navd.sock" -q "$@" 2>&1 || true)
    ok=$(sed -n 's/.* ok=\([0-9]*\).*/\1/p' <<<"$out"); errors=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$out")
    if [ "${ok:-0}" -eq 0 ] || { [ "$kind" = pairs ] && [ "${errors:-1}" -ne 0 ]; }; then
        echo "pgo-profile: a training phase failed (loadgen $*): ${out:-no output}" >&2
        exit 1
    fi
}

PAIRS=$WORK/pairs.jsonl
write_pairs_template "$PAIRS"
MIXED=$WORK/mixed.jsonl
cat >"$MIXED" <<'T'
{"jsonrpc":"2.0","id":{{id}},"method":"navigate","params":{"session":"s{{conn}}","to":"shop.Product","with":{"id":"7","ref":"home"},"key":"k1"}}
{"jsonrpc":"2.0","id":{{id}},"method":"tree","params":{"session":"s{{conn}}"}}
{"jsonrpc":"2.0","id":{{id}},"method":"navigate","params":{"session":"s{{conn}}","route":"showProduct","with":{"id":"8"}}}
{"jsonrpc":"2.0","id":{{id}},"method":"navigate","params":{"session":"s{{conn}}","to":"shop.Reviews"}}
{"jsonrpc":"2.0","id":{{id}},"method":"dismiss","params":{"session":"s{{conn}}"}}
{"jsonrpc":"2.0","id":{{id}},"method":"dismiss","params":{"session":"s{{conn}}"}}
{"jsonrpc":"2.0","id":{{id}},"method":"dismiss","params":{"session":"s{{conn}}"}}
{"jsonrpc":"2.0","id":{{id}},"method":"open","params":{"session":"s{{conn}}","url":"/product/42/reviews"}}
{"jsonrpc":"2.0","id":{{id}},"method":"open","params":{"session":"s{{conn}}","url":"shop://app/category/shoes?page=2"}}
{"jsonrpc":"2.0","id":{{id}},"method":"navigate","params":{"session":"s{{conn}}","to":"shop.Product","with":{"id":""}}}
{"jsonrpc":"2.0","id":{{id}},"method":"navigate","params":{"session":"s{{conn}}","to":"shop.Nowhere"}}
{"jsonrpc":"2.0","id":{{id}},"method":"navigate","params":{"session":"s{{conn}}","to":"shop.Product","with":{"id":"9"},"dryRun":true}}
{"jsonrpc":"2.0","id":{{id}},"method":"context.set","params":{"session":"s{{conn}}","facts":{"seen":3}}}
{"jsonrpc":"2.0","id":{{id}},"method":"context.get","params":{"session":"s{{conn}}"}}
{"jsonrpc":"2.0","id":{{id}},"method":"ping"}
{"jsonrpc":"2.0","id":{{id}},"method":"stats"}
[{"jsonrpc":"2.0","id":{{id}},"method":"ping"},{"jsonrpc":"2.0","method":"ping"}]
{"jsonrpc":"2.0","id":{{id}},"method":"nosuch"}
{"jsonrpc":"2.0","id":{{id}},"method":"dismiss","params":{"session":"s{{conn}}","bogus":1}}
{"jsonrpc":"2.0","id":{{id}},"method":"session.open","params":{"name":"s{{conn}}"}}
T

echo "training: ephemeral sessions…"
start_navd --ephemeral
open_sessions "$WORK/navd.sock" 50
load pairs -c 10 -P 16 -n 600000 -d 30 -t "$PAIRS"
load pairs -c 50 -P 16 -n 600000 -d 30 -t "$PAIRS"
load pairs -c 50 -P 1 -n 150000 -d 30 -t "$PAIRS"
load pairs -c 10 -P 1 -n 100000 -d 30 -t "$PAIRS"
load pairs -c 1 -P 1 -n 20000 -d 30 -t "$PAIRS"
load pairs -c 1 -P 16 -n 40000 -d 30 -t "$PAIRS" -k 100 \
    --subscribe-request '{"jsonrpc":"2.0","id":{{id}},"method":"subscribe","params":{"session":"s0"}}'
load mixed -c 4 -P 4 -n 40000 -d 30 -t "$MIXED"
stop_navd

echo "training: a state file (--durability process)…"
start_navd --state "$WORK/state.sqlite" --durability process
open_sessions "$WORK/navd.sock" 10
load pairs -c 10 -P 1 -n 60000 -d 30 -t "$PAIRS"
load pairs -c 10 -P 16 -n 200000 -d 30 -t "$PAIRS"
stop_navd

mkdir -p Profiles
"$PROFDATA" merge --sparse -o Profiles/navd.profdata "$WORK"/navd-*.profraw
# Package.swift names the profile's digest in the flags, so that the next build rebuilds with it.
digest=$(sha256sum Profiles/navd.profdata | cut -c1-16)
sed -i "s/^let profileDigest = \".*\"/let profileDigest = \"$digest\"/" Package.swift
grep -q "^let profileDigest = \"$digest\"" Package.swift || { echo "pgo-profile: could not write the digest into Package.swift" >&2; exit 1; }
echo "$SOURCES" > Profiles/navd.sources
echo "wrote Profiles/navd.profdata ($(du -k Profiles/navd.profdata | cut -f1) KB); release builds use it (NAVD_PGO=off: without)"
