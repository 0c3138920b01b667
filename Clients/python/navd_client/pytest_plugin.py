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
"""

import os
import shutil
import signal
import subprocess
import tempfile
import threading

import pytest

from . import Client


def pytest_addoption(parser):
    group = parser.getgroup("navd")
    group.addoption("--navd-binary", default=None, help="the navd executable (default: $NAVD_BIN, else navd on PATH)")
    parser.addini("navd_graph", "graph directory navd serves (relative to the rootdir); none: navd's example graph")


def pytest_configure(config):
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
    status = daemon.stop()
    if status not in (0, -signal.SIGTERM):
        pytest.fail("navd exited with status %s:\n%s" % (status, daemon.log))


@pytest.fixture
def navd_client(navd):
    """A client connected to the test's navd."""
    with navd.client() as c:
        yield c
