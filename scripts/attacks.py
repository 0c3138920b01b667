#!/usr/bin/env python3
"""Replay the attacks of the hardening work against a running build of navd, as a hostile local
client would, while another client pings navd every 20 ms. Each attack passes when navd refuses
or survives it as PROTOCOL.md and SECURITY.md say, and the pinging client's slowest answer during
it stays under a second. Prints one line per attack (ping p50, p99 and max while it ran, navd's
resident memory after it) and exits 1 if any failed.

    scripts/attacks.py NAVD        (make attacks: a release build; ATTACKS=17,21 runs those alone)

The first six are the attacks of the first hardening pass; the next ten those of the robustness
issue (depth, committed replies, a provider flood, recovery facts, memory, per-uid fairness, the
socket path, pending work, clients against a stuck server, restored state); the last five those of
the durable store's integrity (a damaged log, reloads with compactions and kill -9, refused keys,
planted state files). The attacker runs as
uid 65534 (setpriv) where the attack is about another user. Each also stays as a test of
`make test` (Tests/EndToEndTests/AttackTests.swift, HardeningTests.swift, Tests/NavServerTests/
FairnessTests.swift, Clients/python/tests/test_hostile_server.py).
"""
import json, os, resource, shutil, signal, socket, subprocess, sys, tempfile, threading, time, traceback

NAVD = os.path.abspath(sys.argv[1])
NAVCTL = os.path.join(os.path.dirname(NAVD), "navctl")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO + "/Clients/python")
import navd_client  # noqa: E402 - the repository's own client
WORK = tempfile.mkdtemp(prefix="navd-attacks-")
os.chmod(WORK, 0o755)  # the attacker of attack 2 is another uid
SOCK, GRAPH = WORK + "/navd.sock", WORK + "/graph"
shutil.copytree(REPO + "/Examples/shop", GRAPH)
# Screens the attacks need beside the example's: reached by `root` (always available).
open(GRAPH + "/attacks.yaml", "w").write("""module: attacks
coordinators:
  Form: {opens: [Waits, Paid, Slow, Draft]}
  Waits: {preconditions: [pause], opens: [Waits]}
  Paid: {preconditions: [asked]}
  Slow: {preconditions: [sleepy]}
  Draft: {leave: [asked]}
  Big: {opens: [Big]}
preconditions:
  pause: {command: [sh, -c, "cat >/dev/null; sleep 0.1"]}
  asked: {provider: true, timeout: 30s}
  sleepy: {command: [sleep, "5"], timeout: 20s}
""")


def request(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return m


class Client:
    def __init__(self, timeout=30):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(SOCK)
        self.f = self.s.makefile("rb")
        self.n = 0

    def send(self, message):
        self.s.sendall(json.dumps(message).encode() + b"\n")

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("navd closed the connection")
        return json.loads(line)

    def call(self, method, **params):
        self.n += 1
        self.send(request(self.n, method, params))
        while True:
            m = self.read()
            if m.get("id") == self.n:
                return m

    def close(self):
        self.s.close()


class Pinger(threading.Thread):
    """Pings every 20 ms on its own connection and keeps the slowest round trip of a window."""

    def __init__(self):
        super().__init__(daemon=True)
        self.c = Client(timeout=5)
        self.worst = 0.0
        self.failed = None
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def run(self):
        self.samples = []
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                r = self.c.call("ping")
                assert r.get("result") == "pong", r
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                self.failed = repr(e)
                return
            took = time.monotonic() - t
            with self.lock:
                self.worst = max(self.worst, took)
                self.samples.append(took)
            time.sleep(0.02)

    def window(self):
        """The slowest ping since the last window, and p50/p99 of the window's pings (seconds)."""
        with self.lock:
            w, self.worst = self.worst, 0.0
            samples, self.samples = sorted(self.samples), []
        pct = lambda q: samples[min(len(samples) - 1, int(len(samples) * q))] if samples else 0.0
        self.last = (pct(0.5), pct(0.99), len(samples))
        return w


def kind(reply):
    return ((reply.get("error") or {}).get("data") or {}).get("kind")


# --- the attacks ------------------------------------------------------------------------------

def placeholder_values():
    c = Client()
    shaped = c.call("session.open", name="{with.x}")  # refused: session names are plain names now
    c.call("session.open", name="a1")
    c.call("context.set", session="a1", facts={"loggedIn": True, "cart.items": 2})
    c.call("navigate", session="a1", to="cart.Cart", by="select")
    r = c.call("navigate", session="a1", to="cart.Checkout", by="present", **{"with": {"x": "{with.x}{with.x}"}})
    c.close()
    return kind(shaped) == "invalidParams" and ("result" in r or kind(r) is not None), "session {with.x}: %s; navigate answered: %s" % (
        kind(shaped), kind(r) or "ok")


def reload_without_role():
    lines = "\n".join(json.dumps(m) for m in [
        request(1, "graph.reload", {"path": "/etc"}),
        request(2, "graph.reload"),
        request(3, "provide", {"preconditions": ["cart.paymentAuthorized"]}),
        request(4, "context.set", {"facts": {"loggedIn": True}}),
    ]) + "\n"
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "socat", "-t2", "-",
                        "UNIX-CONNECT:" + SOCK], input=lines.encode(), capture_output=True, timeout=20)
    kinds = [kind(json.loads(l)) for l in p.stdout.decode().splitlines()]
    owner = Client()
    path = owner.call("graph.reload", path="/etc")
    owner.close()
    ok = kinds == ["accessDenied"] * 4 and kind(path) is not None and "/etc/" not in json.dumps(path.get("error", {}).get("data", {}))
    return ok, "uid 65534: %s; navd's own uid with a path: %s" % (",".join(map(str, kinds)), kind(path))


