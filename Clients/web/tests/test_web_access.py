"""nav-web's doors: the Host and Origin checks, --read-only, /metrics and /healthz, hostile page
input, the token kept off command lines, one framing, a loud graph, the WebSocket's size limit."""
import json
import os
import subprocess
import time

from conftest import TOKEN, NavWeb
from page import text, tree_json, load, http, WebSocket
from selenium.webdriver.common.by import By


def test_host_and_origin_are_checked(navweb):
    ok = WebSocket(navweb.port, "http://127.0.0.1:%d" % navweb.port)
    assert ok.status == 101
    assert ok.receive()["method"] == "navweb.hello"
    assert ok.call("ping")["result"] == "pong"
    assert WebSocket(navweb.port, "http://evil.example").status != 101, "another site's page"
    assert WebSocket(navweb.port, "http://127.0.0.1:%d" % navweb.port, cookie=False).status != 101
    assert WebSocket(navweb.port, "http://evil.example:%d" % navweb.port, host="evil.example:%d" % navweb.port).status != 101
    status, body = http(navweb.url.replace("127.0.0.1", "localhost"), {"Host": "evil.example:%d" % navweb.port})
    assert status == 403 and "not this server" in body, (status, body)
    # Bad input from the page gets precise errors: navd's for a request, nav-web's (where the JSON
    # went wrong, as navd says it) for what is not a message at all.
    assert ok.call("navigate", {"to": "shop.Nope"}, id=2)["error"]["data"]["kind"] == "unknownTarget"
    ok.send("{not json")
    m = ok.receive()
    assert m["error"]["data"]["kind"] == "parseError" and "line 1, column 2" in m["error"]["message"], m


def test_read_only_relays_only_what_changes_nothing(navd, browser):
    w = NavWeb(navd, ["--read-only"])
    try:
        ws = WebSocket(w.port, "http://127.0.0.1:%d" % w.port)
        assert ws.receive() == {"jsonrpc": "2.0", "method": "navweb.hello", "params": {"readOnly": True}}
        assert ws.call("tree")["result"]["version"] == 0
        refused = ws.call("navigate", {"to": "shop.Product", "with": {"id": "1"}}, id=2)
        assert refused["error"]["data"]["kind"] == "accessDenied" and "--read-only" in refused["error"]["message"], refused
        assert tree_json(navd)["version"] == 0
        load(browser, w)
        assert text(browser, "mode") == "read-only"
        assert all(not b.is_enabled() for b in browser.find_elements(By.CSS_SELECTOR, "#actions button"))
    finally:
        w.stop()


def test_metrics_and_healthz(navweb):
    assert http(navweb.base + "/metrics")[0] == 401
    status, body = http(navweb.base + "/metrics", {"Authorization": "Bearer " + TOKEN})
    assert status == 200, body
    for name in ["navd_requests_total", "navd_connections", "navd_sessions", "navd_commits_total", "navd_uptime_seconds", 'navd_user_connections{uid="']:
        assert name in body, name
    assert "# TYPE navd_requests_total counter" in body
    assert http(navweb.base + "/healthz") == (200, "ok\n")


def test_hostile_input_from_a_page_disturbs_nobody(navweb):
    other = WebSocket(navweb.port, "http://127.0.0.1:%d" % navweb.port)
    other.receive()
    bad = WebSocket(navweb.port, "http://127.0.0.1:%d" % navweb.port)
    bad.receive()
    # Not JSON, not JSON-RPC, an unknown method, a batch of garbage: navd's own errors come back.
    for payload, kind in [("[]", "emptyBatch"), ('{"jsonrpc":"2.0","id":3,"method":"nope"}', "methodNotFound"),
                          ('{"jsonrpc":"2.0","id":4}', "invalidRequest"), ("\u00e9\u0000", "parseError")]:
        bad.send(payload)
        m = bad.receive()
        assert m["error"]["data"]["kind"] == kind, (payload, m)
    # A message over nav-web's limit (1 MiB) closes that page's WebSocket, and only it. nav-web
    # closes as soon as it has read the frame's header, so the rest of the frame may meet a
    # reset while it is still being sent: that is the close too.
    closed = False
    try:
        bad.send('{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"' + "x" * (1 << 21) + '"}}')
        bad.receive()
    except (AssertionError, OSError):
        closed = True
    assert closed, "the oversized message closed the WebSocket"
    assert other.call("ping", id=9)["result"] == "pong"
    assert http(navweb.base + "/healthz") == (200, "ok\n")


