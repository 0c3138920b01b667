#!/bin/sh
# Precondition `cart.inStock`: is everything in the cart in stock?
# navd runs it without a shell as: in-stock.sh SESSION TARGET, with the navigation as JSON on stdin.
# Exit 0 to pass; otherwise the first line printed is the reason shown to the user.
# The warehouse is simulated by a file: while /tmp/navd-shop-out-of-stock exists, nothing ships.
session="$1"
target="$2"
cat >/dev/null   # the navigation, unused here
if [ -e /tmp/navd-shop-out-of-stock ]; then
  echo "an item in the cart is out of stock (session $session, $target)"
  exit 1
fi
exit 0
