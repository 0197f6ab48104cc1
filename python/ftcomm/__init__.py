"""ftcomm: fault-tolerant collective communication.

A :class:`Communicator` joins a job through the ftcomm rendezvous service and runs every
collective and point-to-point operation on numpy arrays and CPU torch tensors. When a member
dies, operations raise :class:`PeerFailed` or :class:`Revoked`; the survivors call
:meth:`Communicator.reconfigure` and go on with the same object, and replacements join.

``ftcomm.torch`` registers the ``"ftcomm"`` backend of ``torch.distributed``.
"""

from ftcomm._core import (
    Communicator,
    JobStore,
    Reconfiguration,
    Window,
    Work,
    __version__,
)
from ftcomm.errors import (
    AlreadyExists,
    Cancelled,
    Error,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    Mismatch,
    NotFound,
    PeerFailed,
    PermissionDenied,
    ResourceExhausted,
    Revoked,
    Timeout,
    Unavailable,
)

__all__ = [
    "AlreadyExists",
    "Cancelled",
    "Communicator",
    "Error",
    "FailedPrecondition",
    "Internal",
    "InvalidArgument",
    "JobStore",
    "Mismatch",
    "NotFound",
    "PeerFailed",
    "PermissionDenied",
    "Reconfiguration",
    "ResourceExhausted",
    "Revoked",
    "Timeout",
    "Unavailable",
    "Window",
    "Work",
    "__version__",
]
