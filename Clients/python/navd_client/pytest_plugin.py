"""pytest plugin: a navd per test, on a graph directory you name, with ``--ephemeral`` state.

    import pytest

    @pytest.mark.navd_graph("app/graph")          # or the ini option navd_graph; none: the example
    def test_checkout(navd_client):
        navd_client.set_facts(loggedIn=True)
        navd_client.navigate("shop.Product", with_={"id": "p1"})
        assert navd_client.tree().top["coordinator"] == "shop.Product"

Fixtures: ``navd`` (the running daemon: ``socket``, ``client()``, ``log``, ``stop()``) and
``navd_client`` (a :class:`navd_client.Client` connected to it). The navd binary is
``--navd-binary``, else ``$NAVD_BIN``, else ``navd`` on ``PATH``.

Navigation coverage: ``--navd-coverage`` asks each test's navd for its coverage report before
stopping it, merges them (``navd coverage``), prints the table at the end of the session and writes
LCOV to ``--navd-coverage-lcov`` (``navd-coverage.lcov``; JSON to ``--navd-coverage-json``);
``--navd-cov-fail-under=N`` fails the run
when fewer than N % of the graph's ``opens`` edges were taken.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading

import pytest

from . import Client, NavdError


def pytest_addoption(parser):
    group = parser.getgroup("navd")
    group.addoption("--navd-binary", default=None, help="the navd executable (default: $NAVD_BIN, else navd on PATH)")
    group.addoption("--navd-coverage", action="store_true", default=False,
                    help="report which coordinators, edges, preconditions, flows and links the tests exercised")
    group.addoption("--navd-coverage-lcov", default="navd-coverage.lcov", metavar="PATH",
                    help="where --navd-coverage writes LCOV (default: navd-coverage.lcov; empty: none)")
    group.addoption("--navd-coverage-json", default=None, metavar="PATH",
                    help="also write the merged report as JSON (coverage.report's form) to PATH")
    group.addoption("--navd-cov-fail-under", type=float, default=None, metavar="N",
                    help="fail the run when fewer than N %% of opens edges were taken (implies --navd-coverage)")
    parser.addini("navd_graph", "graph directory navd serves (relative to the rootdir); none: navd's example graph")


def pytest_configure(config):
    config._navd_coverage = {"reports": [], "summary": [], "failed": None}
    config.addinivalue_line("markers", "navd_graph(path): the graph directory the navd fixture serves")
    config.addinivalue_line("markers", "navd_args(*args): more arguments for navd serve")


class Navd:
    """A navd started for one test; stopped (SIGTERM) when the test ends."""

    def __init__(self, binary, graph=None, args=(), ready_timeout=20.0):
        self._dir = tempfile.mkdtemp(prefix="navd-pytest-")
        self.socket = os.path.join(self._dir, "navd.sock")
        argv = [binary, "serve", "--ephemeral", "--socket", self.socket]
        if graph:
            argv += ["--graph", str(graph)]
        argv += list(args)
        self._lines = []
        self._ready = threading.Event()
        self.listening = False
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._collect, daemon=True)
        self._reader.start()
        if not self._ready.wait(ready_timeout) or not self.listening:
            self.stop()
            raise RuntimeError("navd did not start (%s):\n%s" % (" ".join(argv), self.log))

    def _collect(self):
        for line in self.process.stderr:
            self._lines.append(line)
            if "navd listening" in line:
                self.listening = True
                self._ready.set()
        self._ready.set()  # navd ended: whoever waits finds out

    @property
    def log(self):
        """What navd wrote to stderr so far."""
        return "".join(self._lines)

    def client(self, **kw):
        """A new connection to this navd."""
        return Client(self.socket, **kw)

    def stop(self):
        """Stops navd (SIGTERM, SIGKILL after 5 s); returns its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(5)
        shutil.rmtree(self._dir, ignore_errors=True)
        return self.process.returncode


def _binary(config):
    b = config.getoption("--navd-binary") or os.environ.get("NAVD_BIN") or shutil.which("navd")
    if not b:
        raise pytest.UsageError("no navd binary: pass --navd-binary PATH, set NAVD_BIN, or put navd on PATH")
    return b


