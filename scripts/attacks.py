#!/usr/bin/env python3
"""Replay the attacks of the hardening work against a running build of navd, as a hostile local
client would, while another client pings navd every 20 ms. Each attack passes when navd refuses
or survives it as PROTOCOL.md says, and the pinging client's slowest answer during it stays under
a second. Prints one line per attack and exits 1 if any failed.

    scripts/attacks.py NAVD        (make attacks: a release build)

Faults that need a tampered state file, a full disk, a squatted default socket, a policy change
with SIGHUP or a recovery flow are regression tests of `make test` (HardeningTests.swift); this
script covers what a client can do through the socket and what `navd check` reads.
"""
import json, os, resource, shutil, socket, subprocess, sys, tempfile, threading, time

NAVD = os.path.abspath(sys.argv[1])
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = tempfile.mkdtemp(prefix="navd-attacks-")
os.chmod(WORK, 0o755)  # the attacker of attack 2 is another uid
SOCK, GRAPH = WORK + "/navd.sock", WORK + "/graph"
shutil.copytree(REPO + "/Examples/shop", GRAPH)


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
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                r = self.c.call("ping")
                assert r.get("result") == "pong", r
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                self.failed = repr(e)
                return
            with self.lock:
                self.worst = max(self.worst, time.monotonic() - t)
            time.sleep(0.02)

    def window(self):
        with self.lock:
            w, self.worst = self.worst, 0.0
        return w


def kind(reply):
    return ((reply.get("error") or {}).get("data") or {}).get("kind")


# --- the attacks ------------------------------------------------------------------------------

def placeholder_values():
    c = Client()
    c.call("session.open", name="{with.x}")
    c.call("context.set", session="{with.x}", facts={"loggedIn": True, "cart.items": 2})
    c.call("navigate", session="{with.x}", to="cart.Cart", by="select")
    r = c.call("navigate", session="{with.x}", to="cart.Checkout", by="present", **{"with": {"x": "{with.x}{with.x}"}})
    c.close()
    return "result" in r or kind(r) is not None, "navigate answered: %s" % (kind(r) or "ok")


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


ATTACKS = [
    ("1. placeholder-shaped values in a command's argv", placeholder_values),
    ("2. graph.reload, provide, others' facts without a role", reload_without_role),
    ("3. 600-byte YAML alias bomb (check and reload)", alias_bomb),
    ("4. 9,000-request batch; 1,000 context.get of 10,000 facts", big_batches),
    ("5. 2,000 pipelined requests while reading", pipelining_reader),
    ("6. --socket at a regular file or past the length limit", socket_paths),
]


def main():
    navd = subprocess.Popen([NAVD, "--graph", GRAPH, "--socket", SOCK, "--ephemeral"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not os.path.exists(SOCK):
        if navd.poll() is not None or time.monotonic() > deadline:
            sys.exit("navd did not start: %s" % navd.stderr.read().decode())
        time.sleep(0.05)
    os.chmod(SOCK, 0o666)
    pinger = Pinger()
    pinger.start()
    failures = 0
    for name, attack in ATTACKS:
        pinger.window()
        try:
            ok, detail = attack()
        except Exception as e:  # noqa: BLE001 - an exception is a failed attack check
            ok, detail = False, "raised %r" % e
        worst = pinger.window()
        alive = navd.poll() is None and pinger.failed is None
        held = ok and alive and worst < 1.0
        failures += not held
        print("%-60s %-4s ping max %6.1f ms  %s" % (name, "held" if held else "FAIL", worst * 1000, detail), flush=True)
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