def test_the_token_is_never_on_the_command_line(navd, tmp_path):
    """--token is refused with the reason; --token-file is created 0600 and used; the running
    nav-web's command line holds no token; a page gives up every role unless --admin."""
    bad = subprocess.run([os.environ["NAVWEB_BIN"], "--socket", navd, "--token", "x" * 32], capture_output=True, text=True, timeout=20)
    assert bad.returncode != 0 and "/proc/PID/cmdline" in bad.stderr and "--token-file" in bad.stderr, bad.stderr
    path = str(tmp_path / "token")
    p = subprocess.Popen([os.environ["NAVWEB_BIN"], "--socket", navd, "--port", "0", "--token-file", path],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={k: v for k, v in os.environ.items() if k != "NAVWEB_TOKEN"})
    try:
        line = p.stdout.readline()
        token = open(path).read().strip()
        assert os.stat(path).st_mode & 0o777 == 0o600 and len(token) >= 32 and ("token=" + token) in line, (line, oct(os.stat(path).st_mode))
        assert token not in open("/proc/%d/cmdline" % p.pid).read()
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
        assert http("http://127.0.0.1:%d/metrics" % port, {"Authorization": "Bearer " + token})[0] == 200
    finally:
        p.terminate()
        p.wait(10)
    os.chmod(path, 0o644)
    shared = subprocess.run([os.environ["NAVWEB_BIN"], "--socket", navd, "--token-file", path], capture_output=True, text=True, timeout=20)
    assert shared.returncode != 0 and "chmod 600" in shared.stderr, shared.stderr
    # Without --admin the page holds no role: graph.reload and provide are refused, reading works.
    w = NavWeb(navd, admin=False)
    try:
        ws = WebSocket(w.port, "http://127.0.0.1:%d" % w.port)
        ws.receive()
        assert ws.call("hello", {"client": "page"})["result"]["roles"] == []
        assert ws.call("graph.reload", id=2)["error"]["data"]["kind"] == "accessDenied"
        assert ws.call("provide", {"preconditions": ["cart.paymentAuthorized"]}, id=3)["error"]["data"]["kind"] == "accessDenied"
        assert ws.call("tree", id=4)["result"]["version"] == 0
    finally:
        w.stop()


def test_the_relay_speaks_one_framing(navd):
    """What is not one JSON-RPC message or batch is answered parseError and never reaches navd:
    the Content-Length pieces that once slipped a navigation past --read-only change nothing."""
    w = NavWeb(navd, ["--read-only"])
    try:
        ws = WebSocket(w.port, "http://127.0.0.1:%d" % w.port)
        ws.receive()
        body = '{"jsonrpc":"2.0","id":7,"method":"navigate","params":{"to":"shop.Product","with":{"id":"1"}}}'
        for piece in ["Content-Length: %d\r" % len(body), "\r", '{"jsonrpc":"2.0","id":7,', body[len('{"jsonrpc":"2.0","id":7,'):]]:
            ws.send(piece)
            m = ws.receive()
            assert m["error"]["data"]["kind"] == "parseError" and m["id"] is None, (piece, m)
        assert tree_json(navd)["version"] == 0
        # What navd declares as changing nothing goes through; what changes is refused here.
        assert ws.call("graph.describe", id=8)["result"]
        refused = ws.call("context.set", {"facts": {"a": 1}}, id=9)
        assert refused["error"]["data"]["kind"] == "accessDenied" and "changing nothing" in refused["error"]["message"], refused
    finally:
        w.stop()


