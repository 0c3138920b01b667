"""The blocking client and the provider (see the package's documentation)."""

import collections
import json
import os
import select
import socket
import threading
import time
import warnings

from .errors import ConnectError, ConnectionClosed, NavdError, OutOfStep, ProtocolError, Timeout, _error_from, error_class
from .mirror import _mirror, expand

Moved = error_class("moved")

__all__ = ["Client", "Provider", "default_socket_path", "MAX_LINE", "MAX_NOTIFICATIONS"]

#: The longest line accepted from navd (its own --max-output, 8 MiB by default, and then some).
MAX_LINE = 16 * 1024 * 1024
#: The most notifications kept unread; past it the oldest are dropped (and counted).
MAX_NOTIFICATIONS = 10_000


# ----------------------------------------------------------------------------- the client

def default_socket_path(explicit=None):
    """``explicit``, else ``$NAVD_SOCKET``, else ``$XDG_RUNTIME_DIR/navd.sock``, else
    ``/tmp/navd-<uid>.sock``, as navd and navctl choose. An
    empty path is refused: Linux would take it for an abstract socket, which anyone may serve."""
    if explicit is not None:
        if not explicit or explicit.startswith("\0"):
            raise ConnectError("the socket path is empty; give navd's socket (socket_path or NAVD_SOCKET)")
        return explicit
    env = os.environ
    if env.get("NAVD_SOCKET"):
        return env["NAVD_SOCKET"]
    # An empty or relative XDG_RUNTIME_DIR is not a runtime directory (the XDG specification).
    if env.get("XDG_RUNTIME_DIR", "").startswith("/"):
        return env["XDG_RUNTIME_DIR"] + "/navd.sock"
    return "/tmp/navd-%d.sock" % os.getuid()


def _ready(sock, events, seconds):
    """Whether `sock` is ready for `events` within `seconds` (poll: any descriptor number, where
    select stops at 1024)."""
    p = select.poll()
    p.register(sock, events | select.POLLERR | select.POLLHUP)
    return bool(p.poll(max(0, int(seconds * 1000) + 1)))


def _params(params, kw):
    """Merges keyword params into ``params``: ``with_``/``from_`` name ``with``/``from``; None is left out."""
    p = dict(params or {})
    for k, v in kw.items():
        if v is not None:
            p[k[:-1] if k.endswith("_") else k] = v
    return p


