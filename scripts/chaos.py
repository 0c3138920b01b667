#!/usr/bin/env python3
"""chaos.py — navd's cluster mode under injected faults, checked by scripts/history.py.

Usage: chaos.py [--navd PATH] [--seconds N] [--lease-ms MS] [--sessions N] [--seed N] [--keep]

Starts a private PostgreSQL (scripts/pg-temp.sh) and three navd nodes (A, B, C) on it; one
driver per session sends keyed navigations through whichever node answers (retrying with the
same key on `unavailable`, a lost connection or a timeout; `moved` is followed by the Python
client), and two subscribers per session record every `stackChanged`. Meanwhile, at random, it:

- kill:          kill -9 a node, restarted (a new incarnation) 0.3–2 leases later;
- pause:         SIGSTOP a node for 1.5–3 leases, then SIGCONT;
- twin:          starts a second process under a live node's name (the first must exit 1);
- pg-restart:    restarts PostgreSQL (pg_ctl restart -m fast);
- pg-terminate:  ends every navd backend (pg_terminate_backend);
- slow-commit:   holds a SHARE lock on navd_sessions for 0.3–1.5 leases (commits wait).

At most one node is impaired at a time, so two are always alive. At the end faults stop, every
node is resumed or restarted, in-flight operations are retried to their answer, subscribers catch
up, the final trees are read from every node and from PostgreSQL, and the history is checked.
Prints the verdict and figures; exit status 1 when the history is invalid.
"""
import argparse
import gc
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "Clients", "python"))
sys.path.insert(0, HERE)
import navd_client as nc  # noqa: E402
import history  # noqa: E402

RETRIED = {"unavailable", "moved", "overloaded", "busy", "limitExceeded"}


def now():
    return time.monotonic()


class History:
    def __init__(self):
        self.lock = threading.Lock()
        self.records = []

    def add(self, **r):
        r.setdefault("at", now())
        with self.lock:
            self.records.append(r)


class Heartbeat(threading.Thread):
    """The harness's own stalls: how much later than asked a 50-ms sleep of a thread of this script
    returns. A stall stops every client alike, so a long one would show as navd unavailable."""

    def __init__(self, stop):
        super().__init__(daemon=True)
        self.stop, self.longest = stop, 0.0

    def run(self):
        while not self.stop.is_set():
            t = now()
            time.sleep(0.05)
            self.longest = max(self.longest, now() - t - 0.05)


class Cluster:
    """The PostgreSQL server and the navd nodes, by name; each node's current process and socket."""

    def __init__(self, navd, work, lease_ms, log):
        self.navd = navd
        self.work = work
        self.lease_ms = lease_ms
        self.log = log
        self.lock = threading.Lock()
        self.pg = subprocess.run([os.path.join(HERE, "pg-temp.sh"), "start", os.path.join(work, "pg")],
                                 check=True, capture_output=True, text=True).stdout.strip()
        self.procs = {}  # name -> Popen
        self.sockets = {}  # name -> socket path
        self.gen = 0
        self.exits = []  # (name, status, expected)

    def start(self, name):
        with self.lock:
            self.gen += 1
            sock = os.path.join(self.work, "%s-%d.sock" % (name, self.gen))
            out = open(os.path.join(self.work, "%s-%d.log" % (name, self.gen)), "w")
        p = subprocess.Popen([self.navd, "--socket", sock, "--store", self.pg, "--node", name,
                              "--lease", "%dms" % self.lease_ms],
                             stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             # a node keeps its coverage under $XDG_STATE_HOME: in the run's folder
                             env=dict(os.environ, XDG_STATE_HOME=os.path.join(self.work, "state")))
        deadline = now() + 20
        while not os.path.exists(sock):
            if p.poll() is not None or now() > deadline:
                raise SystemExit("chaos: node %s did not start (see %s)" % (name, out.name))
            time.sleep(0.02)
        with self.lock:
            self.procs[name] = p
            self.sockets[name] = sock
        return p

    def live_sockets(self):
        with self.lock:
            return list(self.sockets.values())

    def psql(self, sql, timeout=30):
        return subprocess.run(["psql", "-X", "-A", "-t", "-q", "-d", self.pg, "-c", sql],
                              capture_output=True, text=True, timeout=timeout).stdout.strip()

    def owned_by(self, name):
        try:
            return int(self.psql("SELECT count(*) FROM navd_sessions WHERE node = '%s'" % name, timeout=5) or 0)
        except Exception:
            return -1

    def stop_all(self):
        for p in self.procs.values():
            try:
                p.send_signal(signal.SIGCONT)
                p.terminate()
                p.wait(timeout=10)
            except Exception:
                p.kill()
        subprocess.run([os.path.join(HERE, "pg-temp.sh"), "stop", os.path.join(self.work, "pg")], capture_output=True)


