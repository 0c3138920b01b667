"""navd's errors as exceptions: one class per ``data.kind`` of PROTOCOL.md's error table, and the
client's own failures (connecting, a closed connection, a timeout, what is not navd's JSON-RPC)."""

__all__ = ["NavdError", "ConnectError", "ConnectionClosed", "Timeout", "ProtocolError", "OutOfStep", "error_class"]


# ----------------------------------------------------------------------------- errors

class NavdError(Exception):
    """An error navd answered: JSON-RPC ``code``, ``data.kind``, ``message`` and ``data``."""

    code = None
    kind = "error"

    def __init__(self, message, code=None, kind=None, data=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if kind is not None:
            self.kind = kind
        self.data = data if data is not None else {}

    def __str__(self):
        return "%s (%s): %s" % (self.kind, self.code, self.message)


class ConnectError(NavdError):
    """navd could not be reached (no socket, nobody listening, or a socket of another user)."""
    code, kind = 0, "connect"


class ConnectionClosed(NavdError):
    """navd closed the connection before answering."""
    code, kind = 0, "connection"


class Timeout(NavdError):
    """No answer (or no awaited notification) within the timeout."""
    code, kind = 0, "timeout"


class ProtocolError(NavdError):
    """What navd sent is not JSON-RPC this client can read: not JSON, not UTF-8, nested too deep,
    a line longer than ``max_line``, or not an object of the expected shape."""
    code, kind = 0, "protocol"


class OutOfStep(NavdError):
    """A ``stackChanged`` does not follow the mirror's version (a gap): take a new snapshot."""
    code, kind = 0, "outOfStep"


# One class per data.kind of Protocol/PROTOCOL.md's error table.
_KINDS = {
    "parseError": -32700, "invalidUTF8": -32700, "emptyMessage": -32700,
    "invalidRequest": -32600, "emptyBatch": -32600, "messageTooLarge": -32600, "tooDeep": -32600,
    "badHeader": -32600, "tooManyConnections": -32600, "messageTimeout": -32600, "disconnected": -32600,
    "methodNotFound": -32601, "invalidParams": -32602, "internalError": -32603,
    "unknownTarget": -32001, "invalidSetup": -32002, "notAllowed": -32003, "accessDenied": -32004,
    "preconditionFailed": -32005, "preconditionTimeout": -32006, "conflict": -32007,
    "cancelled": -32008, "unknownNode": -32009, "flowNotActive": -32010, "noMatchingLink": -32011,
    "limitExceeded": -32012, "unavailable": -32013, "moved": -32014,
}
_CLASSES = {}
for _kind, _code in _KINDS.items():
    _name = _kind[0].upper() + _kind[1:]
    _CLASSES[_kind] = type(_name, (NavdError,), {"code": _code, "kind": _kind, "__module__": "navd_client"})
    globals()[_name] = _CLASSES[_kind]
    __all__.append(_name)


def error_class(kind):
    """The exception class for a ``data.kind`` (``NavdError`` for a kind this client does not know)."""
    return _CLASSES.get(kind, NavdError)


def _error_from(obj):
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    kind = data.get("kind", "error")
    return error_class(kind)(obj.get("message", ""), code=obj.get("code"), kind=kind, data=data)
