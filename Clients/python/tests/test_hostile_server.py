"""The client against a hostile or stuck server: it raises only its own errors (subclasses of
NavdError), honours its timeout for connecting, sending and receiving, and bounds what it keeps."""

import os
import shutil
import socket
import tempfile
import threading
import time

import pytest

from navd_client import Client, ConnectError, NavdError, ProtocolError, Timeout


class FakeServer:
    """A Unix socket whose server answers every request line with `answer(line)` (bytes), or runs
    `behave(conn)` on each connection it accepts; `accept=False` never accepts."""

    def __init__(self, answer=None, behave=None, accept=True, backlog=16):
        self.dir = tempfile.mkdtemp(prefix="navd-fake-")
        self.path = os.path.join(self.dir, "fake.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(backlog)
        self.answer, self.behave = answer, behave
        self.conns = []
        if accept:
            threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn):
        try:
            if self.behave:
                self.behave(conn)
                return
            f = conn.makefile("rb")
            for line in f:
                conn.sendall(self.answer(line))
        except OSError:
            pass

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def fake():
    servers = []

    def make(**kw):
        s = FakeServer(**kw)
        servers.append(s)
        return s
    yield make
    for s in servers:
        s.close()


@pytest.mark.parametrize("reply", [
    b"not json\n",
    b"\xff\xfe\xfd\n",
    b"[" * 100000 + b"]" * 100000 + b"\n",
    b"[1,2]\n",
    b'{"jsonrpc":"2.0","id":1,"error":"boom"}\n',
    b'"just a string"\n',
])
def test_garbage_is_a_protocol_error(fake, reply):
    s = fake(answer=lambda line: reply)
    c = Client(s.path, timeout=5)
    with pytest.raises(ProtocolError) as e:
        c.ping()
    assert isinstance(e.value, NavdError) and e.value.kind == "protocol"


def test_an_endless_line_stops_at_max_line_without_growing(fake):
    def endless(conn):
        conn.recv(100)
        chunk = b"x" * 65536
        try:
            while True:
                conn.sendall(chunk)
        except OSError:
            pass
    s = fake(behave=endless)
    c = Client(s.path, timeout=10, max_line=1 << 20)
    with pytest.raises(ProtocolError) as e:
        c.ping()
    assert "longer than 1048576" in e.value.message
    assert len(c._buf) <= (1 << 20) + 1


def test_a_server_that_stops_reading_times_the_send_out(fake):
    s = fake(behave=lambda conn: time.sleep(30))
    c = Client(s.path, timeout=1)
    t = time.monotonic()
    with pytest.raises(Timeout):
        c.call("navigate", to="shop.Product", with_={"ref": "x" * (8 << 20)})
    assert time.monotonic() - t < 5


def test_a_server_that_sends_nothing_times_the_reply_out(fake):
    s = fake(behave=lambda conn: time.sleep(30))
    c = Client(s.path, timeout=0.5)
    with pytest.raises(Timeout):
        c.ping()


def test_a_server_that_never_accepts_times_the_connect_out(fake):
    s = fake(accept=False, backlog=0)
    # Fill the queue of connections waiting to be accepted; then a connect cannot complete.
    held = []
    for _ in range(4):
        x = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        x.setblocking(False)
        try:
            x.connect(s.path)
        except BlockingIOError:
            pass
        held.append(x)
    t = time.monotonic()
    with pytest.raises(Timeout):
        Client(s.path, timeout=0.5)
    assert time.monotonic() - t < 3
    for x in held:
        x.close()


def test_notifications_are_bounded(fake):
    def flood(conn):
        f = conn.makefile("rb")
        f.readline()
        note = b'{"jsonrpc":"2.0","method":"navigationPending","params":{}}\n'
        conn.sendall(note * 20000 + b'{"jsonrpc":"2.0","id":1,"result":"pong"}\n')
        time.sleep(5)
    s = fake(behave=flood)
    c = Client(s.path, timeout=10, max_notifications=100)
    assert c.ping() == "pong"
    assert len(c.notifications) == 100 and c.dropped_notifications == 19900


def test_an_empty_socket_path_is_refused():
    with pytest.raises(ConnectError):
        Client("")


def test_bash_completion_never_runs_names_from_an_impostor_server(fake, tmp_path):
    """navctl's installed bash completion (swift-argument-parser's script, whose compgen -W would
    expand $(…) and backticks) asked for `navctl navigate --socket IMPOSTOR <Tab>` offers only
    plain names: the impostor's `$(touch …)` and backtick names run nothing and are not offered."""
    import json
    import subprocess
    marks = [tmp_path / "dollar", tmp_path / "backtick", tmp_path / "semicolon"]
    names = {"$(touch %s)" % marks[0]: {}, "`touch %s`" % marks[1]: {}, "a;touch %s" % marks[2]: {},
             "shop.Home": {}, "shop.Product": {}, "\x1b]0;pwned\x07": {}}

    def answer(line):
        req = json.loads(line)
        return (json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {"coordinators": names, "routes": {}}}) + "\n").encode()

    s = fake(answer=answer)
    navctl = os.path.join(os.environ.get("NAVD_BIN_DIR") or os.path.dirname(os.environ["NAVD_BIN"]), "navctl")
    script = subprocess.run([navctl, "--generate-completion-script", "bash"], capture_output=True, text=True, check=True).stdout
    (tmp_path / "navctl.bash").write_text(script)
    line = "%s navigate --socket %s " % (navctl, s.path)
    words = line.split(" ")
    driver = """
source %s
COMP_LINE=%s; COMP_POINT=${#COMP_LINE}
COMP_WORDS=(%s); COMP_CWORD=%d
_navctl navctl "" %s
printf '%%s\\n' "${COMPREPLY[@]}"
""" % (tmp_path / "navctl.bash", shlex_quote(line), " ".join(shlex_quote(w) for w in words), len(words) - 1, shlex_quote(s.path))
    r = subprocess.run(["bash", "-c", driver], capture_output=True, text=True, timeout=30)
    offered = set(r.stdout.split())
    assert offered == {"shop.Home", "shop.Product"}, (r.stdout, r.stderr)
    for m in marks:
        assert not m.exists(), "a name from the server ran: %s" % m


def shlex_quote(s):
    import shlex
    return shlex.quote(s)
