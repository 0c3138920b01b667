"""What every attack of scripts/attacks.py shares: the navd under attack (its path is the first
argument), a work directory with the example graph and the screens the attacks need, a client,
the pinging thread, and the helpers that start navd or act as another uid."""
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


# The pinging client's loop, in a process of its own: a thread of this process would wait for the
# interpreter's lock while an attack's own threads parse what navd sends them, and count that wait
# as navd's. Prints each round trip in seconds, or why it stopped.
PING_LOOP = r"""
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
buf, n = b"", 0
try:
    s.connect(sys.argv[1])
    while True:
        n += 1
        t = time.monotonic()
        s.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % n)
        while True:
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    raise ConnectionError("navd closed the connection")
                buf += chunk
            line, buf = buf.split(b"\n", 1)
            m = json.loads(line)
            if m.get("id") == n:
                break
        took = time.monotonic() - t
        if m.get("result") != "pong":
            raise AssertionError(repr(m))
        print("%.6f" % took, flush=True)
        time.sleep(0.02)
except Exception as e:  # noqa: BLE001 - any failure is the finding
    print("failed %r" % e, flush=True)
"""


class Pinger(threading.Thread):
    """Pings every 20 ms on its own connection, from a process of its own, and keeps the slowest
    round trip of a window."""

    def __init__(self):
        super().__init__(daemon=True)
        self.proc = subprocess.Popen([sys.executable, "-c", PING_LOOP, SOCK], stdout=subprocess.PIPE, text=True)
        self.worst = 0.0
        self.failed = None
        self.samples = []
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def run(self):
        for line in self.proc.stdout:
            if self.stop.is_set():
                break
            if line.startswith("failed"):
                self.failed = line.strip()[len("failed "):]
                return
            took = float(line)
            with self.lock:
                self.worst = max(self.worst, took)
                self.samples.append(took)
        if not self.stop.is_set() and self.failed is None:
            self.failed = "the pinging process ended (status %s)" % self.proc.poll()
        self.proc.kill()

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


# The navds start_navd started, stopped after each attack (stop_started) when the attack left them
# running: an attack that raised skips its own cleanup, and a navd it left (stopped with SIGSTOP,
# say) must not weigh on the attacks after it.
STARTED = []


def stop_started():
    """Kills the navds the last attack started and left running (resumed first, if stopped)."""
    for p in STARTED:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
            p.wait()
    STARTED.clear()


def start_navd(*args, sock=None):
    """Another navd (release) on a socket of its own (or `sock`); answers (Popen, socket path)."""
    d = tempfile.mkdtemp(prefix="navd-attack-", dir=WORK)
    sock = sock or d + "/n.sock"
    log = open(d + "/navd.log", "wb")
    p = subprocess.Popen([NAVD, "--socket", sock, "--log-level", "warning"] + list(args), stdout=subprocess.DEVNULL, stderr=log)
    STARTED.append(p)
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
