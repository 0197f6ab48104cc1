"""ftcomm as a ``torch.distributed`` backend.

Importing this module registers the ``"ftcomm"`` backend and the ``ftcomm://`` init method::

    import torch.distributed as dist
    import ftcomm.torch

    dist.init_process_group("ftcomm", init_method="ftcomm://")

CPU tensors only (Debian's torch is CPU-only). After a failure, operations raise
``ftcomm.PeerFailed`` or ``ftcomm.Revoked`` (RuntimeErrors); :func:`reconfigure` gives the
process group of the next epoch, and :func:`share_state` hands the model to replacements.
"""

import torch.distributed as dist

from ftcomm._torch import FtcommStore, ProcessGroupFtcomm
from ftcomm.torch._recovery import is_failure, reconfigure, share_state
from ftcomm.torch._setup import BACKEND, create_process_group, ftcomm_handler, world

if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, create_process_group, extended_api=True)
    dist.register_rendezvous_handler("ftcomm", ftcomm_handler)

__all__ = [
    "BACKEND",
    "FtcommStore",
    "ProcessGroupFtcomm",
    "is_failure",
    "reconfigure",
    "share_state",
    "world",
]
