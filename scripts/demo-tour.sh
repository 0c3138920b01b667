#!/usr/bin/env bash
# The scripted tour `make demo` plays in its navctl pane (also run by the tests with PAUSE=0):
# open a product, hit the login precondition, complete login, check out; then pop to a screen,
# ask for the URL of what is shown, reset, open a tab bar in a modal and pop back.
# Needs NAVD_SOCKET (or navctl's default socket) and navctl on PATH or in NAVCTL.
set -euo pipefail
NAVCTL=${NAVCTL:-navctl}
PAUSE=${PAUSE:-2}
SESSION=${SESSION:-main}
say() { printf '\n\033[1m# %s\033[0m\n' "$*"; sleep "$PAUSE"; }
run() { printf '$ navctl %s\n' "$*"; "$NAVCTL" "$1" --session "$SESSION" "${@:2}"; }
# The id of the innermost flow on the visible path.
visible_flow() {
    "$NAVCTL" tree --json --session "$SESSION" | python3 -c '
import json, sys
t = json.load(sys.stdin); vis = t["visible"]; found = None
def walk(n):
    global found
    if n["id"] in vis and n["kind"] == "flow": found = n["id"]
    for c in n.get("children", []): walk(c)
    if "presented" in n: walk(n["presented"])
walk(t["root"]); print(found or "")'
}

say "A front-end answers the payment precondition (provider), in the background"
"$NAVCTL" provide cart.paymentAuthorized --pass >/dev/null 2>&1 &
PROVIDER=$!
trap 'kill -KILL $PROVIDER 2>/dev/null || true' EXIT
sleep 0.3

say "Open a product by deep link"
run open /product/42
run set cart.items=1

say "A related product replaces this one in the history: pop to shop.Home and push, one commit (popUpTo)"
run navigate shop.Product --with id=p7 --pop-up-to shop.Home --hint animated=false
say "Where is the user? The URL of the visible path, from the graph's links (link.resolve)"
run link

say "Check out: the login precondition fails and presents the Login flow (the navigation waits)"
printf '$ navctl navigate cart.Checkout --by present   (in the background)\n'
CHECKOUT_OUT=$(mktemp)
"$NAVCTL" navigate cart.Checkout --by present --session "$SESSION" >"$CHECKOUT_OUT" 2>&1 &
CHECKOUT=$!
for _ in $(seq 100); do [ -n "$(visible_flow)" ] && break; sleep 0.05; done
LOGIN=$(visible_flow)
run tree

say "Complete login: its completion establishes loggedIn (recover.facts), so checkout goes on"
run complete "$LOGIN" --result '{"user":"ann"}'
wait "$CHECKOUT"
cat "$CHECKOUT_OUT"; rm -f "$CHECKOUT_OUT"
CHECKOUT_FLOW=$(visible_flow)

say "Go through the checkout flow: payment (asks the provider), confirm"
run navigate cart.Payment
run navigate cart.Confirm --with total=42

say "Place the order: the flow completes with its result, and navigation continues to the order (then)"
run complete "$CHECKOUT_FLOW" --result '{"orderId":"ord-1","total":42}'
run tree

say "Back to the graph's root, fresh tabs, one commit (reset)"
run reset

say "A tab bar inside a modal: Settings is a tab container; select moves between its tabs"
run navigate account.Account --by select
run navigate account.Settings --by present --hint transition=sheet
run navigate account.Privacy --by select
run tree
say "Pop back to the account screen: the modal and its tab bar go, one commit (dismiss --to)"
run dismiss --to account.Account
say "Tour done. Both UIs followed every step; drive them with their keys now (q quits a UI)."