BOMB = "x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    "x%d: &a%d [%s]\n" % (i, i, ", ".join(["*a%d" % (i - 1)] * 10)) for i in range(1, 10))


def alias_bomb():
    bomb_dir = WORK + "/bomb"
    os.makedirs(bomb_dir, exist_ok=True)
    open(bomb_dir + "/app.yaml", "w").write(BOMB)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.monotonic()
    check = subprocess.run([NAVD, "check", bomb_dir], capture_output=True, timeout=60)
    took = time.monotonic() - t
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    said = check.stdout.decode() + check.stderr.decode()
    # The same file as a module of the running graph, reloaded by navd's own uid.
    saved = open(GRAPH + "/cart.yaml").read()
    open(GRAPH + "/cart.yaml", "w").write("module: cart\n" + BOMB)
    c = Client()
    r = c.call("graph.reload")
    open(GRAPH + "/cart.yaml", "w").write(saved)
    c.close()
    refused = r.get("result", {}).get("ok") is False or kind(r) is not None
    ok = check.returncode == 1 and "alias" in said and took < 5 and refused
    return ok, "navd check: exit %d in %.2f s, peak RSS of children %.0f MB; graph.reload refused: %s" % (
        check.returncode, took, max(rss_mb, before / 1024), refused)


def big_batches():
    c = Client(timeout=60)
    c.send([request(i, "context.set", {"facts": {"k%d" % i: i}}) for i in range(9000)])
    r = c.read()
    too_big = isinstance(r, dict) and kind(r) == "limitExceeded"
    # Fill a session to --max-facts (10,000), then ask for all of it a thousand times in one batch.
    c.call("session.open", name="facts")
    for chunk in range(10):
        c.call("context.set", session="facts", facts={"f%d" % (chunk * 1000 + i): "v" * 32 for i in range(1000)})
    t = time.monotonic()
    c.send([request(i, "context.get", {"session": "facts"}) for i in range(1000)])
    try:
        r = c.read()
        outcome = "answered %d replies" % len(r) if isinstance(r, list) else "refused: %s" % kind(r)
    except (ConnectionError, OSError) as e:
        outcome = "disconnected past --max-output (%s)" % e.__class__.__name__
    took = time.monotonic() - t
    c.close()
    return too_big, "9,000 requests: %s; 1,000 context.get over 10,000 facts: %s in %.1f s" % (
        kind(r) if not too_big else "limitExceeded", outcome, took)


def pipelining_reader():
    c = Client(timeout=30)
    got = [0]

    def reader():
        try:
            while got[0] < 2000:
                c.read()
                got[0] += 1
        except Exception:  # noqa: BLE001
            pass

    t = threading.Thread(target=reader)
    t.start()
    payload = b"".join(json.dumps(request(i, "graph.describe")).encode() + b"\n" for i in range(2000))
    c.s.sendall(payload)
    t.join(60)
    c.close()
    return got[0] == 2000, "%d of 2,000 graph.describe replies" % got[0]


def socket_paths():
    victim = WORK + "/not-a-socket"
    open(victim, "w").write("keep me")
    a = subprocess.run([NAVD, "--ephemeral", "--socket", victim], capture_output=True, timeout=20)
    long_path = WORK + "/" + "d" * 120 + ".sock"
    b = subprocess.run([NAVD, "--ephemeral", "--socket", long_path], capture_output=True, timeout=20)
    ok = a.returncode != 0 and open(victim).read() == "keep me" and b.returncode != 0 and not os.path.exists(long_path[:107])
    return ok, "regular file: exit %d, file kept; %d-byte path: exit %d" % (a.returncode, len(long_path), b.returncode)