def test_a_graph_with_loud_diagnostics_does_not_hang_nav_web(navd, tmp_path):
    """`navd graph` writing more than a pipe holds to stderr (3,000 errors): /graph.svg answers
    (500, the errors named), twice, and /healthz stays up."""
    d = str(tmp_path)
    lines = ["root: {stack: Home}", "coordinators:", "  Home: {opens: [%s]}" % ", ".join("C%d" % i for i in range(3000))]
    lines += ["  C%d: {opens: [Nowhere%d]}" % (i, i) for i in range(3000)]  # each an error: an unknown coordinator
    open(os.path.join(d, "app.yaml"), "w").write("\n".join(lines) + "\n")
    check = subprocess.run([os.environ["NAVD_BIN"], "graph", d, "--format", "dot"], capture_output=True, timeout=60)
    assert len(check.stderr) > 65536, "the graph's diagnostics pass a pipe's 64 KiB: %d bytes" % len(check.stderr)
    w = NavWeb(navd, ["--graph", d])
    try:
        for _ in range(2):
            t = time.monotonic()
            status, body = http(w.base + "/graph.svg", {"Authorization": "Bearer " + TOKEN})
            assert status == 500 and "Nowhere" in body and time.monotonic() - t < 15, (status, body[:300])
        assert http(w.base + "/healthz") == (200, "ok\n")
    finally:
        w.stop()


def test_the_websocket_takes_one_mebibyte_and_not_a_byte_more(navweb, browser):
    """From Chromium: a message of exactly 1 MiB is relayed (navd answers it); one byte more closes
    the WebSocket with 1009 (message too big)."""
    load(browser, navweb)
    script = """
        const done = arguments[arguments.length - 1];
        const size = arguments[0];
        const ws = new WebSocket('ws://' + location.host + '/ws');
        const head = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"', tail = '"}}';
        ws.onopen = () => ws.send(head + 'x'.repeat(size - head.length - tail.length) + tail);
        ws.onmessage = (e) => { const m = JSON.parse(e.data); if (m.id === 1) { done(JSON.stringify(m)); ws.close(); } };
        ws.onclose = (e) => done('closed ' + e.code);
    """
    browser.set_script_timeout(20)
    at_limit = browser.execute_async_script(script, 1 << 20)
    assert at_limit.startswith("{") and json.loads(at_limit)["id"] == 1, at_limit[:300]
    assert browser.execute_async_script(script, (1 << 20) + 1) == "closed 1009"


def test_a_page_that_never_answers_the_close_frame_does_not_hold_the_stop(navd):
    """SIGTERM: nav-web sends each page a close frame (a browser answers at once). A page that never
    answers (a frozen tab, a client that stopped reading) is cut off after the grace, 2 s, so that
    nav-web stops in bounded time and cleanly, rather than until its service manager kills it."""
    w = NavWeb(navd)
    frozen = WebSocket(w.port, "http://127.0.0.1:%d" % w.port)
    assert frozen.receive()["method"] == "navweb.hello"
    started = time.monotonic()
    w.proc.terminate()
    try:
        code = w.proc.wait(15)
    finally:
        w.stop()
    took = time.monotonic() - started
    assert code == 0 and 1.5 < took < 6, (code, took)
    # What the page was sent: the close frame (opcode 8), status 1000, before nav-web went.
    frozen.s.settimeout(1)
    data = frozen.buffer + frozen.s.recv(64)
    assert data[0] & 0x0F == 0x8 and int.from_bytes(data[2:4], "big") == 1000, data


def test_nav_web_tells_its_service_manager_when_it_listens(navd, tmp_path):
    """Under systemd (`Type=notify`, NOTIFY_SOCKET set): READY=1 with nav-web's pid once it
    listens, and a status naming where without the token (every user sees a unit's status)."""
    import socket as sockets
    manager = sockets.socket(sockets.AF_UNIX, sockets.SOCK_DGRAM)
    path = str(tmp_path / "notify")
    manager.bind(path)
    manager.settimeout(20)
    env = dict(os.environ, NAVWEB_TOKEN=TOKEN, NOTIFY_SOCKET=path)
    proc = subprocess.Popen([os.environ["NAVWEB_BIN"], "--socket", navd, "--port", "0", "--navd", os.environ["NAVD_BIN"]],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        message = manager.recv(4096).decode()
        fields = dict(line.split("=", 1) for line in message.splitlines())
        assert fields.get("READY") == "1" and fields.get("MAINPID") == str(proc.pid), message
        assert TOKEN not in message, message
        port = int(fields["STATUS"].split("http://127.0.0.1:")[1].split("/")[0])
        # Ready means listening: /healthz answers at once.
        assert http("http://127.0.0.1:%d/healthz" % port) == (200, "ok\n")
    finally:
        proc.terminate()
        proc.wait(10)
        manager.close()
