"""What nav-web's tests share: waiting on the page, reading it, plain HTTP, a WebSocket
written from RFC 6455."""
import base64
import json
import os
import socket
import urllib.error
import urllib.request

from conftest import TOKEN, navctl
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def wait(driver, condition, timeout=20, message=""):
    """Polls `condition`; an element the page re-rendered between finding and reading it (stale)
    is looked for again on the next poll, not an error."""
    from selenium.common.exceptions import StaleElementReferenceException
    return WebDriverWait(driver, timeout, poll_frequency=0.02, ignored_exceptions=[StaleElementReferenceException]).until(
        lambda d: condition(d), message)


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def button(driver, label):
    return driver.find_element(By.CSS_SELECTOR, '#actions button[data-action="%s"]' % label)


def tree_json(sock):
    return json.loads(navctl(sock, "tree", "--json"))


def load(driver, navweb):
    driver.get(navweb.url)
    wait(driver, lambda d: "shop.Home" in text(d, "tree") and text(d, "status") == "connected", message="the page shows the tree")


def http(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class WebSocket:
    """The smallest WebSocket client the tests need: the upgrade, text frames both ways."""

    def __init__(self, port, origin, cookie=True, host=None):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET /ws HTTP/1.1", "Host: %s" % (host or "127.0.0.1:%d" % port), "Upgrade: websocket", "Connection: Upgrade",
                 "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13", "Origin: " + origin]
        if cookie:
            lines.append("Cookie: navweb_token=" + TOKEN)
        self.s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                break
            head += chunk
        self.status = int(head.split(b" ")[1]) if head else 0
        self.buffer = head.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in head else b""

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        if len(data) < 126:
            header = bytes([0x81, 0x80 | len(data)])
        elif len(data) < 65536:
            header = bytes([0x81, 0x80 | 126]) + len(data).to_bytes(2, "big")
        else:
            header = bytes([0x81, 0x80 | 127]) + len(data).to_bytes(8, "big")
        self.s.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def receive(self):
        while True:
            if len(self.buffer) >= 2:
                n = self.buffer[1] & 0x7F
                start = 2
                if n == 126:
                    n = int.from_bytes(self.buffer[2:4], "big")
                    start = 4
                elif n == 127:
                    n = int.from_bytes(self.buffer[2:10], "big")
                    start = 10
                if len(self.buffer) >= start + n:
                    opcode = self.buffer[0] & 0x0F
                    payload = self.buffer[start:start + n]
                    self.buffer = self.buffer[start + n:]
                    assert opcode != 0x8, "nav-web closed the WebSocket (close frame %r)" % payload
                    return json.loads(payload.decode())
            chunk = self.s.recv(65536)
            assert chunk, "nav-web closed the WebSocket"
            self.buffer += chunk

    def call(self, method, params=None, id=1):
        self.send(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}))
        while True:
            m = self.receive()
            if m.get("id") == id:
                return m