# --- the attacks of the robustness issue ----------------------------------------------------------

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def as_nobody(code, *args, timeout=120, wait=True, sock=None):
    """Runs Python `code` as uid 65534 with the repository's client importable (and $SOCK the
    socket, the main navd's unless `sock`); its last stdout line is JSON, answered parsed (or the
    Popen when not `wait`)."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": REPO + "/Clients/python", "SOCK": sock or SOCK}
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable  # one uid 65534 may run
    argv = NOBODY + [python, "-c", code] + [str(a) for a in args]
    if not wait:
        return subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p = subprocess.run(argv, env=env, capture_output=True, timeout=timeout)
    lines = p.stdout.decode().strip().splitlines()
    if p.returncode != 0 or not lines:
        raise RuntimeError("the attacker failed: %s" % p.stderr.decode()[-400:])
    return json.loads(lines[-1])


def start_navd(*args, sock=None):
    """Another navd (release) on a socket of its own (or `sock`); answers (Popen, socket path)."""
    d = tempfile.mkdtemp(prefix="navd-attack-", dir=WORK)
    sock = sock or d + "/n.sock"
    log = open(d + "/navd.log", "wb")
    p = subprocess.Popen([NAVD, "--socket", sock, "--log-level", "warning"] + list(args), stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 20
    while True:  # until it answers (a socket file may be left from a navd killed before it)
        try:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            probe.connect(sock)
            probe.close()
            return p, sock
        except OSError:
            probe.close()
        if p.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("navd did not start: %s" % open(d + "/navd.log").read())
        time.sleep(0.02)


def rss_mb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def deep_nesting():
    """Presents over presents until navd refuses; navctl and the Python client read the deepest
    tree; navd killed -9 restarts on its state file and serves the same tree."""
    state = tempfile.mkdtemp(prefix="navd-deep-", dir=WORK) + "/s.sqlite"
    p, sock = start_navd("--state", state)
    c = navd_client.Client(sock)
    n, refusal = 0, None
    while n < 10000:
        try:
            c.navigate("shop.Product", by="present", with_={"id": "p%d" % n})
            n += 1
        except navd_client.NavdError as e:
            refusal = e
            break
    tree = c.call("tree")
    printed = subprocess.run([NAVCTL, "--socket", sock, "tree"], capture_output=True, timeout=20)
    py = navd_client.Client(sock).tree()
    c.close()
    p.send_signal(signal.SIGKILL)
    p.wait()
    p2, _ = start_navd("--state", state, sock=sock)
    again = navd_client.Client(sock).call("tree")
    p2.terminate()
    p2.wait(10)
    ok = (refusal is not None and refusal.kind == "limitExceeded" and refusal.data.get("limit") == "--max-tree-depth"
          and printed.returncode == 0 and len(py.visible) == len(tree["visible"]) and again == tree)
    return ok, "%d nested presents (%d levels), then %s %s; navctl tree exit %d; restarted after kill -9 with the same tree: %s" % (
        n, len(tree["visible"]), refusal.kind if refusal else "none", refusal.data.get("limit") if refusal else "",
        printed.returncode, again == tree)


def committed_answers():
    """A navigation that waits, then replaces its own source, is answered as committed (and so is
    a keyed retry)."""
    c = navd_client.Client(SOCK)
    c.call("session.open", name="a2")
    form = c.navigate("attacks.Form", by="root", session="a2")
    r = c.navigate("attacks.Waits", by="replace", from_=form["node"], key="k", session="a2")
    again = c.navigate("attacks.Waits", by="replace", from_=form["node"], key="k", session="a2")
    top = c.tree(session="a2").visible[-1]
    c.close()
    return r == again and r["node"] == top, "replace after a command: version %d, node %s on top, keyed retry equal: %s" % (
        r["version"], r["node"], r == again)


FLOOD = r"""
import json, socket, sys, threading
from navd_client import Client
n = int(sys.argv[1])
c = Client(__import__("os").environ["SOCK"], timeout=60)
c.call("session.open", name="att")
c.navigate("attacks.Form", by="root", session="att")
s = c._sock
got = [0]
def read():
    f = s.makefile("rb")
    while got[0] < n and f.readline():
        got[0] += 1
t = threading.Thread(target=read); t.start()
line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "navigate", "params": {"session": "att", "to": "attacks.Paid"}}).encode() + b"\n"
s.sendall(line * n)
t.join(120)
print(json.dumps({"answered": got[0]}))
"""


def provider_flood():
    """100,000 pipelined navigations needing a provider, from uid 65534 in its own session, while
    a provider answers: the provider is never disconnected, and navd's own uid is still served."""
    answered = [0]

    def yes(_):
        answered[0] += 1
        return True
    prov = navd_client.Provider(SOCK, {"attacks.asked": yes})
    r = as_nobody(FLOOD, 100000, timeout=300)
    c = navd_client.Client(SOCK)
    c.call("session.open", name="a3")
    c.navigate("attacks.Form", by="root", session="a3")
    t = time.monotonic()
    mine = c.navigate("attacks.Paid", session="a3")
    took = time.monotonic() - t
    provided = c.call("stats")["provided"]
    c.close()
    prov.stop()
    ok = r["answered"] == 100000 and provided >= 1 and mine["version"] > 0
    return ok, "uid 65534: %d of 100,000 answered; the provider answered %d and stayed connected (provided %d); another navigation through it: %.1f ms" % (
        r["answered"], answered[0], provided, took * 1000)


MALLORY = r"""
import json, os
from navd_client import Client, NavdError
c = Client(os.environ["SOCK"])
c.navigate(route="account")
c.send("navigate", route="orders")
flow = None
for _ in range(50):
    flows = [n["id"] for n in c.tree().nodes() if n.get("kind") == "flow"]
    if flows:
        flow = flows[-1]
        break
try:
    c.flow_complete(flow, result={"user": "mallory"})
    out = "completed"
except NavdError as e:
    out = e.kind
print(json.dumps({"flow": flow, "outcome": out}))
"""


def recovery_facts():
    """uid 65534 may not write main's facts, nor through the recovery flow's recover.facts."""
    c = navd_client.Client(SOCK)
    c.call("reset")
    r = as_nobody(MALLORY)
    facts = c.facts()
    c.call("reset")
    c.close()
    return r["outcome"] == "accessDenied" and "user" not in facts, "completing %s as uid 65534: %s; main's facts: %s" % (
        r["flow"], r["outcome"], json.dumps(facts))


def memory_bounds():
    """64 KiB facts until refused; 900 KB setup models until refused; the tree stays answerable."""
    c = navd_client.Client(SOCK)
    c.call("session.open", name="a5")
    facts = 0
    try:
        while facts < 9600:
            c.set_facts({"f%d" % facts: "v" * 65000}, session="a5")
            facts += 1
    except navd_client.LimitExceeded as e:
        facts_limit = e.data.get("limit")
    screens = 0
    c.navigate("attacks.Form", by="root", session="a5")
    try:
        while screens < 60:
            c.navigate("attacks.Big", by="root" if screens == 0 else "push", session="a5", with_={"ref": "r" * 900000})
            screens += 1
    except navd_client.LimitExceeded as e:
        params_limit = e.data.get("limit")
    t = time.monotonic()
    tree = c.call("tree", session="a5")
    took = time.monotonic() - t
    c.call("session.close", name="a5")
    c.close()
    ok = facts < 20 and facts_limit == "--max-facts-bytes" and screens < 3 and params_limit == "--max-params-bytes"
    return ok, "%d facts of 64 KiB, then %s; %d screens of 900 KB, then %s; tree of %d bytes in %.1f ms" % (
        facts, facts_limit, screens, params_limit, len(json.dumps(tree)), took * 1000)


HOG = r"""
import json, os, resource, socket, sys, time
from navd_client import Client, NavdError
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
path = os.environ["SOCK"]
conns = []
refused = None
while len(conns) < 20000:
    try:
        c = Client(path, timeout=10)
        c.ping()
        conns.append(c)
    except NavdError as e:
        # Refused: navd said why at once, and closed. Read what it says to a new connection.
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.connect(path)
        said = json.loads(raw.makefile("rb").readline() or b"{}")
        refused = ((said.get("error") or {}).get("data") or {}).get("limit") or e.message
        break
sessions, srefused = 0, None
while sessions < 20000:
    try:
        conns[0].call("session.open", name="hog%d" % sessions)
        sessions += 1
    except NavdError as e:
        srefused = e.data.get("limit")
        break
# Pending navigations: 16 commands (children), the rest waiting on a provider that never answers.
pending = 0
for i in range(1000):
    c = conns[1 + i // 200]
    c.send("navigate", session="hog%d" % i, to="attacks.Form", by="root")
for i in range(1000):
    c = conns[1 + i // 200]
    c.send("navigate", session="hog%d" % i, to="attacks.Slow" if i < 16 else "attacks.Paid")
    pending += 1
time.sleep(1)
print(json.dumps({"connections": len(conns), "refused": refused, "sessions": sessions, "sessionsRefused": srefused, "pending": pending}), flush=True)
sys.stdin.read()
"""


