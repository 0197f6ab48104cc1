"""Reconfiguration in torch's terms: a new default process group over the reconfigured
communicator, and the hand-over of a model's and optimizer's state to replacements."""

from __future__ import annotations

import datetime
from typing import Optional

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

import ftcomm
from ftcomm._torch import ProcessGroupFtcomm
from ftcomm.torch import _setup

# What torch's init_process_group names the default group's store prefix and its first
# barrier's key (torch 1.13); a replacement's init waits on that key in the new epoch's store.
_DEFAULT_PG_PREFIX = "default_pg"
_INIT_BARRIER_KEY = "store_based_barrier_key:1"


def is_failure(error: BaseException) -> bool:
    """True when `error` says the group's epoch is over (a member failed, or the epoch was
    revoked): the survivors reconfigure. DDP's errors come out of autograd as RuntimeErrors
    whose message starts with the status code's name."""
    if isinstance(error, (ftcomm.PeerFailed, ftcomm.Revoked)):
        return True
    return isinstance(error, RuntimeError) and str(error).startswith(("PeerFailed:", "Revoked:"))


def reconfigure(
    pg: Optional[ProcessGroupFtcomm] = None, timeout: Optional[float] = None
) -> ProcessGroupFtcomm:
    """Reconfigures the communicator under the default group in place (collective over the
    survivors), admits waiting replacements, and returns the process group of the new epoch,
    which becomes torch's default group: ``dist.get_rank()``, ``get_world_size()`` and later
    collectives use it. ``new_pg.reconfiguration`` says who left (``left``: old ranks) and who
    came (``admitted``: new ranks).

    Stale afterwards: the old group object (its operations raise Revoked), every group made by
    ``new_group`` before (make them again), and anything holding them, such as a
    DistributedDataParallel wrapper (wrap the module again)."""
    default = c10d._get_default_group()
    pg = default if pg is None else pg
    if not isinstance(pg, ProcessGroupFtcomm):
        raise ftcomm.InvalidArgument(f"not an ftcomm process group: {pg!r}")
    if pg is not default:
        raise ftcomm.InvalidArgument(
            "only the default group reconfigures; groups made by new_group are made again "
            "afterwards"
        )
    comm = pg.communicator
    info = comm.reconfigure(timeout=timeout)
    new_pg = ProcessGroupFtcomm(comm, pg.timeout)
    new_pg.reconfiguration = info
    _install_default(new_pg, pg.timeout)
    if info.admitted:
        # The survivors' half of the replacements' init_process_group barrier.
        c10d._pg_map[new_pg][1].add(_INIT_BARRIER_KEY, 1)
    return new_pg


def _install_default(pg: ProcessGroupFtcomm, timeout: datetime.timedelta) -> None:
    """Makes `pg` torch's default group, as a fresh init_process_group in the new epoch would
    (so that survivors and replacements number their later groups alike)."""
    store = dist.PrefixStore(_DEFAULT_PG_PREFIX, _setup.store_for(pg.communicator, timeout))
    c10d._pg_map.clear()
    c10d._pg_names.clear()
    c10d._pg_group_ranks.clear()
    c10d._pg_map[pg] = (_setup.BACKEND, store)
    c10d._pg_names[pg] = "0"
    c10d._pg_group_ranks[pg] = {i: i for i in range(pg.size())}
    c10d._group_count = 1
    c10d._update_default_pg(pg)


def share_state(
    module: Optional[torch.nn.Module] = None,
    optimizer: Optional[torch.optim.Optimizer] = None,
    src: int = 0,
) -> None:
    """Hands `module`'s parameters and buffers, and `optimizer`'s state, from rank `src` (after a
    reconfigure, rank 0 is always a survivor) to every member of the default group. Collective:
    survivors and replacements all call it, with modules of the same architecture."""
    if module is not None:
        with torch.no_grad():
            for tensor in module.state_dict().values():
                dist.broadcast(tensor, src)
    if optimizer is not None:
        box = [optimizer.state_dict() if dist.get_rank() == src else None]
        dist.broadcast_object_list(box, src)
        optimizer.load_state_dict(box[0])
