"""A blocking client for navd, the navigation daemon (JSON-RPC 2.0 over a Unix socket).

    from navd_client import Client
    with Client() as c:
        c.set_facts(loggedIn=True)
        c.navigate("shop.Product", with_={"id": "p1"})
        print(c.tree().top["coordinator"])

Errors navd answers are raised as :class:`NavdError` subclasses named after ``data.kind``
(``NotAllowed``, ``InvalidSetup``, ``PreconditionFailed``, …), each carrying ``code``,
``kind``, ``message`` and ``data``. Every other failure is a ``NavdError`` too: ``ConnectError``,
``ConnectionClosed``, ``Timeout`` (connecting, sending and receiving all honour the client's
timeout) and ``ProtocolError`` (what came is not navd's JSON-RPC: not JSON, not UTF-8, nested too
deep, a line longer than ``max_line``). Nothing else escapes the client. Notifications that arrive while a call waits are queued
(:meth:`Client.next_notification`, :meth:`Client.wait_for`); mirrors made by
:meth:`Client.subscribe` are kept current from ``stackChanged`` as messages are read.
Requests navd sends (``precondition.evaluate``/``recover``) are answered by the handlers given
to :meth:`Client.provide`, while the client waits; :class:`Provider` answers them on a
connection and thread of its own.
"""

from .errors import *  # noqa: F401,F403 - NavdError and one class per data.kind
from .errors import __all__ as _errors
from .client import MAX_LINE, MAX_NOTIFICATIONS, Client, Provider, default_socket_path
from .mirror import TreeMirror, apply_changes, expand

__all__ = ["Client", "Provider", "TreeMirror", "apply_changes", "expand", "default_socket_path"] + _errors
