#!/usr/bin/env bash
# make web: navd on SOCKET (started here unless one answers there) and nav-web on PORT, in the
# foreground; Ctrl-C stops nav-web, and navd too when it was started here.
set -euo pipefail
cd "$(dirname "$0")/.."
SOCK=$1 PORT=$2
shift 2
NAVD_PID=""
if ! echo '{"jsonrpc":"2.0","id":1,"method":"ping"}' | socat -t1 - UNIX-CONNECT:"$SOCK" 2>/dev/null | grep -q pong; then
    mkdir -p "$(dirname "$SOCK")"
    .build/release/navd --socket "$SOCK" &
    NAVD_PID=$!
    for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
    echo "web: started navd on $SOCK (pid $NAVD_PID)"
else
    echo "web: using the navd that answers on $SOCK"
fi
trap '[ -n "$NAVD_PID" ] && kill "$NAVD_PID" 2>/dev/null; true' EXIT
.build/release/nav-web --socket "$SOCK" --port "$PORT" --navd .build/release/navd "$@"