class Driver(threading.Thread):
    """Keyed navigations of one session, one at a time, each retried with its key until answered."""

    def __init__(self, cluster, hist, session, rng, stop, timeout):
        super().__init__(daemon=True)
        self.cluster, self.hist, self.session, self.rng, self.stop, self.timeout = cluster, hist, session, rng, stop, timeout
        self.client = None
        self.target = None
        self.avoid = {}  # socket -> until when it is tried last
        self.n = 0

    def params(self):
        self.n += 1
        roll = self.rng.random()
        if roll < 0.4:
            return {"to": "cart.Cart", "by": "select"}
        if roll < 0.8:
            return {"to": "shop.Home", "by": "select"}
        return {"to": "shop.Product", "by": "replace", "with": {"id": "p%d" % self.n}}

    def call(self, params):
        if self.client is None:
            # As a client of a cluster would: a node that just failed is tried again last.
            socks = self.cluster.live_sockets()
            fresh = [x for x in socks if self.avoid.get(x, 0) < now()]
            self.target = self.rng.choice(fresh or socks)
            self.client = nc.Client(self.target, timeout=self.timeout)
        return self.client.call("navigate", params, timeout=self.timeout)

    def run(self):
        while not self.stop.is_set():
            p = dict(self.params(), session=self.session, key="%s-%d" % (self.session, self.n))
            invoke = now()
            answers = []
            outcome = None
            quiet_since = None
            while outcome is None:
                t0 = now()
                try:
                    r = self.call(p)
                    answers.append([r["version"], history.digest(r.get("visible"))])
                    outcome = dict(outcome="ok", v=r["version"], visible=r.get("visible"), via=self.client.socket_path)
                    break
                except nc.NavdError as e:
                    kind = e.kind or type(e).__name__
                    if isinstance(e, (nc.ConnectError, nc.ConnectionClosed, nc.Timeout, nc.ProtocolError)) or kind in RETRIED:
                        # The node that failed: the one a `moved` was followed to, if it was.
                        failed = self.client.socket_path if self.client is not None else self.target
                        self.hist.add(t="attempt", s=self.session, kind=kind, invoke=t0, via=failed)
                        if kind not in RETRIED and failed:
                            self.avoid[failed] = now() + 4 * self.timeout
                        self.client and self.client.close()
                        self.client = None
                        delay = (e.data or {}).get("retryAfterMs", 50) / 1000.0 if kind in RETRIED else 0.02
                        time.sleep(min(delay, 0.2))
                    else:
                        outcome = dict(outcome="fail", kind=kind, message=str(e))
                except OSError as e:
                    self.hist.add(t="attempt", s=self.session, kind="os:%s" % e.errno, invoke=t0, via=self.target)
                    if self.target:
                        self.avoid[self.target] = now() + 4 * self.timeout
                    self.client = None
                    time.sleep(0.02)
                if outcome is None and self.stop.is_set():
                    # Past the end an op in flight is retried to its answer, for at most 60 s.
                    quiet_since = quiet_since or now()
                    if now() - quiet_since > 60:
                        outcome = dict(outcome="info")
            self.hist.add(t="op", s=self.session, k=p["key"], invoke=invoke, answers=answers, **outcome)


