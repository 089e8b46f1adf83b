"""Fleet, Fluid 1.5-1.8's front end for distributed training, in its
collective mode: `from fluid.incubate.fleet.collective import fleet,
DistributedStrategy` and `from fluid.incubate.fleet.base import
role_maker`. The ranks are those of the MPI launcher (mpirun -np N); there
is no parameter-server mode (`fluid.incubate.fleet.parameter_server` says
so)."""
from . import base  # noqa: F401

__all__ = ["base"]
