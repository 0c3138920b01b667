"""Attacks 1-15 of scripts/attacks.py: the hardening pass and the robustness issue."""
import select
from attacks_common import *  # noqa: F401,F403 - the shared work directory, client and helpers


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


def drain_until_closed(sock):
    """Reads and drops what navd sends `sock` until it is closed (here or by navd)."""
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass  # the attack closed the socket while this thread read it


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
    drain = threading.Thread(target=drain_until_closed, args=(holder,), daemon=True)
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
    threading.Thread(target=drain_until_closed, args=(holder,), daemon=True).start()
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


def pinged_while(c, attacker):
    """Pings through client `c` every 20 ms while `attacker` (a pipelining process whose last line
    is {"kinds": …}) runs: its answers' kinds, the seconds it took, the slowest ping."""
    worst, t0 = 0.0, time.monotonic()
    while attacker.poll() is None and time.monotonic() - t0 < 120:
        t = time.monotonic()
        c.call("ping")
        worst = max(worst, time.monotonic() - t)
        time.sleep(0.02)
    stdout, stderr = attacker.communicate(timeout=120)
    out = stdout.decode().strip().splitlines()
    if not out:
        raise RuntimeError("the attacker failed: %s" % stderr.decode()[-400:])
    return json.loads(out[-1])["kinds"], time.monotonic() - t0, worst


def pinged_attack(name, graph_yaml, script, n):
    """A navd of its own on the one-file graph `graph_yaml` (in a directory uid 65534 may enter),
    pinged every 20 ms while uid 65534 runs `script` with `n`: see ``pinged_while``."""
    d = tempfile.mkdtemp(prefix="navd-%s-" % name, dir=WORK)
    open(d + "/app.yaml", "w").write(graph_yaml)
    p, sock = start_navd("--ephemeral", "--graph", d, sock=WORK + "/%s.sock" % name)
    os.chmod(sock, 0o666)
    c = navd_client.Client(sock, timeout=30)
    return pinged_while(c, as_nobody(script, n, wait=False, sock=sock))


# The attackers of 22 and 23: connect, send every request in one write, tally the answers' kinds.
PIPELINED_HEAD = r"""
import json, os, socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["SOCK"])
"""
PIPELINED_TAIL = r"""
f = s.makefile("rb")
kinds = {}
for _ in range(n):
    k = ((json.loads(f.readline()).get("error") or {}).get("data") or {}).get("kind", "none")
    kinds[k] = kinds.get(k, 0) + 1
print(json.dumps({"kinds": kinds}))
"""

COSTLY_NAMES = PIPELINED_HEAD + r"""
# Names of the graph's length, edited in three places: each is compared with thousands of names.
s.sendall(b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "navigate",
                               "params": {"to": "Cxoxrxdinator%05d" % (i % 10000)}}).encode() + b"\n" for i in range(n)))
""" + PIPELINED_TAIL


def costly_names():
    """uid 65534 pipelines 2,000 navigations naming unknown coordinators of a graph of 10,000, each
    shaped to be compared with every name of its length: they are handled a turn at a time, so
    that another client's ping on that navd waits about one turn, not for all of them."""
    lines = ["root: {stack: Coordinator00000}", "coordinators:"] + ["  Coordinator%05d: {}" % i for i in range(10000)]
    kinds, took, worst = pinged_attack("names", "\n".join(lines) + "\n", COSTLY_NAMES, 2000)
    ok = kinds == {"unknownTarget": 2000} and worst < 0.25
    return ok, "2,000 answered in %.1f s (%s); the slowest ping on that navd meanwhile %.0f ms" % (took, kinds, worst * 1000)