class Subscriber(threading.Thread):
    """Subscribes to one session on a node and records every stackChanged; when its connection is
    lost (the node was killed) it subscribes again elsewhere (a new subscription)."""

    count = 0
    lock = threading.Lock()

    def __init__(self, cluster, hist, session, rng, stop, timeout):
        super().__init__(daemon=True)
        self.cluster, self.hist, self.session, self.rng, self.stop, self.timeout = cluster, hist, session, rng, stop, timeout
        self.done = threading.Event()
        self.id = None
        self.version = None
        self.client = None

    def subscribe(self):
        with Subscriber.lock:
            Subscriber.count += 1
            sid = "sub-%d" % Subscriber.count
        c = nc.Client(self.rng.choice(self.cluster.live_sockets()), timeout=self.timeout)
        snap = c.call("subscribe", session=self.session, timeout=self.timeout)
        self.client, self.id, self.version = c, sid, snap["version"]
        self.hist.add(t="sub", id=sid, s=self.session, v=snap["version"], root=snap["root"], via=c.socket_path)

    def run(self):
        while not self.done.is_set():
            try:
                if self.client is None:
                    self.subscribe()
                n = self.client.next_notification(timeout=0.25)
                if n.get("method") == "stackChanged" and n["params"].get("session") == self.session:
                    self.version = n["params"]["version"]
                    self.hist.add(t="note", id=self.id, s=self.session, v=self.version, changes=n["params"]["changes"])
            except nc.Timeout:
                continue
            except (nc.NavdError, OSError):
                if self.client is not None:
                    self.client.close()
                self.client = None
                time.sleep(0.05)
        if self.id is not None and self.client is not None:
            self.hist.add(t="final", id=self.id, s=self.session, v=self.version)


