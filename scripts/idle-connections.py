#!/usr/bin/env python3
"""Opens N connections to navd, each answering one ping, then keeps them idle and reports navd's
resident memory per idle connection (from navd's own `stats`), and checks navd still serves."""
import json, socket, sys, time

path, n = sys.argv[1], int(sys.argv[2])

def call(sock, method, params=None, id=1):
    msg = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    sock.sendall((json.dumps(msg) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit(f"idle: navd closed a connection while answering {method}")
        buf += chunk
    return json.loads(buf)

def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s

probe = connect()
before = call(probe, "stats")["result"]["memory"]["rss"]
conns, failed = [], 0
t0 = time.time()
for i in range(n):
    try:
        conns.append(connect())
    except OSError as e:
        failed += 1
        if failed == 1:
            print(f"idle: connection {i} refused: {e}", file=sys.stderr)
for s in conns:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
answered = 0
for s in conns:
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    answered += b'"pong"' in buf
elapsed = time.time() - t0
stats = call(probe, "stats", id=2)["result"]
after = stats["memory"]["rss"]
fresh = connect()
ok = call(fresh, "ping", id=3).get("result") == "pong"
per = (after - before) / max(1, len(conns))
print(f"idle connections: {len(conns)} opened, {answered} answered a ping ({failed} refused) in {elapsed:.2f} s; "
      f"navd reports {stats.get('connections')} connections; RSS {before / 2**20:.1f} -> {after / 2**20:.1f} MiB = "
      f"{per / 1024:.1f} KB per idle connection (goal <= 32 KB); a new connection is served: {ok}")
if failed or answered != n or not ok:
    sys.exit(1)
