#!/usr/bin/env bash
# make cluster-demo: cluster mode in tmux. A throwaway PostgreSQL, two navd nodes (A and B) sharing
# sessions through it, a nav-tui attached to each node (both show session "main", which node A
# owns), and a shell where navctl drives node A. Kill node A (the line printed in the shell pane
# does it) and watch node B take "main" over after the lease (2 s): B's nav-tui goes on showing
# it, and navctl against B navigates it. Closing the tmux session stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.build/release
NAME=${DEMO_SESSION:-navd-cluster-demo}
tmux kill-session -t "$NAME" 2>/dev/null || true
# A fresh folder of one's own (a fixed name in /tmp could be another user's); DEMO_DIR names one
# instead. Others may pass through it (mode 0711: PostgreSQL runs as its own user under root) but
# not list it; the sockets and PostgreSQL's folder in it are private.
if [ -n "${DEMO_DIR:-}" ]; then
    WORK=$DEMO_DIR
    scripts/pg-temp.sh stop "$WORK/pg" 2>/dev/null || true
    rm -rf "$WORK"
    mkdir -p "$WORK"
else
    WORK=$(mktemp -d /tmp/navd-cluster-demo.XXXXXX)
fi
chmod 711 "$WORK"
PG=$(scripts/pg-temp.sh start "$WORK/pg")
A=$WORK/A.sock B=$WORK/B.sock

node() {  # NAME SOCKET: a navd node whose pane stops it when tmux hangs up
    # When the node is killed the pane stays (its message visible) until tmux closes it.
    echo "bash -c '$BIN/navd --socket $2 --store \"$PG\" --node $1 --lease 2s & pid=\$!; echo \$pid > $WORK/$1.pid; trap \"kill -TERM \$pid; exit\" HUP TERM; wait \$pid; echo navd node $1 exited; read -r _'"
}
tmux new-session -d -s "$NAME" -n nodes -x 200 -y 50 "$(node A "$A")"
for _ in $(seq 100); do [ -S "$A" ] && break; sleep 0.05; done
tmux split-window -t "$NAME:nodes" -v "$(node B "$B")"
for _ in $(seq 100); do [ -S "$B" ] && break; sleep 0.05; done
[ -S "$A" ] && [ -S "$B" ] || { echo "cluster-demo: a node did not start (tmux attach -t $NAME shows why)"; exit 1; }
tmux new-window -t "$NAME" -n ui "NAVD_SOCKET=$A $BIN/nav-tui"
tmux split-window -t "$NAME:ui" -h "NAVD_SOCKET=$B $BIN/nav-tui"
tmux split-window -t "$NAME:ui" -v -f -l 12 "bash --rcfile <(cat <<RC
export PATH=$BIN:\\\$PATH NAVD_SOCKET=$A
echo 'left: nav-tui on node A (owner of main); right: nav-tui on node B (subscribed through PostgreSQL)'
echo 'try:  navctl navigate shop.Product --with id=7      then:  navctl dismiss'
echo 'kill node A:  kill -9 \\\$(cat $WORK/A.pid)     then on B:  navctl --socket $B navigate cart.Cart --by select'
RC
) -i"
tmux select-window -t "$NAME:ui"
# PostgreSQL stops when the tmux session is gone.
nohup bash -c "while tmux has-session -t '$NAME' 2>/dev/null; do sleep 1; done; '$PWD/scripts/pg-temp.sh' stop '$WORK/pg'" >/dev/null 2>&1 &
echo "cluster demo in tmux session $NAME: nodes A ($A) and B ($B) on PostgreSQL in $WORK/pg"
echo "  attach: tmux attach -t $NAME     stop: tmux kill-session -t $NAME (PostgreSQL stops with it)"
if [ -t 0 ] && [ -t 1 ] && [ -z "${TMUX:-}" ]; then exec tmux attach -t "$NAME"; fi
