#!/usr/bin/env bash
# make demo: navd plus, in tmux, two nav-tui side by side on the same session and a navctl pane
# playing a scripted tour (scripts/demo-tour.sh). Attaches when run from a terminal; otherwise
# prints how to attach. Closing the tmux session (Ctrl-b : kill-session, or `tmux kill-session -t
# navd-demo`) stops navd too.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.build/release
NAME=${DEMO_SESSION:-navd-demo}
SOCK=${DEMO_SOCKET:-/tmp/navd-demo-$(id -u).sock}
tmux kill-session -t "$NAME" 2>/dev/null || true
rm -f "$SOCK"

# Window 0: navd itself (its log is visible there); window 1: the two UIs and the tour.
# tmux sends SIGHUP when the session goes, which navd takes as "reload": the wrapper turns it into SIGTERM.
tmux new-session -d -s "$NAME" -n navd -x 200 -y 50 \
    "bash -c '$BIN/navd --socket $SOCK --ephemeral & pid=\$!; trap \"kill -TERM \$pid\" HUP TERM EXIT; wait \$pid'"
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || { echo "demo: navd did not start (tmux attach -t $NAME shows why)"; exit 1; }
tmux new-window -t "$NAME" -n ui "NAVD_SOCKET=$SOCK $BIN/nav-tui"
tmux split-window -t "$NAME:ui" -h "NAVD_SOCKET=$SOCK $BIN/nav-tui"
tmux split-window -t "$NAME:ui" -v -f -l 14 \
    "NAVD_SOCKET=$SOCK NAVCTL=$BIN/navctl PAUSE=${PAUSE:-2} scripts/demo-tour.sh; exec env NAVD_SOCKET=$SOCK PATH=$BIN:\$PATH bash -i"
tmux select-window -t "$NAME:ui"
echo "navd demo on $SOCK in tmux session $NAME: two nav-tui (top) and the navctl tour (bottom)."
echo "  attach: tmux attach -t $NAME     stop: tmux kill-session -t $NAME"
if [ -t 0 ] && [ -t 1 ] && [ -z "${TMUX:-}" ]; then exec tmux attach -t "$NAME"; fi