class Faults(threading.Thread):
    KINDS = ["kill", "pause", "twin", "pg-restart", "pg-terminate", "slow-commit"]

    def __init__(self, cluster, hist, rng, stop, lease_s, kinds, gap):
        super().__init__(daemon=True)
        self.cluster, self.hist, self.rng, self.stop, self.lease, self.kinds, self.gap = cluster, hist, rng, stop, lease_s, kinds, gap
        self.failed = []

    def sleep(self, s):
        self.stop.wait(s)

    def takeover(self, name, started, until):
        """Seconds from `started` until no session is `name`'s (polled), or None by `until`."""
        while now() < until:
            n = self.cluster.owned_by(name)
            if n == 0:
                return now() - started
            time.sleep(0.05)
        return None

    def run(self):
        names = ["A", "B", "C"]
        while not self.stop.is_set():
            self.sleep(self.rng.uniform(*self.gap))
            if self.stop.is_set() or not self.kinds:
                continue
            kind = self.rng.choice(self.kinds)
            name = self.rng.choice(names)
            at = now()
            try:
                getattr(self, kind.replace("-", "_"))(name, at)
            except Exception as e:  # a fault that could not be injected is reported, not fatal
                self.failed.append("%s: %s" % (kind, e))

    def kill(self, name, at):
        p = self.cluster.procs[name]
        had = self.cluster.owned_by(name)
        p.kill()
        p.wait()
        down = self.rng.uniform(0.3, 2.0) * self.lease
        t = self.takeover(name, at, at + down) if had > 0 else None
        self.sleep(max(0.0, at + down - now()))
        self.cluster.start(name)
        self.hist.add(t="fault", kind="kill", node=name, at=at, until=now(), takeover=t)

    def pause(self, name, at):
        p = self.cluster.procs[name]
        had = self.cluster.owned_by(name)
        p.send_signal(signal.SIGSTOP)
        length = self.rng.uniform(1.5, 3.0) * self.lease
        t = self.takeover(name, at, at + length) if had > 0 else None
        self.sleep(max(0.0, at + length - now()))
        p.send_signal(signal.SIGCONT)
        self.hist.add(t="fault", kind="pause", node=name, at=at, until=now(), takeover=t)
        time.sleep(self.lease)
        if p.poll() is not None:
            self.cluster.exits.append((name, p.returncode, "running after a pause"))
            self.cluster.start(name)

    def twin(self, name, at):
        old = self.cluster.procs[name]
        self.cluster.start(name)
        try:
            status = old.wait(timeout=10 * self.lease + 5)
        except subprocess.TimeoutExpired:
            status = "still running"
            old.kill()
        self.cluster.exits.append((name, status, 1))
        self.hist.add(t="fault", kind="twin", node=name, at=at, until=now())

    def pg_restart(self, name, at):
        pgdir = os.path.join(self.cluster.work, "pg")
        subprocess.run([os.path.join(HERE, "pg-temp.sh"), "stop", pgdir], capture_output=True, timeout=60)
        self.sleep(self.rng.uniform(0.1, 1.0))
        subprocess.run([os.path.join(HERE, "pg-temp.sh"), "start", pgdir], capture_output=True, timeout=60, check=True)
        self.hist.add(t="fault", kind="pg-restart", at=at, until=now())

    def pg_terminate(self, name, at):
        self.cluster.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                          "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND usename = current_user")
        self.hist.add(t="fault", kind="pg-terminate", at=at, until=now())

    def slow_commit(self, name, at):
        hold = self.rng.uniform(0.3, 1.5) * self.lease
        self.cluster.psql("BEGIN; LOCK TABLE navd_sessions IN SHARE MODE; SELECT pg_sleep(%.3f); COMMIT;" % hold, timeout=60)
        self.hist.add(t="fault", kind="slow-commit", at=at, until=now())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--navd", default=os.path.join(ROOT, ".build", "release", "navd"))
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--lease-ms", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=6)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--faults", default=",".join(Faults.KINDS), help="comma-separated kinds (default: all; none: no fault)")
    ap.add_argument("--gap", default="1.5,4", help="seconds between faults: MIN,MAX")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, history)")
    a = ap.parse_args()
    # The history grows to millions of records (dicts holding lists), none in a reference cycle.
    # Python's full collections walk all of them while holding the interpreter's lock, stopping
    # every client and subscriber thread at once: 2.9 s for the 1.6 million records of a 240-s
    # run, a pause the checker took for sessions unavailable beyond two leases. Reference
    # counting frees everything this script drops; the cycle collector is not needed.
    gc.disable()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    lease = a.lease_ms / 1000.0
    kinds = [k for k in a.faults.split(",") if k and k != "none"]
    for k in kinds:
        if k not in Faults.KINDS:
            ap.error("unknown fault %r (known: %s)" % (k, ", ".join(Faults.KINDS)))
    work = tempfile.mkdtemp(prefix="navd-chaos.")
    os.chmod(work, 0o755)
    print("chaos: %s for %.0f s, lease %d ms, %d sessions, faults %s, seed %d, work %s"
          % (a.navd, a.seconds, a.lease_ms, a.sessions, ",".join(kinds), seed, work), flush=True)
    cluster = Cluster(a.navd, work, a.lease_ms, sys.stdout)
    hist = History()
    stop = threading.Event()
    ok = False
    interrupted = []

    # make test stops this run with SIGTERM when a step beside it fails: end as on any failure,
    # so that the nodes and PostgreSQL (pg_ctl starts it in a session of its own, out of reach
    # of the process group's signal) are stopped and the work directory removed.
    def on_signal(signum, _frame):
        interrupted.append(signum)
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        for n in ["A", "B", "C"]:
            cluster.start(n)
        names = ["chaos-%d" % i for i in range(a.sessions)]
        setup = nc.Client(cluster.sockets["A"], timeout=10)
        for s in names:
            setup.call("session.open", name=s)
        setup.close()
        # A client gives a node a quarter of a lease: a paused node (or one a `moved` names
        # while its lease runs out) costs it little once another node serves the session.
        timeout = max(0.2, lease / 4)
        drivers = [Driver(cluster, hist, s, random.Random(rng.random()), stop, timeout) for s in names]
        subs = [Subscriber(cluster, hist, s, random.Random(rng.random()), stop, 5.0) for s in names for _ in range(2)]
        gap = tuple(float(x) for x in a.gap.split(","))
        faults = Faults(cluster, hist, random.Random(rng.random()), stop, lease, kinds, gap)
        heartbeat = Heartbeat(stop)
        for t in subs + drivers + [faults, heartbeat]:
            t.start()
        started = now()
        while now() - started < a.seconds:
            time.sleep(min(10.0, a.seconds - (now() - started)))
            done = sum(r["t"] == "op" for r in hist.records)
            print("chaos: %3.0f s, %d operations, %d faults" % (now() - started, done, sum(r["t"] == "fault" for r in hist.records)), flush=True)
        stop.set()
        faults.join(timeout=60)
        # Heal: every node running, then in-flight operations answered.
        for n in ["A", "B", "C"]:
            p = cluster.procs[n]
            p.send_signal(signal.SIGCONT)
            if p.poll() is not None:
                cluster.start(n)
        for d in drivers:
            d.join(timeout=90)
        # Final trees: from every node (moved followed) and from PostgreSQL; subscribers catch up.
        final = {}
        for s in names:
            t = None
            for sock in cluster.live_sockets():
                for _ in range(100):
                    try:
                        t = nc.Client(sock, timeout=5).call("tree", session=s)
                        break
                    except (nc.NavdError, OSError):
                        time.sleep(0.1)
                if t is not None:
                    hist.add(t="tree", s=s, v=t["version"], root=t["root"], visible=t.get("visible"), source=sock)
                    final[s] = t["version"]
            row = cluster.psql("SELECT version, tree FROM navd_sessions WHERE name = '%s'" % s)
            if row:
                v, tree = row.split("|", 1)
                hist.add(t="tree", s=s, v=int(v), root=json.loads(tree), visible=None, source="PostgreSQL")
        deadline = now() + 15
        while now() < deadline and any(sub.version != final.get(sub.session) for sub in subs):
            time.sleep(0.05)
        for sub in subs:
            sub.done.set()
        for sub in subs:
            sub.join(timeout=10)
        # "visible" is only known from nodes: PostgreSQL's row is compared by its tree.
        records = hist.records
        for r in records:
            if r["t"] == "tree" and r["source"] == "PostgreSQL":
                r["visible"] = next((x["visible"] for x in records if x["t"] == "tree" and x["s"] == r["s"] and x["source"] != "PostgreSQL"), None)
        with open(os.path.join(work, "history.jsonl"), "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        violations, figures = history.check(records, lease)
        for name, status, expected in cluster.exits:
            if status != expected and expected != "running after a pause":
                violations.append("node %s's old process ended with %s after a second process took its name (expected %s)" % (name, status, expected))
            elif expected == "running after a pause":
                violations.append("node %s stopped (status %s) after a pause instead of carrying on" % (name, status))
        for f in faults.failed:
            print("chaos: a fault could not be injected: %s" % f)
        history.report(violations, figures)
        print("  the harness's own longest stall: %.0f ms" % (heartbeat.longest * 1000))
        ok = not violations
        print("  seed %d%s" % (seed, "; history in %s" % os.path.join(work, "history.jsonl") if a.keep or not ok else ""))
    finally:
        stop.set()
        cluster.stop_all()
        if (ok or interrupted) and not a.keep:
            subprocess.run(["rm", "-rf", work])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