def per_uid_fairness():
    """uid 65534 takes every share it may (of a navd with 2,000 connections and 20,000 sessions:
    all but the 10 % reserve): connections, sessions, pending navigations, command children.
    navd's own uid still connects, opens a session, navigates and pings quickly."""
    p, sock = start_navd("--ephemeral", "--graph", GRAPH, "--max-connections", "2000", "--max-sessions", "20000")
    os.chmod(os.path.dirname(sock), 0o755)
    os.chmod(sock, 0o666)
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # a provider that never answers
    holder.connect(sock)
    holder.sendall(b'{"jsonrpc":"2.0","id":1,"method":"provide","params":{"preconditions":["attacks.asked"]}}\n')
    drain = threading.Thread(target=lambda: [None for _ in iter(lambda: holder.recv(65536), b"")], daemon=True)
    drain.start()
    hog = as_nobody(HOG, wait=False, sock=sock)
    held = json.loads(hog.stdout.readline())
    stats = navd_client.Client(sock).call("stats")
    users = stats["users"].get("65534", {})
    lat = []
    for i in range(200):
        t = time.monotonic()
        c = navd_client.Client(sock)
        c.call("session.open", name="fair%d" % i)
        c.navigate("shop.Product", with_={"id": "p1"}, session="fair%d" % i)
        c.ping()
        lat.append(time.monotonic() - t)
        c.call("session.close", name="fair%d" % i)
        c.close()
    lat.sort()
    p99 = lat[int(len(lat) * 0.99)]
    hog.stdin.close()
    hog.wait(60)
    holder.close()
    p.terminate()
    p.wait(10)
    # All but the reserve (200 connections, 2,000 sessions) less what navd's uid holds (the
    # provider, the stats client, session "main").
    ok = (held["refused"] == "--max-connections" and users.get("connections", 0) >= 1795 and held["sessionsRefused"] == "--max-sessions"
          and users.get("sessions", 0) >= 17995 and p99 < 0.010)
    return ok, "uid 65534 holds %d connections (then %s), %d sessions (then %s), pending %d, children %d; navd's uid: connect+open+navigate+ping p50 %.2f ms, p99 %.2f ms" % (
        users.get("connections", 0), held["refused"], users.get("sessions", 0), held["sessionsRefused"], users.get("pending", 0), users.get("children", 0),
        lat[len(lat) // 2] * 1000, p99 * 1000)


def socket_empty():
    """--socket "" and abstract names are refused, before anything starts."""
    a = subprocess.run([NAVD, "--ephemeral", "--socket", ""], capture_output=True, timeout=20)
    b = subprocess.run([NAVD, "--ephemeral", "--socket", "@navd"], capture_output=True, timeout=20)
    ok = a.returncode == 64 and b"is empty" in a.stderr and b.returncode == 64 and b"abstract" in b.stderr
    return ok, "--socket \"\": exit %d; --socket @navd: exit %d" % (a.returncode, b.returncode)


def pending_work():
    """20,000 dismisses of a guarded screen: each supersedes the last, and a reset ends the last at
    once. 300 slow commands from one uid: at most its share (all but the reserve) run at once."""
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    holder.connect(SOCK)
    holder.sendall(b'{"jsonrpc":"2.0","id":1,"method":"provide","params":{"preconditions":["attacks.asked"]}}\n')
    threading.Thread(target=lambda: [None for _ in iter(lambda: holder.recv(65536), b"")], daemon=True).start()
    c = navd_client.Client(SOCK, timeout=60)
    c.call("session.open", name="a8")
    c.navigate("attacks.Form", by="root", session="a8")
    draft = c.navigate("attacks.Draft", session="a8")["node"]
    # Raw, with a reader: 20,000 requests pipelined while their answers are read.
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.connect(SOCK)
    replies = []
    done = threading.Event()

    def read():
        f = raw.makefile("rb")
        for line in f:
            replies.append(json.loads(line))
            if len(replies) == 19999:
                done.set()
        done.set()
    threading.Thread(target=read, daemon=True).start()
    raw.sendall(b"".join(json.dumps(request(i, "dismiss", {"node": draft, "session": "a8"})).encode() + b"\n" for i in range(20000)))
    done.wait(120)
    superseded = sum(1 for r in replies if (r.get("error") or {}).get("data", {}).get("kind") == "cancelled")
    pending = c.call("stats")["pending"]
    t = time.monotonic()
    other = navd_client.Client(SOCK)
    other.call("reset", session="a8", force=True)  # the guards would ask the provider that never answers
    while len(replies) < 20000 and time.monotonic() - t < 5:
        time.sleep(0.001)
    ended = time.monotonic() - t
    last = (replies[-1].get("error") or {}).get("data", {}).get("kind", "committed") if len(replies) == 20000 else "unanswered"
    raw.close()
    # Slow commands: 300 navigations from one uid in 300 sessions, over two connections.
    conns = [navd_client.Client(SOCK, timeout=60) for _ in range(2)]
    for i in range(300):
        conns[i % 2].call("session.open", name="slow%d" % i)
        conns[i % 2].navigate("attacks.Form", by="root", session="slow%d" % i)
    for i in range(300):
        conns[i % 2].send("navigate", session="slow%d" % i, to="attacks.Slow")
    most = 0
    for _ in range(30):
        most = max(most, other.call("stats")["children"])
        time.sleep(0.1)
    for cc in conns:
        cc.close()
    for i in range(300):
        other.call("session.close", name="slow%d" % i)
    other.call("session.close", name="a8")
    other.close()
    c.close()
    holder.close()
    # One uid alone may run every command slot but the reserve: 231 of the default 256.
    ok = superseded == 19999 and pending <= 2 and last == "cancelled" and ended < 1 and 16 < most <= 231
    return ok, "%d of 20,000 dismisses superseded, %d pending; after reset the last was %s in %.1f ms; 300 slow commands of one uid: at most %d ran at once (its share: 231 of 256)" % (
        superseded, pending, last, ended * 1000, most)


def stuck_server():
    """The Python client and navctl against a stopped navd: their timeouts hold, for sending too."""
    p, sock = start_navd("--ephemeral")
    os.kill(p.pid, signal.SIGSTOP)
    t = time.monotonic()
    try:
        navd_client.Client(sock, timeout=2).call("navigate", to="shop.Product", with_={"id": "x" * 900000})
        py = "answered"
    except navd_client.NavdError as e:
        py = e.kind
    py_took = time.monotonic() - t
    t = time.monotonic()
    ctl = subprocess.run([NAVCTL, "--socket", sock, "--timeout", "1", "tree"], capture_output=True, timeout=30)
    ctl_took = time.monotonic() - t
    os.kill(p.pid, signal.SIGCONT)
    p.terminate()
    p.wait(10)
    ok = py == "timeout" and py_took < 5 and ctl.returncode == 1 and ctl_took < 5
    return ok, "Python client, 900 KB to a stopped navd with timeout=2: %s in %.1f s; navctl --timeout 1: exit %d in %.1f s" % (
        py, py_took, ctl.returncode, ctl_took)


def restored_state():
    """A state file whose session breaks its schema, holds facts that are not an object, or more
    sessions than allowed is refused, naming the session and the rule; --repair sets it aside."""
    state = tempfile.mkdtemp(prefix="navd-state-", dir=WORK) + "/s.sqlite"
    p, sock = start_navd("--state", state)
    c = navd_client.Client(sock)
    for name in ["a", "b", "c"]:
        c.call("session.open", name=name)
        c.navigate("shop.Product", with_={"id": "p1"}, session=name)
    c.close()
    p.terminate()
    p.wait(10)
    subprocess.run(["sqlite3", state, "UPDATE sessions SET tree = replace(tree, '\"id\":\"p1\"', '\"id\":7') WHERE name = 'b'"], check=True)
    refused = subprocess.run([NAVD, "--socket", sock, "--state", state], capture_output=True, timeout=20)
    subprocess.run(["sqlite3", state, "UPDATE sessions SET tree = replace(tree, '\"id\":7', '\"id\":\"p1\"'), facts = '[1]' WHERE name = 'b'"], check=True)
    facts = subprocess.run([NAVD, "--socket", sock, "--state", state], capture_output=True, timeout=20)
    subprocess.run(["sqlite3", state, "UPDATE sessions SET facts = '{}' WHERE name = 'b'"], check=True)
    many = subprocess.run([NAVD, "--socket", sock, "--state", state, "--max-sessions", "2"], capture_output=True, timeout=20)
    p, sock = start_navd("--state", state, "--max-sessions", "2", "--repair", sock=sock)
    kept = navd_client.Client(sock).call("session.list")["sessions"]
    p.terminate()
    p.wait(10)
    ok = (refused.returncode == 1 and b'session "b"' in refused.stderr and b"must be string" in refused.stderr
          and facts.returncode == 1 and b"not an object" in facts.stderr and many.returncode == 1 and b"--max-sessions (2)" in many.stderr)
    return ok, "bad params: exit %d; facts [1]: exit %d; 4 sessions with --max-sessions 2: exit %d; --repair serves %s" % (
        refused.returncode, facts.returncode, many.returncode, kept)


def log_records(data):
    """(offset, payload length) of each record of a log file (framing 2: a 32-byte file header,
    then a 16-byte header per record), as far as the lengths lead."""
    first = data[:8] == b"navdlog1"  # the first format (8-byte headers), to replay an attack on an older navd
    out, off, h = [], 8 if first else 32, 8 if first else 16
    while off + h <= len(data):
        n = int.from_bytes(data[off:off + 4], "little")
        if n == 0 or off + h + n > len(data):
            break
        out.append((off, n))
        off += h + n
    return out


def run_navd(*args, timeout=60):
    """navd started and left to exit by itself (a refusal): (exit status, stderr, seconds)."""
    t = time.monotonic()
    p = subprocess.run([NAVD, "--socket", WORK + "/refused.sock"] + list(args), capture_output=True, timeout=timeout)
    return p.returncode, p.stderr.decode(errors="replace"), time.monotonic() - t


def timed_start(*args, sock=None):
    t = time.monotonic()
    p, sock = start_navd(*args, sock=sock)
    return p, sock, time.monotonic() - t


def flipped_log_length():
    """20 acknowledged navigations, kill -9, bit 16 of the middle record's length flipped: navd
    refuses to start, naming the byte, and leaves the log as it was; --repair keeps it aside and
    serves what came before the damage."""
    state = tempfile.mkdtemp(prefix="navd-state-", dir=WORK) + "/s.sqlite"
    p, sock = start_navd("--state", state)
    c = navd_client.Client(sock)
    for i in range(20):
        c.navigate("shop.Product", with_={"id": "p%d" % i})
    c.close()
    p.kill()
    p.wait(10)
    data = bytearray(open(state + ".log", "rb").read())
    recs = log_records(data)
    middle = recs[len(recs) // 2][0]
    data[middle + 2] ^= 0x01
    open(state + ".log", "wb").write(data)
    status, err, _ = run_navd("--state", state)
    kept = open(state + ".log", "rb").read() == bytes(data)
    p, sock, took = timed_start("--state", state, "--repair")
    version = navd_client.Client(sock).call("tree")["version"]
    p.terminate()
    p.wait(10)
    aside = [f for f in os.listdir(os.path.dirname(state)) if ".corrupt-" in f]
    ok = status == 1 and ("damaged at byte %d" % middle) in err and kept and aside and version == len(recs) // 2 - 1
    return ok, "exit %d (%s…); log unchanged: %s; --repair: version %d served, %s kept, started in %.2f s" % (
        status, err.strip()[:90], kept, version, aside[0] if aside else "nothing", took)


RELOAD_V1 = "root: {stack: Home}\ncoordinators:\n  Home: {opens: [Product, Old]}\n  Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}, opens: [Old]}\n  Old: {}\n"
RELOAD_V2 = "root: {stack: Home}\ncoordinators:\n  Aaa: {}\n  Product: {setup: {type: object, required: [id], properties: {id: {type: string}}}}\n  Home: {opens: [Product, Aaa]}\n"


def reload_during_compaction():
    """3,000 sessions, a graph reload (forced, coordinators reordered, one removed) while the log is
    compacted, kill -9, restart on the reloaded graph: navd neither crashes nor loses a session."""
    d = tempfile.mkdtemp(prefix="navd-reload-", dir=WORK)
    os.mkdir(d + "/graph")
    open(d + "/graph/app.yaml", "w").write(RELOAD_V1)
    args = ["--graph", d + "/graph", "--state", d + "/s.sqlite", "--log-compact-bytes", "1048576", "--log-compact-ratio", "0",
]
    p, sock = start_navd(*args)
    c = navd_client.Client(sock)
    compacting, n = False, 0
    while n < 9000 and not compacting:
        for i in range(n, n + 300):
            c.send("session.open", name="s%d" % i)
            c.send("navigate", session="s%d" % i, to="app.Old" if i % 3 == 0 else "app.Product",
                   **({} if i % 3 == 0 else {"with": {"id": "x" * 300}}))
        c.call("ping")
        n += 300
        compacting = c.call("stats")["state"]["compacting"]
    open(d + "/graph/app.yaml", "w").write(RELOAD_V2)
    reloaded = c.call("graph.reload", force=True)
    alive = p.poll() is None
    p.kill()
    p.wait(10)
    p, sock, took = timed_start(*args)
    c = navd_client.Client(sock)
    sessions = len(c.call("session.list")["sessions"])
    old = sum("app.Old" in json.dumps(c.call("tree", session="s%d" % i)) for i in range(0, n, 97))
    p.terminate()
    p.wait(10)
    ok = compacting and reloaded["ok"] and alive and sessions == n + 1 and old == 0
    return ok, "%d sessions, compacting at the reload: %s, reload ok: %s, alive after: %s; restart in %.2f s serves %d sessions, %d showing the removed screen" % (
        n, compacting, reloaded["ok"], alive, took, sessions, old)


def forced_reload_then_kill():
    """A forced graph.reload that removes a screen, kill -9, restart on the reloaded graph: navd
    starts (without --repair) and serves the state the reload acknowledged."""
    d = tempfile.mkdtemp(prefix="navd-reload-", dir=WORK)
    os.mkdir(d + "/graph")
    open(d + "/graph/app.yaml", "w").write(RELOAD_V1)
    args = ["--graph", d + "/graph", "--state", d + "/s.sqlite"]
    p, sock = start_navd(*args)
    c = navd_client.Client(sock)
    c.navigate("app.Product", with_={"id": "1"})
    c.navigate("app.Old")
    p.terminate()
    p.wait(10)
    p, sock = start_navd(*args, sock=sock)
    c = navd_client.Client(sock)
    open(d + "/graph/app.yaml", "w").write(RELOAD_V2)
    c.call("graph.reload", force=True)
    before = c.call("tree")
    p.kill()
    p.wait(10)
    try:
        p, sock, took = timed_start(*args, sock=sock)
    except RuntimeError as e:
        return False, "navd does not start again: %s" % str(e)[:200]
    after = navd_client.Client(sock).call("tree")
    p.terminate()
    p.wait(10)
    return after == before, "restart in %.2f s; version %d, top %s (acknowledged: version %d)" % (
        took, after["version"], after["root"]["children"][-1]["coordinator"], before["version"])


REFUSED_KEYS = r"""
import json, os, socket, sys
from navd_client import Client
n = int(sys.argv[1])
c = Client(os.environ["SOCK"])
c.call("session.open", name="mallory-keys")
before = c.call("stats")["state"]["logBytes"]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["SOCK"])
f = s.makefile("rb")
refused = 0
for start in range(0, n, 500):
    batch = [{"jsonrpc": "2.0", "id": i, "method": "navigate", "params": {"session": "mallory-keys", "to": "shop.Reviews",
              "key": ("%06d" % i) + "k" * 244}} for i in range(start, min(n, start + 500))]
    s.sendall(json.dumps(batch).encode() + b"\n")
    refused += sum("error" in r for r in json.loads(f.readline()))
print(json.dumps({"refused": refused, "logBefore": before, "logAfter": c.call("stats")["state"]["logBytes"]}))
"""


def refused_keys():
    """uid 65534 sends 100,000 keyed navigations with 250-character keys that navd refuses, in
    its own session: the log does not grow, navd remembers none of them, its memory stays flat."""
    state_dir = tempfile.mkdtemp(prefix="navd-state-", dir=WORK)
    p, sock = start_navd("--state", state_dir + "/s.sqlite", sock=WORK + "/keys.sock")
    os.chmod(sock, 0o666)
    c = navd_client.Client(sock)
    before, rss0 = c.call("stats")["state"], rss_mb(p.pid)
    env_sock = SOCK
    globals()["SOCK"] = sock
    try:
        r = as_nobody(REFUSED_KEYS, 100000, timeout=300)
    finally:
        globals()["SOCK"] = env_sock
    after, rss1 = c.call("stats")["state"], rss_mb(p.pid)
    p.terminate()
    p.wait(10)
    ok = r["refused"] == 100000 and r["logAfter"] == r["logBefore"] and rss1 - rss0 < 20
    return ok, "%d refused; log %d -> %d bytes over them, compactions %d; RSS %.1f -> %.1f MB" % (
        r["refused"], r["logBefore"], r["logAfter"], after["compactions"], rss0, rss1)


PLANT = r"""
import json, os, sys
d = sys.argv[1]
open(d + "/state.db.log", "wb").write(b"navdlog2" + bytes(24))
open(d + "/state.db", "wb").write(b"")
print(json.dumps({"planted": sorted(os.listdir(d))}))
"""


def planted_state_files():
    """State files pre-created by uid 65534 in a shared sticky directory, and in a directory of
    navd's own: navd refuses them, saying why, and does not touch them."""
    shared = WORK + "/shared"
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    r = as_nobody(PLANT, shared)
    status, err, _ = run_navd("--state", shared + "/state.db")
    own = tempfile.mkdtemp(prefix="navd-own-", dir=WORK)
    for f in ["state.db.log"]:
        open(own + "/" + f, "wb").write(b"navdlog2")
        os.chown(own + "/" + f, 65534, 65534)
    status2, err2, _ = run_navd("--state", own + "/state.db")
    ok = status == 1 and "writable by other users" in err and status2 == 1 and "belongs to uid 65534" in err2
    return ok, "planted %s: exit %d (%s); in navd's own directory: exit %d (%s)" % (
        r["planted"], status, err.strip()[6:80], status2, err2.strip()[6:90])


ATTACKS = [
    ("1. placeholder-shaped values in a command's argv", placeholder_values),
    ("2. graph.reload, provide, others' facts without a role", reload_without_role),
    ("3. 600-byte YAML alias bomb (check and reload)", alias_bomb),
    ("4. 9,000-request batch; 1,000 context.get of 10,000 facts", big_batches),
    ("5. 2,000 pipelined requests while reading", pipelining_reader),
    ("6. --socket at a regular file or past the length limit", socket_paths),
    ("7. deep nesting: presents until refused, kill -9, restart", deep_nesting),
    ("8. a waiting navigation that replaces its source", committed_answers),
    ("9. 100,000 provider navigations from another uid", provider_flood),
    ("10. recover.facts written by another uid", recovery_facts),
    ("11. 64 KiB facts and 900 KB params without end", memory_bounds),
    ("12. one uid takes every share; another is served", per_uid_fairness),
    ("13. --socket \"\" and abstract names", socket_empty),
    ("14. 20,000 guarded dismisses; 300 slow commands", pending_work),
    ("15. clients against a stopped navd", stuck_server),
    ("16. a state file that breaks the rules", restored_state),
    ("17. a flipped bit in a log record's length, kill -9", flipped_log_length),
    ("18. graph.reload during a compaction, kill -9", reload_during_compaction),
    ("19. a forced graph.reload, kill -9, restart", forced_reload_then_kill),
    ("20. 100,000 refused keyed navigations from another uid", refused_keys),
    ("21. state files planted by another uid", planted_state_files),
]


def main():
    log = open(WORK + "/navd.log", "wb")  # read by nobody while it runs: a pipe would fill up and stall navd
    navd = subprocess.Popen([NAVD, "--graph", GRAPH, "--socket", SOCK, "--ephemeral"], stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 20
    while not os.path.exists(SOCK):
        if navd.poll() is not None or time.monotonic() > deadline:
            sys.exit("navd did not start: %s" % open(WORK + "/navd.log").read())
        time.sleep(0.05)
    os.chmod(SOCK, 0o666)
    pinger = Pinger()
    pinger.start()
    failures = 0
    only = os.environ.get("ATTACKS", "")  # ATTACKS=17,18 runs those alone
    for name, attack in ATTACKS:
        if only and name.split(".")[0] not in only.split(","):
            continue
        pinger.window()
        try:
            ok, detail = attack()
        except Exception as e:  # noqa: BLE001 - an exception is a failed attack check
            ok, detail = False, "raised %r at %s" % (e, " < ".join("%s:%d" % (f.name, f.lineno) for f in reversed(traceback.extract_tb(e.__traceback__))))
        worst = pinger.window()
        p50, p99, _ = pinger.last
        alive = navd.poll() is None and pinger.failed is None
        held = ok and alive and worst < 1.0
        failures += not held
        print("%-58s %-4s ping p50 %5.2f p99 %6.2f max %6.1f ms, RSS %4.0f MB  %s" % (
            name, "held" if held else "FAIL", p50 * 1000, p99 * 1000, worst * 1000, rss_mb(navd.pid) if alive else 0, detail), flush=True)
        if not alive:
            print("navd stopped or stopped answering: %s" % (pinger.failed or "exit %s" % navd.poll()))
            break
    pinger.stop.set()
    navd.terminate()
    navd.wait(10)
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
