"""Type hints of the C++ extension ftcomm._torch (see docs/python.md)."""

import datetime

import torch.distributed as dist

from ftcomm._core import Communicator, Reconfiguration


class ProcessGroupFtcomm(dist.ProcessGroup):
    def __init__(self, communicator: Communicator, timeout: datetime.timedelta) -> None: ...
    communicator: Communicator
    epoch: int
    timeout: datetime.timedelta
    reconfiguration: Reconfiguration  # set on the groups that reconfigure() returns


class FtcommStore(dist.Store):
    def __init__(self, communicator: Communicator, prefix: str,
                 timeout: datetime.timedelta) -> None: ...
    prefix: str
