#!/usr/bin/env python3
"""navd's cost curves (make bench-scale): request latency and RSS against sessions and connections,
the time a commit takes to reach the last of a session's subscribers, commit and `tree` time against
stack size, graph load and `navd check` against graph size, and the default durable mode's restart
time against state size, keyed navigations against the keys one uid keeps (and, with CURVES=reload, what a graph
reload holds of the loop against graph size and sessions); Redis measured the same way beside the sessions curve. Prints one Markdown
table per curve and writes a PNG plot of each (gnuplot) into OUT (default Benchmarks/scale).

    python3 scripts/bench-scale.py .build/release/navd [OUT]

SCALE_MAX (default 1000000) caps the largest session count (the sessions and restart curves) and
the keys of the keys curve.
Every figure comes from one client on the same machine; latency is the round trip of one request
waiting for its reply (no pipelining), p50 and p99 of 2,000.
"""
import json, os, random, resource, selectors, shutil, signal, socket, subprocess, sys, tempfile, time

NAVD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/release/navd")
OUT = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "Benchmarks/scale")
EXTRA = os.environ.get("NAVD_ARGS", "").split()
SCALE_MAX = int(os.environ.get("SCALE_MAX", "1000000"))
WORK = tempfile.mkdtemp(prefix="navd-scale-")
os.chmod(WORK, 0o700)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Raw:
    """One connection, one request at a time (or a batch as one line)."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.buf = b""
        self.n = 0

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise RuntimeError("navd closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, method, **params):
        self.n += 1
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}).encode() + b"\n")
        while True:
            m = self.line()
            if m.get("id") == self.n:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m["result"]

    def batch(self, calls):
        reqs = []
        for method, params in calls:
            self.n += 1
            reqs.append({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        self.s.sendall(json.dumps(reqs).encode() + b"\n")
        while True:
            m = self.line()
            if isinstance(m, dict) and m.get("id") is None and "error" in m:
                raise RuntimeError("batch refused: %s" % m["error"])
            if isinstance(m, list):
                bad = [r for r in m if "error" in r]
                if bad:
                    raise RuntimeError("batch: %s" % bad[0]["error"])
                return m

    def close(self):
        self.s.close()


def start(*args, sock=None, wait=True):
    d = tempfile.mkdtemp(dir=WORK)
    sock = sock or d + "/n.sock"
    log = open(d + "/navd.log", "wb")
    t = time.monotonic()
    p = subprocess.Popen([NAVD, "--socket", sock, "--log-level", "error"] + list(args), stdout=subprocess.DEVNULL, stderr=log)
    while True:
        try:
            Raw(sock).close()
            return p, sock, time.monotonic() - t
        except OSError:
            pass
        if p.poll() is not None:
            raise RuntimeError("navd did not start: %s" % open(d + "/navd.log").read())
        time.sleep(0.005)


def stop(p, sig=signal.SIGTERM):
    p.send_signal(sig)
    p.wait(60)


def rss_mb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def latency(c, sessions, n=2000):
    """p50/p99 (ms) of navigate (pushing a screen) and ping, alternating, on sessions picked at random."""
    lat = []
    for i in range(n):
        t = time.perf_counter()
        if i % 2:
            c.call("ping")
        else:
            c.call("navigate", session="s%d" % random.randrange(sessions), to="shop.Product", **{"with": {"id": "p%d" % i}})
        lat.append((time.perf_counter() - t) * 1000)
    return pct(lat, 0.5), pct(lat, 0.99)


def open_sessions(c, start_at, end, navigate=False):
    step = 500 if navigate else 1000  # a batch holds at most --max-batch (1,000) requests
    for b in range(start_at, end, step):
        calls = []
        for i in range(b, min(end, b + step)):
            calls.append(("session.open", {"name": "s%d" % i}))
            if navigate:
                calls.append(("navigate", {"session": "s%d" % i, "to": "shop.Product", "with": {"id": "p%d" % i}}))
        c.batch(calls)


rows = {}


def table(name, header, data):
    rows[name] = (header, data)
    print("\n### %s\n" % name)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in data:
        print("| " + " | ".join(str(x) for x in r) + " |")
    sys.stdout.flush()


def plot(name, title, xlabel, ylabel, series, logx=True, y2=None):
    """series: [(label, [(x, y)])]; y2: (label, ylabel, [(x, y)]) on the right axis."""
    os.makedirs(OUT, exist_ok=True)
    script = ["set terminal pngcairo size 720,420 font ',10'" if has_cairo() else "set terminal png size 720,420",
              "set output '%s/%s.png'" % (OUT, name), "set title '%s'" % title, "set xlabel '%s'" % xlabel,
              "set ylabel '%s'" % ylabel, "set grid", "set key top left"]
    if logx:
        script.append("set logscale x")
    plots = []
    files = []
    for i, (label, pts) in enumerate(series):
        f = "%s/%s-%d.dat" % (WORK, name, i)
        open(f, "w").write("".join("%s %s\n" % xy for xy in pts))
        plots.append("'%s' using 1:2 with linespoints title '%s'" % (f, label))
    if y2:
        script += ["set y2label '%s'" % y2[1], "set y2tics", "set ytics nomirror"]
        f = "%s/%s-y2.dat" % (WORK, name)
        open(f, "w").write("".join("%s %s\n" % xy for xy in y2[2]))
        plots.append("'%s' using 1:2 axes x1y2 with linespoints dashtype 2 title '%s'" % (f, y2[0]))
    script.append("plot " + ", ".join(plots))
    subprocess.run(["gnuplot"], input="\n".join(script).encode(), check=True)


_cairo = None


def has_cairo():
    global _cairo
    if _cairo is None:
        r = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True)
        _cairo = b"pngcairo" in r.stdout + r.stderr
    return _cairo


# --- sessions -------------------------------------------------------------------------------
def sessions_curve():
    # One uid may hold all but the reserve of --max-sessions: raised past 1,000,000 for the last point.
    p, sock, _ = start("--ephemeral", "--max-sessions", "1200000")
    c = Raw(sock)
    data, have = [], 0
    base = rss_mb(p.pid)
    for n in [1_000, 10_000, 100_000, 1_000_000]:
        if n > SCALE_MAX:
            break
        t = time.monotonic()
        open_sessions(c, have, n)
        took = time.monotonic() - t
        per_open = took / (n - have) * 1e6
        have = n
        p50, p99 = latency(c, n)
        rss = rss_mb(p.pid)
        data.append((n, "%.3f" % p50, "%.3f" % p99, "%.0f" % rss, "%.2f" % ((rss - base) * 1024 / n), "%.1f" % per_open))
    c.close()
    stop(p)
    return data


def redis_curve(counts):
    """Redis 7 as the anchor: one hash per session holding what navd keeps of an empty session
    (name, version, a one-screen tree as JSON), then HSET (replacing the tree) and PING at random."""
    d = tempfile.mkdtemp(dir=WORK)
    port = 6400 + random.randrange(500)
    p = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", d],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.02)
    f = s.makefile("rb")

    def cmd(*args):
        return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in (x if isinstance(x, bytes) else str(x).encode() for x in args))

    def read():
        line = f.readline()
        if line[:1] == b"$":
            n = int(line[1:])
            if n >= 0:
                f.read(n + 2)
        return line

    tree = json.dumps({"id": "n1", "coordinator": "app.Home", "kind": "stack", "children": [{"id": "n2", "coordinator": "app.Home", "kind": "screen"}]})
    data, have = [], 0
    read_mem = lambda: int([l for l in info() if l.startswith(b"used_memory:")][0].split(b":")[1])

    def info():
        s.sendall(cmd("INFO", "memory"))
        n = int(f.readline()[1:])
        body = f.read(n + 2)
        return body.split(b"\r\n")
    base = read_mem()
    for n in counts:
        for b in range(have, n, 1000):
            s.sendall(b"".join(cmd("HSET", "s%d" % i, "version", "1", "tree", tree) for i in range(b, min(n, b + 1000))))
            for _ in range(b, min(n, b + 1000)):
                read()
        have = n
        lat = []
        for i in range(2000):
            t = time.perf_counter()
            s.sendall(cmd("PING") if i % 2 else cmd("HSET", "s%d" % random.randrange(n), "tree", tree))
            read()
            lat.append((time.perf_counter() - t) * 1000)
        mem = read_mem()
        data.append((n, "%.3f" % pct(lat, 0.5), "%.3f" % pct(lat, 0.99), "%.2f" % ((mem - base) / 1024 / n)))
    s.close()
    p.terminate()
    p.wait(10)
    return data


# --- connections ----------------------------------------------------------------------------
def connections_curve():
    p, sock, _ = start("--ephemeral")
    c = Raw(sock)
    open_sessions(c, 0, 1000)
    idle, data = [], []
    base = rss_mb(p.pid)
    for n in [100, 1_000, 10_000]:
        while len(idle) < n:
            r = Raw(sock)
            r.call("ping")
            idle.append(r)
        p50, p99 = latency(c, 1000)
        rss = rss_mb(p.pid)
        data.append((n, "%.3f" % p50, "%.3f" % p99, "%.0f" % rss, "%.1f" % ((rss - base) * 1024 / n)))
    for r in idle:
        r.close()
    c.close()
    stop(p)
    return data


# --- subscribers ----------------------------------------------------------------------------
def subscribers_curve():
    p, sock, _ = start("--ephemeral")
    driver = Raw(sock)
    subs, data = [], []
    sel = selectors.DefaultSelector()
    for n in [10, 100, 1_000, 10_000]:
        while len(subs) < n:
            r = Raw(sock)
            r.call("subscribe", session="main")
            r.s.setblocking(False)
            sel.register(r.s, selectors.EVENT_READ, r)
            subs.append(r)
        times = []
        for k in range(7):
            got = set()
            t = time.perf_counter()
            driver.call("navigate", to="shop.Product", **{"with": {"id": "x%d" % k}})
            answered = time.perf_counter() - t
            while len(got) < n:
                for key, _ in sel.select(10):
                    r = key.data
                    try:
                        r.buf += r.s.recv(1 << 16)
                    except BlockingIOError:
                        continue
                    if r.buf.count(b"\n") >= 1:
                        got.add(id(r))
                        r.buf = r.buf[r.buf.rfind(b"\n") + 1:]
            times.append(((time.perf_counter() - t) * 1000, answered * 1000))
        last = pct([x[0] for x in times], 0.5)
        reply = pct([x[1] for x in times], 0.5)
        data.append((n, "%.2f" % reply, "%.2f" % last, "%.1f" % (last * 1000 / n)))
    for r in subs:
        r.close()
    driver.close()
    stop(p)
    return data


# --- stack size -----------------------------------------------------------------------------
def stack_curve():
    p, sock, _ = start("--ephemeral", "--max-tree-nodes", "20000")
    c = Raw(sock)
    have, data = 0, []
    c.call("navigate", to="shop.Product", **{"with": {"id": "p0"}})
    have = 1
    for n in [10, 100, 1_000, 10_000]:
        while have < n:
            k = min(1000, n - have)
            c.batch([("navigate", {"to": "shop.Product", "with": {"id": "p%d" % (have + i)}}) for i in range(k)])
            have += k
        lat, tree = [], []
        for i in range(1000):
            t = time.perf_counter()
            if i % 2 == 0:
                c.call("navigate", to="shop.Product", **{"with": {"id": "top"}})
            else:
                c.call("dismiss")
            lat.append((time.perf_counter() - t) * 1000)
        for i in range(50):
            t = time.perf_counter()
            c.call("tree")
            tree.append((time.perf_counter() - t) * 1000)
        data.append((n, "%.3f" % pct(lat, 0.5), "%.3f" % pct(lat, 0.99), "%.2f" % pct(tree, 0.5)))
    c.close()
    stop(p)
    return data


# --- graph size -----------------------------------------------------------------------------
def graph_curve():
    data = []
    for n in [1_000, 3_000, 10_000]:
        d = tempfile.mkdtemp(dir=WORK)
        lines = ["root: {stack: C0}", "coordinators:"]
        for i in range(n):
            nxt = ", ".join("C%d" % j for j in sorted({i + 1, i + 7, i * 3 + 1}) if j < n)
            lines.append("  C%d: {setup: {type: object, properties: {id: {type: string}}}, opens: [%s]}" % (i, nxt))
        open(d + "/app.yaml", "w").write("\n".join(lines) + "\n")
        size = os.path.getsize(d + "/app.yaml")
        t = time.monotonic()
        big = ["--max-graph-file", "100000000", "--max-graph-nodes", "100000000"]
        r = subprocess.run([NAVD, "check", d] + big, capture_output=True)
        check = time.monotonic() - t
        if r.returncode != 0:
            raise RuntimeError("navd check: %s" % r.stderr.decode()[-300:])
        p, sock, load = start("--ephemeral", "--graph", d, *big)
        rss = rss_mb(p.pid)
        stop(p)
        data.append((n, "%.0f" % (size / 1024), "%.0f" % (check * 1000), "%.0f" % (load * 1000), "%.0f" % rss))
    return data


# --- reload ---------------------------------------------------------------------------------
def reload_graph(n):
    lines = ["root: {stack: Home}", "coordinators:", "  Home: {opens: [S0, S%d]}" % (n - 1)]
    lines += ["  S%d: {setup: {type: object, properties: {id: {type: string}}}}" % i for i in range(n)]
    return "\n".join(lines) + "\n"


def reload_curve():
    """A graph reload's round trip while another client sends ping after ping, waiting for each:
    the longest ping is what the reload held of the loop (its load, then every session rebuilt for
    the new graph). RELOAD_SIZES (default 10000,50000) screens; 0 to 100,000 sessions of two
    screens; RELOAD_DURABLE=1 runs navd in its default durable mode."""
    import threading
    data = []
    durable = os.environ.get("RELOAD_DURABLE") == "1"
    for n in [int(x) for x in os.environ.get("RELOAD_SIZES", "10000,50000").split(",")]:
        for sessions in [0, 10_000, 100_000]:
            d = tempfile.mkdtemp(dir=WORK)
            open(d + "/app.yaml", "w").write(reload_graph(n))
            mode = ["--state", d + "/navd.state"] if durable else ["--ephemeral"]
            p, sock, _ = start("--graph", d, "--max-graph-nodes", "100000000", "--max-graph-file", "1000000000", *mode)
            c = Raw(sock)
            for b in range(0, sessions, 500):  # a batch holds at most --max-batch (1,000) requests
                calls = []
                for i in range(b, min(sessions, b + 500)):
                    calls.append(("session.open", {"name": "s%d" % i}))
                    calls.append(("navigate", {"session": "s%d" % i, "to": "app.S%d" % ((n - 1) * (i % 2)), "with": {"id": "x"}}))
                c.batch(calls)
            pinger, pings, done = Raw(sock), [], threading.Event()

            def ping():
                while not done.is_set():
                    t = time.perf_counter()
                    pinger.call("ping")
                    pings.append(time.perf_counter() - t)

            th = threading.Thread(target=ping)
            th.start()
            while len(pings) < 100:  # the pinger's round trips before the reload
                time.sleep(0.01)
            before = len(pings)
            t = time.perf_counter()
            r = c.call("graph.reload")
            took = time.perf_counter() - t
            done.set()
            th.join()
            stop(p)
            if not r.get("ok"):
                raise RuntimeError("reload refused: %s" % str(r)[:300])
            during = pings[before:] or [0]
            data.append((n, sessions, "%.0f" % (took * 1000), "%.1f" % (max(during) * 1000), len(during)))
    return data


# --- command checks ---------------------------------------------------------------------------
def checks_curve():
    """N navigations, each to a screen whose command check takes 1 s (2 s timeout), sent at once
    over a pool of 10 connections: how many pass and how long the last takes."""
    d = tempfile.mkdtemp(dir=WORK)
    open(d + "/app.yaml", "w").write(
        "root: {stack: Home}\ncoordinators:\n  Home: {opens: [Checked]}\n  Checked: {preconditions: [remote]}\n"
        "preconditions:\n  remote: {command: [sh, -c, \"cat >/dev/null; sleep 1\"], timeout: 2s}\n")
    data = []
    for n in [200, 300, 1_000]:
        p, sock, _ = start("--ephemeral", "--graph", d, *EXTRA)
        pool = [Raw(sock) for _ in range(10)]
        for i in range(n):
            pool[i % 10].call("session.open", name="u%d" % i)
        t = time.monotonic()
        for k, c in enumerate(pool):
            reqs = []
            for i in range(k, n, 10):
                c.n += 1
                reqs.append(json.dumps({"jsonrpc": "2.0", "id": c.n, "method": "navigate", "params": {"session": "u%d" % i, "to": "app.Checked"}}))
            c.s.sendall(("\n".join(reqs) + "\n").encode())
        passed = failed = 0
        kinds = {}
        for k, c in enumerate(pool):
            for _ in range(k, n, 10):
                m = c.line()
                while "id" not in m:
                    m = c.line()
                if "result" in m:
                    passed += 1
                else:
                    failed += 1
                    kind = m["error"]["data"]["kind"]
                    kinds[kind] = kinds.get(kind, 0) + 1
        took = time.monotonic() - t
        for c in pool:
            c.close()
        stop(p)
        data.append((n, passed, failed if not kinds else "%d (%s)" % (failed, ", ".join("%s %d" % kv for kv in kinds.items())), "%.2f" % took))
    return data


# --- restart --------------------------------------------------------------------------------
def keys_curve():
    """Keyed navigations (default durable mode) while one uid keeps 1,000 to 262,144 keys (the
    default --max-keys-per-uid) over 64 sessions: what remembering a key costs must not grow with
    the keys already kept."""
    d = tempfile.mkdtemp(dir=WORK)
    os.chmod(d, 0o700)
    p, sock, _ = start("--state", d + "/state.sqlite")
    c = Raw(sock)
    sessions = 64
    c.batch([("session.open", {"name": "k%d" % i}) for i in range(sessions)])
    tabs = [{"to": "cart.Cart", "by": "select"}, {"to": "shop.Home", "by": "select"}]
    have, data = 0, []
    for n in [1_000, 16_000, 64_000, 262_144]:
        if n > SCALE_MAX:
            break
        t0 = time.perf_counter()
        filled = have
        while have < n:
            # Each session takes its turn by 64 navigations (a batch holds at most 1,000 requests).
            calls = []
            for i in range(min(512, n - have)):
                k = have + i
                calls.append(("navigate", dict(tabs[(k // sessions) % 2], session="k%d" % (k % sessions), key="f%d" % k)))
            c.batch(calls)
            have += len(calls)
        fill = (time.perf_counter() - t0) * 1e6 / max(1, have - filled)
        lat = []
        for i in range(2000):
            t = time.perf_counter()
            c.call("navigate", session="k0", key="m%d-%d" % (n, i), **tabs[i % 2])
            lat.append((time.perf_counter() - t) * 1000)
        data.append((n, "%.3f" % pct(lat, 0.5), "%.3f" % pct(lat, 0.99), "%.1f" % fill, "%.0f" % rss_mb(p.pid)))
    c.close()
    stop(p)
    shutil.rmtree(d, ignore_errors=True)
    return data


def restart_curve():
    data = []
    for n in [10_000, 100_000, 1_000_000]:
        if n > SCALE_MAX:
            break
        d = tempfile.mkdtemp(dir=WORK)
        os.chmod(d, 0o700)
        state = d + "/state.sqlite"
        p, sock, _ = start("--state", state, "--max-sessions", "1200000")
        c = Raw(sock)
        open_sessions(c, 0, n, navigate=True)
        c.close()
        stop(p, signal.SIGKILL)
        files = sum(os.path.getsize(d + "/" + f) for f in os.listdir(d) if f.startswith("state"))
        p, sock, took = start("--state", state, "--max-sessions", "1200000", sock=sock)
        got = Raw(sock).call("stats")["sessions"]
        rss = rss_mb(p.pid)
        stop(p)
        if got != n + 1:
            raise RuntimeError("restored %d sessions of %d" % (got, n + 1))
        data.append((n, "%.0f" % (files / 1024 / 1024), "%.2f" % took, "%.0f" % rss))
        shutil.rmtree(d, ignore_errors=True)
    return data


def main():
    """CURVES (default all: sessions,connections,subscribers,stack,graph,checks,keys,restart) picks curves;
    reload (a graph reload beside a client that pings) runs only when named."""
    os.makedirs(OUT, exist_ok=True)
    curves = os.environ.get("CURVES", "sessions,connections,subscribers,stack,graph,checks,keys,restart").split(",")
    if "sessions" in curves:
        s = sessions_curve()
        table("Sessions (one uid, default flags, --ephemeral)", ["sessions", "p50 ms", "p99 ms", "RSS MB", "KB per session", "µs per session.open (batches of 1,000)"], s)
        r = redis_curve([row[0] for row in s])
        table("Redis beside it (one hash per session: version and a one-screen tree)", ["keys", "p50 ms", "p99 ms", "KB per key"], r)
        plot("sessions", "Latency and memory against sessions", "sessions", "p99 ms (navigate/ping; Redis HSET/PING)",
             [("navd p99", [(row[0], row[2]) for row in s]), ("Redis p99", [(row[0], row[2]) for row in r])],
             y2=("navd KB per session", "KB per session", [(row[0], row[4]) for row in s]))
    if "connections" in curves:
        c = connections_curve()
        table("Idle connections (another client measures)", ["connections", "p50 ms", "p99 ms", "RSS MB", "KB per connection"], c)
        plot("connections", "Latency and memory against idle connections", "connections", "p99 ms",
             [("p99", [(row[0], row[2]) for row in c]), ("p50", [(row[0], row[1]) for row in c])],
             y2=("RSS MB", "RSS MB", [(row[0], row[3]) for row in c]))
    if "subscribers" in curves:
        sb = subscribers_curve()
        table("Subscribers of one session (one commit)", ["subscribers", "reply to the committer ms", "last subscriber has it ms", "µs per subscriber"], sb)
        plot("subscribers", "A commit reaching every subscriber of one session", "subscribers", "ms",
             [("last subscriber has it", [(row[0], row[2]) for row in sb]), ("reply to the committer", [(row[0], row[1]) for row in sb])])
    if "stack" in curves:
        st = stack_curve()
        table("Stack size (screens in one stack)", ["screens", "push/pop p50 ms", "push/pop p99 ms", "tree reply p50 ms"], st)
        plot("stack", "Commit and tree time against stack size", "screens in the stack", "ms",
             [("push/pop p99", [(row[0], row[2]) for row in st]), ("tree p50", [(row[0], row[3]) for row in st])])
    if "graph" in curves:
        g = graph_curve()
        table("Graph size", ["coordinators", "YAML KB", "navd check ms", "start to first answer ms", "RSS MB"], g)
        plot("graph", "Graph load against coordinators", "coordinators", "ms",
             [("navd check", [(row[0], row[2]) for row in g]), ("start to first answer", [(row[0], row[3]) for row in g])])
    if "checks" in curves:
        ck = checks_curve()
        table("Navigations waiting on a one-second command check (2 s timeout), pool of 10 connections", ["navigations", "passed", "failed", "last answered s"], ck)
    if "keys" in curves:
        ks = keys_curve()
        table("Keyed navigations against the keys one uid keeps (default durable mode, 64 sessions)",
              ["keys kept", "keyed navigate p50 ms", "p99 ms", "µs per keyed navigation filling (batches of 512)", "RSS MB"], ks)
        plot("keys", "Keyed navigations against the keys kept", "keys kept by one uid", "ms",
             [("p99", [(row[0], row[2]) for row in ks]), ("p50", [(row[0], row[1]) for row in ks])])
    if "reload" in curves:
        rl = reload_curve()
        table("A graph reload beside a client that pings (%s)" % ("default durable mode" if os.environ.get("RELOAD_DURABLE") == "1" else "--ephemeral"),
              ["coordinators", "sessions", "graph.reload ms", "longest ping ms during it", "pings answered during it"], rl)
    if "restart" in curves:
        rs = restart_curve()
        table("Restart after kill -9 (default durable mode, sessions each with one screen pushed)", ["sessions", "state files MB", "restart to first answer s", "RSS MB"], rs)
        plot("restart", "Restart time against state size", "sessions", "seconds",
             [("restart to first answer", [(row[0], row[2]) for row in rs])])
    figures = OUT + "/figures.json"
    kept = json.load(open(figures)) if os.path.exists(figures) else {}
    kept.update(rows)
    json.dump(kept, open(figures, "w"), indent=1)
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
