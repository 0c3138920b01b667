"""Fixtures for nav-web's browser tests: a navd (the debug build, embedded example graph, no state
file), a nav-web relaying to it on a free port with a known token, and a headless Chromium driven
by Selenium through Debian's chromium-driver. Each test saves a screenshot of the page to
.build/web-screenshots/ (the test's artefacts)."""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
SHOTS = os.path.join(ROOT, ".build", "web-screenshots")
TOKEN = "test-token-0123456789abcdef"


def wait_for_socket(path, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("navd did not listen on %s" % path)


class NavWeb:
    """nav-web with the test's token in $NAVWEB_TOKEN (never on its command line); `admin` keeps
    the roles of the test's uid for the page (answering provider requests needs them)."""

    def __init__(self, navd_sock, args=(), admin=True):
        self.navd_sock = navd_sock
        env = dict(os.environ, NAVWEB_TOKEN=TOKEN)
        self.proc = subprocess.Popen([os.environ["NAVWEB_BIN"], "--socket", navd_sock, "--port", "0",
                                      "--navd", os.environ["NAVD_BIN"], *(["--admin"] if admin else []), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        line = self.proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
        if not m:
            raise RuntimeError("nav-web printed %r" % line)
        self.port = int(m.group(1))
        self.url = m.group(0)
        self.base = "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def pytest_configure(config):
    config.addinivalue_line("markers", "graph(text): the module file app.yaml navd serves instead of the embedded example")


@pytest.fixture
def navd(request):
    work = tempfile.mkdtemp(prefix="navweb-test-")
    sock = os.path.join(work, "navd.sock")
    graph = []
    marker = request.node.get_closest_marker("graph")
    if marker:
        os.mkdir(os.path.join(work, "graph"))
        with open(os.path.join(work, "graph", "app.yaml"), "w") as f:
            f.write(marker.args[0])
        graph = ["--graph", os.path.join(work, "graph")]
    p = subprocess.Popen([os.environ["NAVD_BIN"], "--socket", sock, "--ephemeral", "--log-level", "error", *graph])
    wait_for_socket(sock)
    yield sock
    p.terminate()
    p.wait(10)
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture
def navweb(navd):
    w = NavWeb(navd)
    yield w
    w.stop()


@pytest.fixture
def browser(request):
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium and chromium-driver are not installed (make deps installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    o = Options()
    o.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1100"]:
        o.add_argument(a)
    # Chromium leaves its process-singleton folder (org.chromium.Chromium.*) in its TMPDIR when
    # headless: each browser gets a folder of its own, removed after it quits.
    tmp = tempfile.mkdtemp(prefix="navweb-chromium-")
    d = webdriver.Chrome(options=o, service=Service(CHROMEDRIVER, env={**os.environ, "TMPDIR": tmp}))
    yield d
    os.makedirs(SHOTS, exist_ok=True)
    try:
        d.save_screenshot(os.path.join(SHOTS, request.node.name + ".png"))
    finally:
        d.quit()
        shutil.rmtree(tmp, ignore_errors=True)


def record(line):
    """A figure a test measured: printed, and kept in .build/web-screenshots/figures.txt (make
    test-web prints the file at its end)."""
    os.makedirs(SHOTS, exist_ok=True)
    with open(os.path.join(SHOTS, "figures.txt"), "a") as f:
        f.write(line + "\n")
    print(line)


def navctl(sock, *args):
    r = subprocess.run([os.path.join(os.path.dirname(os.environ["NAVD_BIN"]), "navctl"), "--socket", sock, *args],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout
