"""navd restarted after kill -9 on the socket a service manager holds, as systemd's navd.socket
holds it: this test is the manager (it binds and listens, and passes the socket to each navd on
descriptor 3 with LISTEN_PID and LISTEN_FDS, sd_listen_fds(3)). A client that connects while navd
is down is queued by the kernel and served by the next navd, which has every acknowledged
navigation; subscribers see the version go on from there."""
import json
import os
import signal
import socket
import subprocess
import tempfile

import pytest

NAVD = os.environ.get("NAVD_BIN")


def start(listener, state, log):
    """navd on `listener` (passed as descriptor 3), keeping its sessions in `state`."""
    fd = listener.fileno()

    def as_descriptor_3():
        os.dup2(fd, 3)
        os.set_inheritable(3, True)

    return subprocess.Popen(["/bin/sh", "-c", 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"', "sh", NAVD, "serve", "--state", state],
                            preexec_fn=as_descriptor_3, close_fds=False, stdin=subprocess.DEVNULL, stderr=log)


class Line:
    """A newline-delimited JSON-RPC connection."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(20)
        self.s.connect(path)
        self.buf = b""
        self.next_id = 0

    def send(self, method, **params):
        self.next_id += 1
        self.s.sendall((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}) + "\n").encode())
        return self.next_id

    def read(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            assert chunk, "navd closed the connection"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def answer(self, id):
        while True:
            m = self.read()
            if m.get("id") == id:
                assert "result" in m, m
                return m["result"]

    def call(self, method, **params):
        return self.answer(self.send(method, **params))


@pytest.mark.skipif(not NAVD, reason="needs NAVD_BIN (make test-python sets it)")
def test_a_client_connecting_while_navd_is_down_is_served_by_the_next_one():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "navd.sock")
        state = os.path.join(d, "state.sqlite")
        listener = socket.socket(socket.AF_UNIX)
        old = os.umask(0o177)
        listener.bind(path)
        os.umask(old)
        listener.listen(64)
        log = open(os.path.join(d, "navd.log"), "w+")
        first = start(listener, state, log)
        try:
            # The first client may connect before navd has even started: the socket exists.
            a = Line(path)
            v = a.call("navigate", to="shop.Product", **{"with": {"id": "42"}})["version"]
            assert v == 1
            watcher = Line(path)
            assert watcher.call("subscribe")["version"] == 1
            first.send_signal(signal.SIGKILL)
            assert first.wait(10) == -signal.SIGKILL
            # navd is down; the socket still takes connections, which wait in its queue.
            b = Line(path)
            sent = b.send("tree")
            second = start(listener, state, log)
            try:
                tree = b.answer(sent)
                # The acknowledged navigation survived the kill.
                assert tree["version"] == 1, tree
                top = tree["root"]["children"][0]["children"][-1] if tree["root"]["kind"] == "tabs" else tree["root"]["children"][-1]
                assert top["coordinator"] == "shop.Product" and top["params"] == {"id": "42"}, tree
                # The new navd serves old clients' reconnections and goes on from version 1.
                watcher = Line(path)
                assert watcher.call("subscribe")["version"] == 1
                assert b.call("dismiss")["version"] == 2
                m = watcher.read()
                assert m.get("method") == "stackChanged" and m["params"]["version"] == 2, m
                second.send_signal(signal.SIGTERM)
                assert second.wait(10) == 0
                # The manager's socket is left where it is for the next start.
                assert os.path.exists(path)
            finally:
                if second.poll() is None:
                    second.kill()
        finally:
            if first.poll() is None:
                first.kill()
            log.seek(0)
            print(log.read())