@pytest.fixture
def navd(request):
    """A navd serving the graph of the test's ``navd_graph`` marker (else the ini option, else
    navd's example graph) with ephemeral state, on a socket of its own."""
    marker = request.node.get_closest_marker("navd_graph")
    graph = marker.args[0] if marker else (request.config.getini("navd_graph") or None)
    if graph and not os.path.isabs(graph):
        graph = os.path.join(str(request.config.rootpath), graph)
    extra = request.node.get_closest_marker("navd_args")
    daemon = Navd(_binary(request.config), graph, extra.args if extra else ())
    yield daemon
    if _coverage_on(request.config) and daemon.process.poll() is None:
        try:
            with daemon.client() as c:
                request.config._navd_coverage["reports"].append((graph, c.call("coverage.report", format="json")))
        except NavdError as e:
            pytest.fail("navd gave no coverage report: %s" % e)
    status = daemon.stop()
    if status not in (0, -signal.SIGTERM):
        pytest.fail("navd exited with status %s:\n%s" % (status, daemon.log))


@pytest.fixture
def navd_client(navd):
    """A client connected to the test's navd."""
    with navd.client() as c:
        yield c


def _coverage_on(config):
    return config.getoption("--navd-coverage") or config.getoption("--navd-cov-fail-under") is not None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Merges the tests' coverage reports, graph by graph, through ``navd coverage``."""
    config = session.config
    state = getattr(config, "_navd_coverage", None)
    if not state or not _coverage_on(config) or not state["reports"]:
        return
    binary = _binary(config)
    by_graph = {}
    for graph, report in state["reports"]:
        by_graph.setdefault(graph, []).append(report)
    lcov = config.getoption("--navd-coverage-lcov")
    covered = total = 0
    tmp = tempfile.mkdtemp(prefix="navd-coverage-")
    try:
        for n, (graph, reports) in enumerate(sorted(by_graph.items(), key=lambda kv: kv[0] or "")):
            files = []
            for i, r in enumerate(reports):
                path = os.path.join(tmp, "%d-%d.json" % (n, i))
                with open(path, "w") as f:
                    json.dump(r, f)
                files.append(path)
            # Paths in the report as coverage.py shows them: relative to where pytest runs, when inside it.
            shown = graph
            if graph and os.path.abspath(graph).startswith(os.getcwd() + os.sep):
                shown = os.path.relpath(graph)
            argv = [binary, "coverage"] + (["--graph", shown] if shown else []) + files

            def run(*extra):
                done = subprocess.run(argv + list(extra), capture_output=True, text=True)
                if done.returncode != 0:
                    raise pytest.UsageError("navd coverage failed (%s):\n%s" % (" ".join(argv + list(extra)), done.stderr))
                return done.stdout

            state["summary"].append("graph %s\n%s" % (graph or "(navd's example)", run("--format", "text")))
            merged = run("--format", "json")
            totals = json.loads(merged)["totals"]["edges"]
            out = config.getoption("--navd-coverage-json")
            if out:
                path = out if len(by_graph) == 1 else "%s.%d" % (out, n)
                with open(path, "w") as f:
                    f.write(merged)
            covered += totals["covered"]
            total += totals["total"]
            if lcov:
                path = lcov if len(by_graph) == 1 else "%s.%d" % (lcov, n)
                run("--format", "lcov", "--output", path)
                state["summary"].append("wrote %s" % path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    percent = 100.0 if total == 0 else covered * 100.0 / total
    state["summary"].append("opens edges taken: %d/%d (%.1f %%)" % (covered, total, percent))
    under = config.getoption("--navd-cov-fail-under")
    if under is not None and percent < under:
        state["failed"] = "navd coverage: %.1f %% of opens edges taken, under --navd-cov-fail-under=%g" % (percent, under)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    state = getattr(terminalreporter.config, "_navd_coverage", None)
    if not state or not state["summary"]:
        return
    terminalreporter.section("navd coverage")
    for block in state["summary"]:
        terminalreporter.write_line(block.rstrip("\n"))
    if state["failed"]:
        terminalreporter.write_line(state["failed"], red=True, bold=True)
