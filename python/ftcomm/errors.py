"""Exception classes for ftcomm's status codes.

Each failed call raises the class named after its status code. They share the base
:class:`Error` (a ``RuntimeError``); the ones a caller handles by kind also derive from the
matching builtin (``ValueError``, ``TimeoutError``, ...). ``PeerFailed`` and ``Revoked`` mean
the communicator's epoch is over: reconfigure, then go on.
"""


class Error(RuntimeError):
    """A failed ftcomm call; ``code`` names its status code."""

    code = "Internal"


class InvalidArgument(Error, ValueError):
    code = "InvalidArgument"


class NotFound(Error, LookupError):
    code = "NotFound"


class AlreadyExists(Error):
    code = "AlreadyExists"


class PermissionDenied(Error, PermissionError):
    code = "PermissionDenied"


class FailedPrecondition(Error):
    code = "FailedPrecondition"


class Timeout(Error, TimeoutError):
    code = "Timeout"


class Unavailable(Error, ConnectionError):
    code = "Unavailable"


class PeerFailed(Error):
    code = "PeerFailed"


class Revoked(Error):
    code = "Revoked"


class Mismatch(Error):
    code = "Mismatch"


class ResourceExhausted(Error, MemoryError):
    code = "ResourceExhausted"


class Cancelled(Error):
    code = "Cancelled"


class Internal(Error):
    code = "Internal"


BY_CODE = {cls.code: cls for cls in Error.__subclasses__()}

__all__ = ["Error"] + sorted(BY_CODE)