COSTLY_PATTERNS = PIPELINED_HEAD + r"""
# Half against a pattern a backtracking matcher takes exponential time on, half against one that
# keeps ~500 states alive at each character (checks stopped at their step bound).
reqs = []
for i in range(n):
    field, text = ("k", "a" * 4000 + "!") if i % 2 == 0 else ("w", "a" * 60000)
    reqs.append(json.dumps({"jsonrpc": "2.0", "id": i, "method": "navigate",
                            "params": {"to": "Code", "with": {field: text}}}).encode() + b"\n")
s.sendall(b"".join(reqs))
""" + PIPELINED_TAIL


def costly_patterns():
    """uid 65534 pipelines 200 navigations whose setup field meets a hostile `pattern` of the graph
    (`^(a+)+$` against 4,000 `a` and a `!`; `.{0,495}x` against 60,000 characters): each is refused
    with invalidSetup after a bounded check (linear in the string, at most 1,000,000 steps), and
    navd looks at its clock after each large message, so that another client's ping on that navd
    waits about one turn, not for all of them."""
    graph = ("root: {stack: Home}\ncoordinators:\n  Home: {opens: [Code]}\n"
             "  Code: {setup: {type: object, properties: {k: {type: string, pattern: \"^(a+)+$\"},"
             " w: {type: string, pattern: \".{0,495}x\"}}}}\n")
    kinds, took, worst = pinged_attack("patterns", graph, COSTLY_PATTERNS, 200)
    ok = kinds == {"invalidSetup": 200} and worst < 0.25
    return ok, "200 answered in %.1f s (%s); the slowest ping on that navd meanwhile %.0f ms" % (took, kinds, worst * 1000)


COSTLY_MEMBERS = r"""
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["SOCK"])
f = s.makefile("rb")
kinds = {}
def call(i, method, params):
    s.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}, separators=(",", ":")).encode() + b"\n")
    reply = json.loads(f.readline())
    k = ((reply.get("error") or {}).get("data") or {}).get("kind", "none")
    kinds[k] = kinds.get(k, 0) + 1
    return reply.get("result") or {}
n = int(sys.argv[1])
big = {"k%05d" % i: i for i in range(n)}
node = call(1, "navigate", {"to": "Item", "with": big}).get("node")
call(2, "update", {"node": node, "with": {k: -v for k, v in big.items()}})
call(3, "navigate", {"to": "Item", "existing": "top", "merge": True, "with": big})
call(4, "navigate", {"to": "Item", "existing": "top", "with": big})
print(json.dumps({"kinds": kinds}))
"""


def costly_members():
    """uid 65534 gives a setup model of 50,000 members (~800 KB, within --max-message) and works it:
    a push, an `update` that merges as many, an `existing: top` with `merge`, one that finds the
    params equal. Each object is made, merged and compared at a cost that grows with its members,
    not with their square (a 40,000-member object once held the loop for two seconds), so that
    another client's ping on that navd waits about one request."""
    graph = "root: {stack: Home}\ncoordinators:\n  Home: {opens: [Item]}\n  Item: {opens: [Item]}\n"
    kinds, took, worst = pinged_attack("members", graph, COSTLY_MEMBERS, 50000)
    ok = kinds == {"none": 4} and worst < 0.25
    return ok, "4 answered in %.1f s (%s); the slowest ping on that navd meanwhile %.0f ms" % (took, kinds, worst * 1000)


LONG_AND_WIDE = PIPELINED_HEAD + r"""
# Names and keys too long, and setup models too wide, to be compared one by one with what the
# graph declares: each kind n times, in one write.
long = "p5000" + "y" * 800000
props = ["p%d" % i for i in range(10000)]
wide = dict(("m%d" % i, i) for i in range(50000))
wide["p1"] = 5
reqs = []
for i in range(n):
    for params in ({"session": long}, {"to": "Closed", "with": {long: 1}}, {"to": "Open", "with": wide},
                   {"to": "Required", "with": dict((p, "v") for p in props[:-1])}):
        method = "tree" if "session" in params else "navigate"
        reqs.append(json.dumps({"jsonrpc": "2.0", "id": len(reqs), "method": method, "params": params}).encode() + b"\n")
s.sendall(b"".join(reqs))
n = len(reqs)
""" + PIPELINED_TAIL


