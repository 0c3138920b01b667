#!/usr/bin/env bash
# make bench-cluster: figures of cluster mode (--store postgres://) on this machine, printed as a table.
#
#  1. navbench navigate/dismiss at C=10 P=1 and P=16 against a release navd with the PostgreSQL store,
#     beside the SQLite store (--durability full and process) and beside pgbench's built-in
#     simple-update script on the same PostgreSQL (10 clients, prepared statements).
#  2. Takeover after kill -9: node A owns TAKEOVER sessions (default 1000); node B runs beside it;
#     A is killed; the time until B has taken every session over and answers `tree` for the last one.
#
# Knobs (environment): DUR [3] measured seconds per cell, LEASE [2s], TAKEOVER [1000].
set -euo pipefail
export NAVD_TUNED=${NAVD_TUNED:-1}
cd "$(dirname "$0")/.."
DUR=${DUR:-3}
LEASE=${LEASE:-2s}
TAKEOVER=${TAKEOVER:-1000}
WORK=$(mktemp -d /tmp/navd-cluster-bench.XXXXXX)
chmod 755 "$WORK"  # PostgreSQL runs as the postgres user under it
BIN=.build/release
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    scripts/pg-temp.sh stop "$WORK/pg"
    rm -rf "$WORK"
}
trap cleanup EXIT
log() { echo "$@" >&2; }
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p; s/^$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }
wait_socket() { for _ in $(seq 400); do [ -S "$1" ] && return 0; sleep 0.05; done; log "cluster-bench: $1 did not appear"; exit 1; }
start_navd() {  # NAME ARGS…: sets SOCK and PID
    SOCK=$WORK/$1.sock; shift
    "$BIN/navd" --socket "$SOCK" --log-level error "$@" 2>>"$WORK/navd.log" &
    PID=$!; PIDS+=("$PID")
    wait_socket "$SOCK"
}
stop_navd() { kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; }

log "cluster-bench: building release navd and navbench…"
scripts/build-release.sh --product navd >/dev/null
scripts/build-release.sh --product navbench >/dev/null
PG=$(scripts/pg-temp.sh start "$WORK/pg")
PSQL=(psql -X -q -A -t -h "$WORK/pg" -p 5432 -U navd -d postgres)

echo "navigate/dismiss req/s, navbench --connections 10, ${DUR}s per cell"
printf "%-34s %10s %10s %10s %10s\n" "store" "P=1 rps" "P=16 rps" "P=1 p99us" "P=16 p99us"
row() {
    local name=$1; shift
    start_navd "$name" "$@"
    local a b
    a=$("$BIN/navbench" --socket "$SOCK" --connections 10 --depth 1 --duration "$DUR") || true
    b=$("$BIN/navbench" --socket "$SOCK" --connections 10 --depth 16 --duration "$DUR") || true
    printf "%-34s %10s %10s %10s %10s\n" "$name" "$(kv rps "$a")" "$(kv rps "$b")" "$(kv p99_us "$a")" "$(kv p99_us "$b")"
    stop_navd
}
row "postgres (one node)" --store "$PG" --node bench --lease "$LEASE"
row "sqlite --durability full" --state "$WORK/full.sqlite" --durability full
row "sqlite --durability process" --state "$WORK/process.sqlite" --durability process

pgbench -h "$WORK/pg" -p 5432 -U navd -i -q -s 1 postgres >/dev/null 2>&1
pg=$(pgbench -h "$WORK/pg" -p 5432 -U navd -b simple-update -M prepared -c 10 -j 2 -T "$DUR" postgres 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
printf "%-34s %10s\n" "pgbench simple-update, 10 clients" "${pg%.*} tps"

echo
echo "takeover after kill -9 of the owner: $TAKEOVER sessions, --lease $LEASE"
start_navd A --store "$PG" --node A --lease "$LEASE"
A_PID=$PID; A_SOCK=$SOCK
python3 - "$A_SOCK" "$TAKEOVER" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); n = int(sys.argv[2])
batch = [{"jsonrpc": "2.0", "id": i, "method": "session.open", "params": {"name": "t-%d" % i}} for i in range(n)]
for i in range(0, n, 500):
    s.sendall((json.dumps(batch[i:i + 500]) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"): buf += s.recv(1 << 20)
PY
start_navd B --store "$PG" --node B --lease "$LEASE"
B_SOCK=$SOCK
t0=$(date +%s%N)
kill -9 "$A_PID"
wait "$A_PID" 2>/dev/null || true
deadline=$((SECONDS + 60))
while [ "$("${PSQL[@]}" -c "SELECT count(*) FROM navd_sessions WHERE name LIKE 't-%' AND node = 'B'")" != "$TAKEOVER" ]; do
    (( SECONDS < deadline )) || { log "cluster-bench: B did not take the sessions over within 60 s"; exit 1; }
    sleep 0.02
done
last=$((TAKEOVER - 1))
until echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tree\",\"params\":{\"session\":\"t-$last\"}}" | socat -t2 - UNIX-CONNECT:"$B_SOCK" | grep -q '"result"'; do
    (( SECONDS < deadline )) || { log "cluster-bench: B does not serve t-$last within 60 s"; exit 1; }
    sleep 0.01
done
t1=$(date +%s%N)
printf "%-34s %10d ms\n" "kill -9 → all served by B" $(( (t1 - t0) / 1000000 ))
