#!/usr/bin/env python3
"""Soak navd: mixed navigations (with command and check preconditions), subscribers that come and
go, graph reloads every 2 s (the coordinators in another order: SOAK_RELOAD_SECONDS), and navd killed with -9 and restarted every minute on the same state file (its log rewritten
into the snapshot every 64 KiB of records: SOAK_LOG_COMPACT_BYTES). At the end it checks
that no acknowledged version was lost (every session's version after a restart is at least the last
one a reply acknowledged) and prints descriptors, child processes and memory at each restart.

    scripts/soak.py NAVD SECONDS      (make soak: 600 s)
"""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time

NAVD, SECONDS = sys.argv[1], int(sys.argv[2])
WORK = tempfile.mkdtemp(prefix="navd-soak-")
SOCK, STATE, GRAPH = WORK + "/navd.sock", WORK + "/state.sqlite", WORK + "/graph"
os.makedirs(GRAPH)
COORDINATORS = [
    "  Home: {opens: [Item, Guarded, Checked]}\n",
    "  Item: {setup: {type: object, required: [id], properties: {id: {type: string}}}, opens: [Item]}\n",
    "  Guarded: {preconditions: [quick]}\n",
    "  Checked: {preconditions: [ready]}\n",
]
PRECONDITIONS = """preconditions:
  quick: {command: [sh, -c, "read line; exit 0"], timeout: 2s}
  ready: {check: {fact: ready, equals: true}}
"""

def write_graph(order):
    """The graph with its coordinators in `order` (a reload renumbers them)."""
    open(GRAPH + "/app.yaml.new", "w").write("root: {stack: Home}\ncoordinators:\n" + "".join(COORDINATORS[i] for i in order) + PRECONDITIONS)
    os.rename(GRAPH + "/app.yaml.new", GRAPH + "/app.yaml")

write_graph([0, 1, 2, 3])

class Client:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.connect(SOCK)
        self.f = self.s.makefile("rb")
        self.n = 0
    def call(self, method, **params):
        self.n += 1
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}).encode() + b"\n")
        while True:
            line = self.f.readline()
            if not line:
                raise ConnectionError("closed")
            m = json.loads(line)
            if m.get("id") == self.n:
                return m
    def close(self):
        try: self.s.close()
        except OSError: pass

acked = {}          # session -> highest version a success reply acknowledged
lock = threading.Lock()
stop = threading.Event()
errors = {"unexpected": 0, "connection": 0}
requests = [0]

def worker(i):
    session = "s%d" % i
    while not stop.is_set():
        try:
            c = Client()
            c.call("session.open", name=session)
            c.call("context.set", session=session, facts={"ready": True})
            while not stop.is_set():
                for method, params in (("navigate", {"to": "Item", "with": {"id": "x%d" % i}}), ("dismiss", {}),
                                       ("navigate", {"to": "Guarded"}), ("dismiss", {}),
                                       ("navigate", {"to": "Checked"}), ("dismiss", {})):
                    r = c.call(method, session=session, **params)
                    requests[0] += 1
                    if "result" in r:
                        with lock:
                            acked[session] = max(acked.get(session, 0), r["result"]["version"])
                    elif r["error"]["data"]["kind"] not in ("notAllowed", "unknownNode", "conflict"):
                        errors["unexpected"] += 1
        except (ConnectionError, OSError, json.JSONDecodeError, KeyError):
            errors["connection"] += 1
            time.sleep(0.05)

def subscribers():
    while not stop.is_set():
        try:
            cs = [Client() for _ in range(5)]
            for k, c in enumerate(cs): c.call("subscribe", session="s%d" % k)
            time.sleep(0.2)
            for c in cs: c.close()
        except (ConnectionError, OSError):
            time.sleep(0.05)

reloads = [0]

def reloader():
    """graph.reload every 2 s with the coordinators in another order, so that kills land after
    reloads and during the compactions that follow them (SOAK_RELOAD_SECONDS, 0: none)."""
    every = float(os.environ.get("SOAK_RELOAD_SECONDS", "2"))
    orders = [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2]]
    while every > 0 and not stop.wait(every):
        try:
            with lock:
                write_graph(orders[(reloads[0] + 1) % len(orders)])
            c = Client()
            r = c.call("graph.reload")
            c.close()
            if r.get("result", {}).get("ok"):
                reloads[0] += 1
            else:
                errors["unexpected"] += 1
                print("reload refused: %s" % r)
        except (ConnectionError, OSError, json.JSONDecodeError):
            errors["connection"] += 1

def start():
    # A small log threshold: the snapshot is rewritten every few hundred commits, so kills land
    # during compactions too.
    p = subprocess.Popen([NAVD, "--socket", SOCK, "--state", STATE, "--graph", GRAPH, "--log-level", "error",
                          "--log-compact-bytes", os.environ.get("SOAK_LOG_COMPACT_BYTES", "65536"),
                          "--log-compact-ratio", "0"],
                         stderr=open(WORK + "/navd.log", "a"))
    for _ in range(200):
        try:
            Client().call("ping"); return p
        except OSError:
            time.sleep(0.05)
    raise SystemExit("navd did not start: " + open(WORK + "/navd.log").read())

def measure(p):
    fds = len(os.listdir("/proc/%d/fd" % p.pid))
    children = subprocess.run(["pgrep", "-c", "-P", str(p.pid)], capture_output=True, text=True).stdout.strip() or "0"
    rss = int([l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmRSS")][0].split()[1])
    return fds, int(children), rss

navd = start()
threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(8)] + \
          [threading.Thread(target=subscribers, daemon=True), threading.Thread(target=reloader, daemon=True)]
for t in threads: t.start()
began, lost, rows = time.time(), 0, []
while time.time() - began < SECONDS:
    time.sleep(min(60, max(1, SECONDS - (time.time() - began))))
    fds, children, rss = measure(navd)
    with lock:
        navd.send_signal(signal.SIGKILL)
        navd.wait()
        snapshot = dict(acked)
        navd = start()
        c = Client()
        for session, version in snapshot.items():
            r = c.call("tree", session=session)
            have = r.get("result", {}).get("version", -1)
            if have < version:
                lost += 1
                print("LOST: session %s acknowledged v%d, restored v%d" % (session, version, have))
        c.close()
    rows.append((round(time.time() - began), requests[0], fds, children, rss))
    print("t=%4ds requests=%d navd before kill -9: fds=%d children=%d rss=%d KiB" % rows[-1], flush=True)
stop.set()
time.sleep(0.5)
fds, children, rss = measure(navd)
navd.send_signal(signal.SIGTERM)
status = navd.wait()
print("soak: %d s, %d requests, %d graph reloads, %d restarts after kill -9, lost acknowledged versions: %d, unexpected errors: %d, "
      "reconnects: %d, last fds=%d children=%d rss=%d KiB, exit status on SIGTERM: %d"
      % (SECONDS, requests[0], reloads[0], len(rows), lost, errors["unexpected"], errors["connection"], fds, children, rss, status))
failed = lost or errors["unexpected"] or status != 0
if failed:
    print("soak: navd's state, graph and log are kept in " + WORK)
else:
    shutil.rmtree(WORK, ignore_errors=True)
sys.exit(1 if failed else 0)