def long_names_and_wide_setups():
    """uid 65534 pipelines, 3 times each: `tree` of a session named with 800 KB, a setup key of
    800 KB against a schema of 10,000 properties that forbids others, 50,000 unknown members and
    one wrong against such a schema that allows them, 9,999 of 10,000 required fields. Each was a
    walk of every name (sessions, properties) or of the properties for each member: 30 s, 90 s and
    3 s a request. Now each costs about what reading it costs, and another client's ping waits
    about one of them."""
    props = ", ".join("p%d: {type: string}" % i for i in range(10000))
    required = ", ".join("p%d" % i for i in range(10000))
    graph = ("root: {stack: Home}\ncoordinators:\n  Home: {opens: [Open, Closed, Required]}\n"
             "  Open: {setup: {type: object, properties: {%s}}}\n"
             "  Closed: {setup: {type: object, additionalProperties: false, properties: {%s}}}\n"
             "  Required: {setup: {type: object, required: [%s], properties: {%s}}}\n" % (props, props, required, props))
    kinds, took, worst = pinged_attack("wide", graph, LONG_AND_WIDE, 3)
    ok = kinds == {"unknownTarget": 3, "invalidSetup": 9} and worst < 0.25
    return ok, "12 answered in %.1f s (%s); the slowest ping on that navd meanwhile %.0f ms" % (took, kinds, worst * 1000)


# The attacker of 26: sessions of its own, each filled with 15 facts of 60 KB (~1 MiB), until refused.
FILL_MEMORY = r"""
import json, os, socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["SOCK"])
f = s.makefile("rwb")
def call(i, method, params):
    f.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode() + b"\n")
    f.flush()
    return json.loads(f.readline())
kinds = {}
value = "v" * 60000
for i in range(n):
    r = call(2 * i, "session.open", {"name": "fill-%d" % i})
    if "error" not in r:
        r = call(2 * i + 1, "context.set", {"session": "fill-%d" % i, "facts": {"f%d" % j: value for j in range(15)}})
    e = r.get("error")
    k = "none" if e is None else "%s %s" % (e["data"]["kind"], e["data"].get("limit", ""))
    kinds[k] = kinds.get(k, 0) + 1
    if e is not None:
        break
print(json.dumps({"kinds": kinds}))
"""


def data_ceiling():
    """uid 65534 fills sessions of its own, each to its bounds (~1 MiB of facts), against a navd
    started with --max-data-bytes 256 MiB: refused once sessions hold the ceiling's last 10 %
    (limitExceeded --max-data-bytes), which is kept for uids holding less: navd's own uid still
    navigates, and pings meanwhile; once it closes the attacker's sessions, the attacker's uid is
    served again."""
    p, sock = start_navd("--ephemeral", "--max-data-bytes", str(256 << 20), sock=WORK + "/memory.sock")
    os.chmod(sock, 0o666)
    c = navd_client.Client(sock, timeout=30)
    kinds, took, worst = pinged_while(c, as_nobody(FILL_MEMORY, 2000, wait=False, sock=sock))
    rss = rss_mb(p.pid)
    refused = kinds.get("limitExceeded --max-data-bytes", 0) == 1
    filled = kinds.get("none", 0)
    stats = c.call("stats")
    held = stats["users"].get("65534", {}).get("bytes", 0)
    ours = c.call("navigate", to="shop.Product", **{"with": {"id": "1"}})["version"] == 1  # navd's uid holds nothing
    for name in c.call("session.list")["sessions"]:
        if name.startswith("fill-"):
            c.call("session.close", name=name)
    again = as_nobody(FILL_MEMORY, 1, sock=sock)  # one more session of the attacker's, once the heap is read again
    served_again = again["kinds"] == {"none": 1}
    ok = refused and ours and served_again and 100 < filled < 2000 and rss < 512 and worst < 0.5
    return ok, "%d sessions (%d MiB of facts), then %s in %.1f s; RSS %.0f MB; navd's uid navigated then: %s; the attacker served again once its sessions were closed: %s; slowest ping %.0f ms" % (
        filled, held >> 20, ", ".join(k for k in kinds if k != "none"), took, rss, ours, served_again, worst * 1000)