class Client:
    """A blocking connection to navd (newline-delimited JSON-RPC 2.0). ``timeout`` (seconds, None:
    wait for ever) bounds connecting, and each call's sending and receiving; ``max_line`` the
    longest line accepted; ``max_notifications`` the notifications kept unread (the oldest are
    dropped past it, counted in ``dropped_notifications``; subscribed mirrors are kept current
    regardless)."""

    def __init__(self, socket_path=None, timeout=10.0, name=None, token=None, max_line=MAX_LINE,
                 max_notifications=MAX_NOTIFICATIONS, notifications=None):
        self.socket_path = default_socket_path(socket_path)
        self.timeout = timeout
        self.max_line = max_line
        self.dropped_notifications = 0
        self.notifications = collections.deque(maxlen=max_notifications)
        self.mirrors = {}
        #: Session names by ``ref``: compact ``stackChanged`` name their session by it (``subscribe``
        #: answers it). Notifications are handed on in the full form whichever form navd sends.
        self.refs = {}
        self._handlers = {}
        self._replies = {}
        self._buf = bytearray()
        self._scanned = 0
        self._next_id = 1
        #: Whether a ``moved`` error (cluster mode) is followed: the client connects to the node it
        #: names, says hello again as it did, and sends the request there once.
        self.follow_moved = True
        self._hello = None
        self._connect()
        if socket_path is None and not os.environ.get("NAVD_SOCKET"):
            self._check_owner()
        if name or token or notifications:
            # ``notifications="compact"``: subscriptions hear stackChanged in about half the bytes.
            self._hello = {k: v for k, v in (("client", name), ("token", token), ("notifications", notifications)) if v is not None}
            self.call("hello", **self._hello)

    def _connect(self):
        """Connects within the timeout: a Unix socket whose server does not accept (its queue is
        full, the server stopped) refuses a non-blocking connect with EAGAIN, tried again until then."""
        deadline = self._deadline(None)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.setblocking(False)
        while True:
            try:
                self._sock.connect(self.socket_path)
                break
            except (BlockingIOError, InterruptedError):
                if deadline is not None and time.monotonic() >= deadline:
                    self._sock.close()
                    raise Timeout("navd at %s did not accept the connection within %s s (is it stopped or overloaded?)"
                                  % (self.socket_path, self.timeout)) from None
                time.sleep(0.01)
            except (OSError, ValueError) as e:
                self._sock.close()
                raise ConnectError("cannot connect to navd at %s: %s (is navd running? pass socket_path or set NAVD_SOCKET)"
                                   % (self.socket_path, getattr(e, "strerror", None) or e)) from None
        self._sock.setblocking(True)

    def _check_owner(self):
        # The default path is only trusted when navd runs as this user (or root): a socket another
        # user placed there is refused, as navctl does.
        import struct
        creds = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        uid = struct.unpack("3i", creds)[1]
        if uid not in (os.getuid(), 0):
            self._sock.close()
            raise ConnectError("the socket %s is served by uid %d, not by you (uid %d): refusing to talk to it"
                               % (self.socket_path, uid, os.getuid()))

    def close(self):
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- messages

    def _send(self, message, deadline=None):
        """Sends one message, within ``deadline`` (by default the client's timeout from now)."""
        try:
            data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        except (TypeError, ValueError, RecursionError) as e:
            raise NavdError("this message cannot be sent as JSON: %s" % e) from None
        if deadline is None:
            deadline = self._deadline(None)
        view = memoryview(data)
        try:
            while view:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0 or not _ready(self._sock, select.POLLOUT, left):
                        raise Timeout("navd did not take the request within the timeout (is it stopped?)")
                try:
                    n = self._sock.send(view, socket.MSG_DONTWAIT)  # a blocking send waits for all of it
                except BlockingIOError:
                    n = 0
                view = view[n:]
        except (BrokenPipeError, ConnectionResetError):
            raise ConnectionClosed("navd closed the connection") from None
        except OSError as e:
            raise ConnectionClosed("cannot send to navd: %s" % (e.strerror or e)) from None

    def _read(self, deadline):
        """The next message; raises ConnectionClosed at the end, Timeout past ``deadline``,
        ProtocolError for what is not a JSON-RPC message."""
        while True:
            nl = self._buf.find(b"\n", self._scanned)
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[:nl + 1]
                self._scanned = 0
                if line.strip():
                    return self._decode(line)
                continue
            self._scanned = len(self._buf)
            if len(self._buf) > self.max_line:
                self._buf = bytearray()
                self._scanned = 0
                raise ProtocolError("a line from navd is longer than %d bytes (max_line)" % self.max_line)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not _ready(self._sock, select.POLLIN, left):
                    raise Timeout("navd sent nothing within the timeout")
            try:
                chunk = self._sock.recv(min(65536, self.max_line + 1 - len(self._buf)))
            except OSError as e:
                raise ConnectionClosed("cannot read from navd: %s" % (e.strerror or e)) from None
            if not chunk:
                raise ConnectionClosed("navd closed the connection")
            self._buf += chunk

    @staticmethod
    def _decode(line):
        try:
            m = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise ProtocolError("navd sent a line that is not UTF-8") from None
        except RecursionError:
            raise ProtocolError("navd sent JSON nested too deep to read") from None
        except ValueError as e:
            raise ProtocolError("navd sent a line that is not JSON (%s): %r" % (e, line[:80])) from None
        if not isinstance(m, dict) or ("method" not in m and "id" not in m):
            raise ProtocolError("navd sent a message that is not a JSON-RPC object: %r" % line[:80])
        if "error" in m and not isinstance(m["error"], dict):
            raise ProtocolError("navd sent an error that is not an object: %r" % line[:80])
        return m

    def _queue(self, notification):
        if len(self.notifications) == self.notifications.maxlen:
            self.dropped_notifications += 1  # the deque drops the oldest
        self.notifications.append(notification)

    def _deadline(self, timeout):
        t = self.timeout if timeout is None else timeout
        return None if t is None else time.monotonic() + t

    def _incoming(self, m):
        """Handles a request or notification from navd; False for a reply."""
        method = m.get("method") if isinstance(m, dict) else None
        if method is None:
            return False
        if "id" in m:
            self._answer(m)
            return True
        if method == "stackChanged":
            if isinstance(m.get("params"), list) and m["params"] and m["params"][0] in self.refs:
                m = dict(m, params=expand(m["params"], self.refs[m["params"][0]]))
            p = m.get("params") if isinstance(m.get("params"), dict) else {}
            mirror = self.mirrors.get(p.get("session"))
            if mirror is not None and not mirror.stale:
                try:
                    mirror.apply(p)
                except (OutOfStep, KeyError, TypeError, IndexError, AttributeError, ValueError):
                    mirror.stale = True  # a change it cannot follow: a new snapshot mends it
        elif method == "sessionClosed":
            # The session is gone and the subscription with it: the mirror keeps its last tree,
            # marked closed, and is no longer kept current (a session opened again under the name
            # starts at version 0 and needs a new subscribe).
            p = m.get("params") if isinstance(m.get("params"), dict) else {}
            mirror = self.mirrors.pop(p.get("session"), None)
            if mirror is not None:
                mirror.closed = True
                mirror.stale = False
            self.refs = {ref: name for ref, name in self.refs.items() if name != p.get("session")}
        self._queue(m)
        return True

    def _answer(self, request):
        handler = self._handlers.get(request.get("method"))
        if handler is None:
            self._send({"jsonrpc": "2.0", "id": request["id"],
                        "error": {"code": -32601, "message": "this client does not answer %s" % request["method"]}})
            return
        try:
            result = handler(request.get("params", {}))
            self._send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        except Exception as e:  # the handler's failure is the provider's answer, not ours to raise
            self._send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": str(e)}})

    # -- calls

    def send(self, method, params=None, **kw):
        """Sends a request without waiting; returns its id (see :meth:`reply`)."""
        return self._request(method, _params(params, kw), None)

    def _request(self, method, params, deadline):
        rid = self._next_id
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, deadline)
        return rid

    def reply(self, rid, timeout=None):
        """Waits for the reply to request ``rid``: its result, or the error raised."""
        deadline = self._deadline(timeout)
        m = self._replies.pop(rid, None)
        while m is None:
            m = self._read(deadline)
            if self._incoming(m):
                m = None
            elif m.get("id") is None and "error" in m:
                raise _error_from(m["error"])  # about the connection (navd closes it next): client.kill, limits
            elif m.get("id") != rid:
                if len(self._replies) < 10_000:
                    self._replies[m.get("id")] = m  # the reply to another request sent earlier
                m = None
        self._refresh_stale()
        if "error" in m:
            raise _error_from(m["error"])
        return m.get("result")

    def call(self, method, params=None, timeout=None, **kw):
        """Calls ``method`` with ``params`` (a dict) and/or keywords; returns the result. A ``moved``
        error (cluster mode: another node owns the session) is followed once (see ``follow_moved``)."""
        try:
            return self.reply(self._request(method, _params(params, kw), self._deadline(timeout)), timeout)
        except Moved as e:
            target = (e.data or {}).get("socket")
            if not self.follow_moved or not target:
                raise
            self.close()
            self.socket_path = target
            self._buf = bytearray()
            self._scanned = 0
            self._connect()
            self._check_owner()
            if self._hello:
                self.reply(self.send("hello", self._hello), timeout)
            return self.reply(self.send(method, params, **kw), timeout)

    def notify(self, method, params=None, **kw):
        """Sends a notification (no reply)."""
        self._send({"jsonrpc": "2.0", "method": method, "params": _params(params, kw)})

    def next_notification(self, timeout=None):
        """The next notification (queued first): ``{"method", "params"}``; Timeout when none comes."""
        deadline = self._deadline(timeout)
        while not self.notifications:
            m = self._read(deadline)
            if not self._incoming(m) and m.get("id") is None and "error" in m:
                raise _error_from(m["error"])
        return self.notifications.popleft()

    def wait_for(self, method, predicate=None, timeout=None):
        """Reads notifications until one of ``method`` (whose params satisfy ``predicate``) comes;
        returns its params. Others read meanwhile are dropped."""
        deadline = self._deadline(timeout)
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                n = self.next_notification(left)
            except Timeout:
                raise Timeout("no %s notification within the timeout" % method) from None
            if n.get("method") == method and (predicate is None or predicate(n.get("params", {}))):
                return n.get("params", {})

    def serve(self, timeout=None):
        """Answers navd's requests until the connection closes (or ``timeout`` passes)."""
        deadline = self._deadline(timeout) if timeout is not None else None
        try:
            while True:
                m = self._read(deadline)
                self._incoming(m)
                self.notifications.clear()
        except (ConnectionClosed, OSError):
            return

    def _refresh_stale(self):
        for name, mirror in list(self.mirrors.items()):
            if mirror.stale:
                mirror.stale = False
                fresh = _mirror(self.call("tree", session=name))
                mirror.__dict__.update(fresh.__dict__)

    # -- typed calls

    def ping(self):
        return self.call("ping")

    def navigate(self, to=None, route=None, by=None, with_=None, from_=None, session=None, existing=None, merge=None, **extra):
        """``navigate``; returns ``{navigation, node, version, visible, …}``. ``existing`` ("top" or
        "pop", with ``merge=True`` to merge the params) keeps a screen of the target already in the
        stack; other params (``popUpTo``, ``hints``, ``key``, …) go as keywords."""
        return self.call("navigate", extra, to=to, route=route, by=by, with_=with_, from_=from_, session=session,
                         existing=existing, merge=True if merge else None)

    def dismiss(self, node=None, session=None, result=None, merge=None, **extra):
        """``dismiss``; with ``result`` the screen below hears it (``screenResult``), and with
        ``merge=True`` (a dict result) it is merged into that screen's params, so that it stays."""
        return self.call("dismiss", extra, node=node, session=session, result=result, merge=True if merge else None)

    def flow_complete(self, flow, result=None, error=None, cancelled=False, session=None):
        return self.call("flowComplete", flow=flow, result=result,
                         error={"message": error} if isinstance(error, str) else error,
                         cancelled=True if cancelled else None, session=session)

    def reset(self, to=None, session=None, force=None, **extra):
        """``reset``: the graph's root, fresh, or (``to``, a list of coordinator names or
        ``{to, with, by}``) that stack; ``force=True`` removes guarded screens without their leave guards."""
        return self.call("reset", extra, to=to, session=session, force=True if force else None)

    def open(self, url, session=None, by=None, pop_up_to=None, inclusive=None, **extra):
        """``open`` a deep link; ``by="push"`` pushes only its last screen from the visible one, after
        ``pop_up_to`` (a coordinator or node; ``inclusive=True``: it too) is popped to."""
        pop = None if pop_up_to is None else {"to": pop_up_to, "inclusive": bool(inclusive)}
        return self.call("open", extra, url=url, session=session, by=by, popUpTo=pop)

    def update(self, node, with_=None, push=None, session=None, **extra):
        """``update``: merges ``with_`` into a live screen's params (None removes a field); with
        ``push=True`` the params it had are kept (``paramsHistory``) and a dismiss restores them."""
        return self.call("update", extra, node=node, with_=with_ or {}, push=True if push else None, session=session)

    def cancel(self, navigation, session=None):
        return self.call("cancel", navigation=navigation, session=session).get("cancelled", False)

    def tree(self, session=None):
        """A snapshot of the session's tree (not kept current: see :meth:`subscribe`)."""
        return _mirror(self.call("tree", session=session))

    def subscribe(self, session=None, notifications=None):
        """Subscribes; returns a mirror of the tree kept current from ``stackChanged`` as this client
        reads (a call, :meth:`next_notification`, :meth:`wait_for`). A gap is mended with a new snapshot.
        ``notifications``: "full" or "compact" (default: what hello chose); either way the client
        hands notifications on in the full form."""
        snapshot = self.call("subscribe", session=session, notifications=notifications)
        mirror = _mirror(snapshot)
        if isinstance(snapshot.get("ref"), int):
            self.refs[snapshot["ref"]] = mirror.session
        self.mirrors[mirror.session] = mirror
        return mirror

    def set_facts(self, facts=None, session=None, **kw):
        """Merges facts into the session (``None`` removes one); returns all of them."""
        merged = dict(facts or {})
        merged.update(kw)
        return self.call("context.set", facts=merged, session=session)["facts"]

    def facts(self, names=None, session=None):
        return self.call("context.get", facts=names, session=session)["facts"]

    def provide(self, answers):
        """Answers ``precondition.evaluate``/``recover`` for the preconditions named in ``answers``
        (name -> callable(request params) -> True, False, a reason string (failed), or a dict such as
        ``{"passed": False, "redirect": {...}}``) while this client waits for navd."""
        table = dict(answers)
        self._handlers["precondition.evaluate"] = lambda p: _answer(table, p, "passed")
        self._handlers["precondition.recover"] = lambda p: _answer(table, p, "recovered")
        names = list(answers)
        result = self.call("provide", preconditions=names)
        # navd keeps a precondition's qualified name ("prov" in module app is "app.prov") and asks by it.
        for given, kept in zip(names, result.get("preconditions", names)):
            table.setdefault(kept, answers[given])
        if result.get("notAsked"):
            # Kept all the same (a graph reload may ask for them), but most likely misspelt.
            warnings.warn("the graph navd serves asks no client for %s (no provider precondition or "
                          "recover: {provider} has that name)" % ", ".join(result["notAsked"]), stacklevel=2)
        return result


def _answer(answers, params, key):
    # A recovery names the provider it asks (``provider``) when that is not the precondition itself.
    name = params.get("provider") or params.get("precondition")
    fn = answers.get(name)
    if fn is None:
        return {key: False, "reason": "this provider does not know %s" % name}
    a = fn(params)
    if isinstance(a, dict):
        return a
    if isinstance(a, str):
        return {key: False, "reason": a}
    return {key: True} if a else {key: False, "reason": "the provider said no"}


class Provider:
    """Answers provider preconditions on a connection and thread of its own until stopped:

        with Provider(sock, {"cart.paymentAuthorized": lambda request: True}):
            ...  # navigations guarded by cart.paymentAuthorized pass
    """

    def __init__(self, socket_path, answers, token=None):
        self.client = Client(socket_path, timeout=None, token=token)
        self.client.provide(answers)
        self._thread = threading.Thread(target=self.client.serve, daemon=True)
        self._thread.start()

    def stop(self):
        self.client.close()
        self._thread.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
