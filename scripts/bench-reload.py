#!/usr/bin/env python3
"""What a graph reload costs the other clients: one client asks `graph.reload` of a graph of
COORDINATORS screens while another sends `ping` after `ping`, waiting for each; prints the reload's
round trip and the longest and median ping round trip during it, for each graph size and number of
sessions open (each showing two screens), as a Markdown table.

    python3 scripts/bench-reload.py .build/release/navd [COORDINATORS,...] [SESSIONS,...]

Defaults: 10000,50000 coordinators; 0,100000 sessions. navd runs with --ephemeral; DURABLE=1
runs it in its default durable mode, a state file beside it (the reload then writes every
session's state rebuilt).
"""
import json, os, shutil, socket, subprocess, sys, tempfile, threading, time

NAVD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/release/navd")
SIZES = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "10000,50000").split(",")]
SESSIONS = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "0,100000").split(",")]
DURABLE = os.environ.get("DURABLE") == "1"


class Raw:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.buf = b""
        self.n = 0

    def send(self, method, **params):
        self.n += 1
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}).encode() + b"\n")
        return self.n

    def reply(self, id):
        while True:
            while b"\n" not in self.buf:
                chunk = self.s.recv(1 << 20)
                if not chunk:
                    raise RuntimeError("navd closed the connection")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            m = json.loads(line)
            if isinstance(m, list) or m.get("id") == id:
                if isinstance(m, dict) and "error" in m:
                    raise RuntimeError(m["error"])
                return m

    def call(self, method, **params):
        return self.reply(self.send(method, **params))["result"]

    def batch(self, calls):
        reqs = []
        for method, params in calls:
            self.n += 1
            reqs.append({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        self.s.sendall(json.dumps(reqs).encode() + b"\n")
        return self.reply(None)


def graph(n):
    lines = ["root: {stack: Home}", "coordinators:", "  Home: {opens: [S0, S%d]}" % (n - 1)]
    lines += ["  S%d: {setup: {type: object, properties: {id: {type: string}}}}" % i for i in range(n)]
    return "\n".join(lines) + "\n"


def measure(work, n, sessions):
    d = tempfile.mkdtemp(dir=work)
    g = d + "/graph"
    os.mkdir(g)
    open(g + "/app.yaml", "w").write(graph(n))
    sock = d + "/n.sock"
    big = ["--max-graph-nodes", "100000000", "--max-graph-file", "1000000000"]
    if "--max-graph-bytes" in subprocess.run([NAVD, "serve", "--help"], capture_output=True, text=True).stdout:
        big += ["--max-graph-bytes", "1000000000"]  # (a navd before that bound has none)
    state = ["--state", d + "/navd.state"] if DURABLE else ["--ephemeral"]
    p = subprocess.Popen([NAVD, "--socket", sock, "--graph", g, "--log-level", "error"] + state + big,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(sock):
            if time.monotonic() > deadline or p.poll() is not None:
                raise RuntimeError("navd did not start")
            time.sleep(0.01)
        c = Raw(sock)
        for start in range(0, sessions, 500):  # a batch holds at most --max-batch (1,000) requests
            calls = []
            for i in range(start, min(sessions, start + 500)):
                calls.append(("session.open", {"name": "s%d" % i}))
                calls.append(("navigate", {"session": "s%d" % i, "to": "app.S%d" % ((n - 1) * (i % 2)), "with": {"id": "x"}}))
            c.batch(calls)
        pinger = Raw(sock)
        pings, done = [], threading.Event()

        def ping():
            while not done.is_set():
                t = time.perf_counter()
                pinger.call("ping")
                pings.append(time.perf_counter() - t)

        th = threading.Thread(target=ping)
        th.start()
        time.sleep(0.2)  # the pinger's round trips before the reload, as a baseline
        before = len(pings)
        t = time.perf_counter()
        r = c.call("graph.reload")
        reload_ms = (time.perf_counter() - t) * 1000
        done.set()
        th.join()
        if not r.get("ok"):
            raise RuntimeError("reload refused: %s" % r)
        during = sorted(pings[before:]) or [0]
        return reload_ms, max(during) * 1000, during[len(during) // 2] * 1000, len(during)
    finally:
        p.terminate()
        p.wait()


def main():
    work = tempfile.mkdtemp(prefix="navd-reload-")
    try:
        print("| coordinators | sessions | graph.reload ms | longest ping ms during it | median ping ms | pings answered |")
        print("|---|---|---|---|---|---|")
        for n in SIZES:
            for s in SESSIONS:
                r, mx, med, count = measure(work, n, s)
                print("| %d | %d | %.0f | %.1f | %.3f | %d |" % (n, s, r, mx, med, count), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