# The attacker of 27: connections each sending a message of 1 MiB less 64 bytes without its end,
# then, once told (a line on stdin), which of them navd cut.
UNFINISHED = r"""
import json, os, resource, select, socket, sys
n = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
part = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * ((1 << 20) - 120)
held = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.environ["SOCK"])
    try:
        s.sendall(part)
    except OSError:
        pass  # cut while sending
    held.append(s)
print(json.dumps({"sent": n}), flush=True)
sys.stdin.readline()
kinds = {}
for s in held:
    s.setblocking(False)
    try:
        data = s.recv(4096)
        k = "limitExceeded --max-total-input" if b"--max-total-input" in data else ("closed" if not data else "other")
    except BlockingIOError:
        k = "kept"
    except OSError:
        k = "closed"
    kinds[k] = kinds.get(k, 0) + 1
print(json.dumps({"kinds": kinds}))
"""


def unfinished_messages():
    """uid 65534 opens 2,000 connections and sends on each a message of 1 MiB without its end (2 GB
    in all), against a navd with the default limits: what all clients hold of unfinished messages is
    bounded by --max-total-input (256 MiB), past which the connections holding the most are cut
    (told why); navd's memory stays near that, another client's 900 KB request is answered, and
    pings meanwhile stay fast. Before the limit, 6,000 such connections took 6 GB of navd's memory."""
    p, sock = start_navd("--ephemeral", sock=WORK + "/input.sock")
    os.chmod(sock, 0o666)
    c = navd_client.Client(sock, timeout=30)
    attacker = as_nobody(UNFINISHED, 2000, wait=False, sock=sock)
    worst, t0 = 0.0, time.monotonic()
    line = b""
    while not line and attacker.poll() is None and time.monotonic() - t0 < 120:
        ready, _, _ = select.select([attacker.stdout], [], [], 0.02)
        if ready:
            line = attacker.stdout.readline()
        t = time.monotonic()
        c.call("ping")
        worst = max(worst, time.monotonic() - t)
    took = time.monotonic() - t0
    stats = c.call("stats")
    rss = rss_mb(p.pid)
    try:
        c.call("ping", x="b" * 900000)
        whole = False
    except navd_client.NavdError as e:  # ping has no param x: the whole message was read and answered
        whole = e.code == -32602
    stdout, stderr = attacker.communicate(b"\n", timeout=120)
    out = stdout.decode().strip().splitlines()
    if not out or "kinds" not in out[-1]:
        raise RuntimeError("the attacker failed: %s" % stderr.decode()[-400:])
    kinds = json.loads(out[-1])["kinds"]
    cut = stats["inputHoldersDropped"]
    held = stats["memory"]["input"]
    ok = (whole and cut >= 1500 and held <= stats["memory"]["maxInput"] and rss < 768 and worst < 0.5
          and kinds.get("limitExceeded --max-total-input", 0) + kinds.get("closed", 0) >= 1500)
    return ok, "2,000 connections of 1 MiB each sent in %.1f s: %d cut (%s), %d MiB held (of %d); RSS %.0f MB; a 900 KB request answered: %s; slowest ping %.0f ms" % (
        took, cut, ", ".join("%s %d" % kv for kv in sorted(kinds.items())), held >> 20, stats["memory"]["maxInput"] >> 20, rss, whole, worst * 1000)


