#!/usr/bin/env python3
"""make bench-web: nav-web's CPU and memory with PAGES pages (default 10, tabs of one headless
Chromium) open on a busy session: a driver commits RATE navigations per second (default 1,000:
navigate/dismiss pairs) to session s0 for SECONDS (default 10) while every page follows it. Prints
nav-web's CPU (percent of one core) and resident memory before and after, the notifications navd
sent, and whether every page caught up with the last version. Release builds (make build; nav-web
with -c release when built so, else its debug build, said in the output)."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PAGES = int(os.environ.get("PAGES", "10"))
RATE = int(os.environ.get("RATE", "1000"))
SECONDS = float(os.environ.get("SECONDS", "10"))
TOKEN = "bench-token-0123456789abcdef"


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def call(sock, method, params=None):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}) + "\n").encode())
    line = s.makefile("rb").readline()
    s.close()
    return json.loads(line)["result"]


def main():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    work = tempfile.mkdtemp(prefix="navd-bench-web-")
    sock = os.path.join(work, "navd.sock")
    navd_bin = os.path.join(ROOT, ".build/release/navd")
    web_bin = os.environ.get("NAVWEB_BIN") or os.path.join(ROOT, ".build/release/nav-web")
    build = "release" if "release" in web_bin else "debug"
    navd = subprocess.Popen([navd_bin, "--socket", sock, "--ephemeral", "--log-level", "error"])
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.02)
    call(sock, "session.open", {"name": "s0"})
    web = subprocess.Popen([web_bin, "--socket", sock, "--port", "0", "--navd", navd_bin], stdout=subprocess.PIPE, text=True,
                           env=dict(os.environ, NAVWEB_TOKEN=TOKEN))
    url = re.search(r"http://\S+", web.stdout.readline()).group(0) + "&session=s0"
    o = Options()
    o.binary_location = shutil.which("chromium")
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"]:
        o.add_argument(a)
    driver = webdriver.Chrome(options=o, service=Service(shutil.which("chromedriver")))
    try:
        handles = []
        for i in range(PAGES):
            if i:
                driver.switch_to.new_window("tab")
            driver.get(url)
            handles.append(driver.current_window_handle)
        for h in handles:
            driver.switch_to.window(h)
            deadline = time.monotonic() + 20
            while driver.find_element("id", "status").text != "connected":
                assert time.monotonic() < deadline, "a page did not connect"
                time.sleep(0.05)
        time.sleep(1)
        rss_before, cpu_before = rss_mb(web.pid), cpu_seconds(web.pid)
        sent_before = call(sock, "stats")["notificationsSent"]
        # The busy session: navigate/dismiss pairs at RATE commits per second, 20 per 20 ms.
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock)
        reader = s.makefile("rb")
        step = 0.02
        per_step = max(2, int(RATE * step) // 2 * 2)
        started = time.monotonic()
        n = 0
        while time.monotonic() - started < SECONDS:
            lines = []
            for k in range(per_step // 2):
                n += 1
                lines.append(json.dumps({"jsonrpc": "2.0", "id": 2 * n, "method": "navigate", "params": {"session": "s0", "to": "shop.Product", "with": {"id": "p%d" % n}}}))
                lines.append(json.dumps({"jsonrpc": "2.0", "id": 2 * n + 1, "method": "dismiss", "params": {"session": "s0"}}))
            s.sendall(("\n".join(lines) + "\n").encode())
            for _ in lines:
                reader.readline()
            target = started + step * (n * 2 // per_step)
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        elapsed = time.monotonic() - started
        cpu_after = cpu_seconds(web.pid)
        version = call(sock, "tree", {"session": "s0"})["version"]
        sent = call(sock, "stats")["notificationsSent"] - sent_before
        # Every page catches up with the last version.
        caught = 0
        deadline = time.monotonic() + 30
        for h in handles:
            driver.switch_to.window(h)
            while driver.find_element("id", "version").text != "version %d" % version and time.monotonic() < deadline:
                time.sleep(0.05)
            caught += driver.find_element("id", "version").text == "version %d" % version
        settled = time.monotonic() - started - elapsed
        rss_after = rss_mb(web.pid)
        print("bench-web: %d pages (tabs of headless Chromium) on session s0; nav-web %s build" % (PAGES, build))
        print("  load: %d commits in %.1f s (%.0f/s), navd sent %d notifications (%.0f/s)" % (version, elapsed, version / elapsed, sent, sent / elapsed))
        print("  nav-web: CPU %.1f%% of one core while loaded; RSS %.1f MB before, %.1f MB after" % (100 * (cpu_after - cpu_before) / elapsed, rss_before, rss_after))
        print("  pages at the last version (%d): %d of %d, %.1f s after the load ended" % (version, caught, PAGES, settled))
    finally:
        driver.quit()
        web.terminate()
        navd.terminate()
        web.wait(10)
        navd.wait(10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