# The attacker of 28: subscriptions from 20 connections to the same sessions, in batches, until
# refused; then holds them until told (a line on stdin).
SUBSCRIBE_ALL = r"""
import json, os, socket, sys
n_conn, n_sess = int(sys.argv[1]), int(sys.argv[2])
held, refused, conns = 0, None, []
for k in range(n_conn):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.environ["SOCK"])
    f = s.makefile("rb")
    conns.append(s)
    for i in range(0, n_sess, 1000):
        s.sendall(json.dumps([{"jsonrpc": "2.0", "id": j, "method": "subscribe", "params": {"session": "s%d" % j}}
                              for j in range(i, min(n_sess, i + 1000))]).encode() + b"\n")
        for r in json.loads(f.readline()):
            if "error" in r:
                refused = refused or r["error"]["data"].get("limit")
            else:
                held += 1
        if refused:
            break
    if refused:
        break
print(json.dumps({"held": held, "refused": refused}), flush=True)
sys.stdin.readline()
"""


def subscription_flood():
    """uid 65534 subscribes 20 connections to the same 10,000 sessions (200,000 subscriptions)
    against --max-subscriptions 100,000: refused at its share (all but the 10 % reserve), while
    navd's own uid still subscribes; navd's memory stays near 155 bytes a subscription."""
    p, sock = start_navd("--ephemeral", "--max-subscriptions", "100000", sock=WORK + "/subs.sock")
    os.chmod(sock, 0o666)
    c = navd_client.Client(sock, timeout=30)
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.connect(sock)
    f = raw.makefile("rb")
    for i in range(0, 10000, 1000):
        raw.sendall(json.dumps([{"jsonrpc": "2.0", "id": j, "method": "session.open", "params": {"name": "s%d" % j}}
                                for j in range(i, i + 1000)]).encode() + b"\n")
        f.readline()
    before = rss_mb(p.pid)
    t0 = time.monotonic()
    attacker = as_nobody(SUBSCRIBE_ALL, 20, 10000, wait=False, sock=sock)
    result = json.loads(attacker.stdout.readline())
    took = time.monotonic() - t0
    rss = rss_mb(p.pid)
    ours = c.call("subscribe", session="s1")["version"] >= 0
    stats = c.call("stats")
    attacker.communicate(b"\n", timeout=60)
    raw.close()
    held = stats["users"].get("65534", {}).get("subscriptions", 0)
    ok = result["refused"] == "--max-subscriptions" and 89990 <= held <= 90000 and ours and rss - before < 64
    return ok, "uid 65534: %d subscriptions in %.1f s, then %s; navd's uid subscribed then: %s; RSS %.0f -> %.0f MB" % (
        held, took, result["refused"], ours, before, rss)


# The attacker of 29: hello with 5,000 wrong tokens, pipelined; counts the answers by kind.
GUESS_TOKENS = r"""
import json, os, socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["SOCK"])
s.sendall(b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "hello", "params": {"token": "guess-%d" % i}}).encode() + b"\n" for i in range(n)))
f = s.makefile("rb")
kinds = {}
for _ in range(n):
    e = json.loads(f.readline()).get("error") or {}
    k = "%s %s" % (e.get("data", {}).get("kind"), e.get("data", {}).get("limit", ""))
    kinds[k] = kinds.get(k, 0) + 1
print(json.dumps({"kinds": kinds}))
"""


def token_guessing():
    """uid 65534 gives hello 5,000 wrong tokens at once against a navd with a policy: 20 are looked
    at, the rest refused unlooked (limitExceeded unknownTokens), while navd's own uid's right token
    is taken at once."""
    d = tempfile.mkdtemp(prefix="navd-tokens-", dir=WORK)
    policy = d + "/policy.yaml"
    open(policy, "w").write('tokens: {"f3a9c1d2e4b5a6978877665544332211": [auditor]}\n')
    os.chmod(policy, 0o600)
    p, sock = start_navd("--ephemeral", "--policy", policy, sock=WORK + "/tokens.sock")
    os.chmod(sock, 0o666)
    out = as_nobody(GUESS_TOKENS, 5000, sock=sock)
    kinds = out["kinds"]
    roles = navd_client.Client(sock).call("hello", token="f3a9c1d2e4b5a6978877665544332211")["roles"]
    looked = kinds.get("accessDenied ", 0)
    ok = looked <= 40 and looked + kinds.get("limitExceeded unknownTokens", 0) == 5000 and "auditor" in roles
    return ok, "5,000 guesses from uid 65534: %d looked at, %d refused unlooked; navd's uid's token then: roles %s" % (
        looked, kinds.get("limitExceeded unknownTokens", 0), roles)


def small_files_of_huge_graphs():
    """A few words that describe a huge graph: 10,000 screens each opening a set of all 10,000
    (10^8 edges in 300 KB), 10,000 guards over them, a chain of 20,000 recovery flows, 16,000
    links. navd check answers each in seconds at most; the first, a module of the running graph,
    is refused by graph.reload without holding the loop."""
    def write(name, files):
        d = WORK + "/" + name
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for f, lines in files.items():
            open("%s/%s.yaml" % (d, f), "w").write("\n".join(lines) + "\n")
        return d
    n = 10000
    sets = ["abilities:", "  all: [%s]" % ", ".join("C%d" % i for i in range(n)), "coordinators:"] + ["  C%d: {opens: [all]}" % i for i in range(n)]
    guards = (["coordinators:"] + ["  C%d: {}" % i for i in range(n)] + ["preconditions:"]
              + ["  p%d: {check: {fact: f%d, exists: true}}" % (i, i) for i in range(n)] + ["guards:"] + ["  - p%d" % i for i in range(n)])
    chain = {}
    for k in range(20):
        lines = ["module: m%d" % k] + (["root: {stack: m0.X0}"] if k == 0 else []) + ["coordinators:"]
        pre = ["preconditions:"]
        for i in range(k * 1000, (k + 1) * 1000):
            nxt = "m%d.p%d" % ((i + 1) // 1000 % 20, (i + 1) % 20000)
            lines += ["  X%d: {preconditions: [p%d]}" % (i, i), "  F%d: {flow: {start: S%d}}" % (i, i), "  S%d: {preconditions: [%s]}" % (i, nxt)]
            pre.append("  p%d: {check: {fact: f, exists: true}, recover: {flow: F%d}}" % (i, i))
        chain["m%d" % k] = lines + pre
    links = ["root: {stack: Home}", "coordinators:", "  Home: {opens: [P]}", "  P: {setup: {type: object, properties: {id: {type: string}}}}",
             "links:"] + ['  "/p%d/:id": [Home, {to: P, with: {id: ":id"}}]' % i for i in range(16000)]
    said = []
    ok = True
    for name, files, errors in [("sets", {"app": ["root: {stack: C0}"] + sets}, True), ("guards", {"app": ["root: {stack: C0}"] + guards}, True),
                                ("chain", chain, True), ("links", {"app": links}, False)]:
        t = time.monotonic()
        check = subprocess.run([NAVD, "check", write(name, files)], capture_output=True, timeout=120)
        took = time.monotonic() - t
        ok = ok and took < 10 and (check.returncode == 1) == errors
        said.append("%s: exit %d in %.2f s" % (name, check.returncode, took))
    # The first as a module of the running graph: refused, at once.
    open(GRAPH + "/huge.yaml", "w").write("module: huge\n" + "\n".join(sets) + "\n")
    c = Client()
    t = time.monotonic()
    r = c.call("graph.reload")
    took = time.monotonic() - t
    os.remove(GRAPH + "/huge.yaml")
    c.close()
    refused = r.get("result", {}).get("ok") is False and "--max-graph-edges" in json.dumps(r)
    said.append("graph.reload refused in %.2f s: %s" % (took, refused))
    return ok and refused and took < 2, "; ".join(said)
