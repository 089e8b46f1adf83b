"""Role makers (Fluid 1.x's `fleet.base.role_maker`): which worker of how
many this process is. Every process is a worker here, a rank of the MPI
launcher (mpirun -np N); rank and world size come from the launcher's
environment, as the native side reads them (Open MPI's
OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, PMIX_RANK:
src/distributed/launcher.cc).

- MPIRoleMaker(): the launcher's rank and size.
- PaddleCloudRoleMaker(is_collective=True): the same, checked against
  what Fluid's own launcher sets (PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM,
  PADDLE_TRAINER_ENDPOINTS) when they are set: a disagreement is an error
  naming both.
- UserDefinedCollectiveRoleMaker(current_id, worker_endpoints): the rank
  and the workers given, checked against the launcher's.

The parameter-server role makers (UserDefinedRoleMaker,
MPISymetricRoleMaker, GeneralRoleMaker, PaddleCloudRoleMaker with
is_collective=False) raise, naming the collective ones."""
import os

from .... import _core


class Role:
    """A process's role: WORKER (every process here) or SERVER (none)."""
    WORKER = 1
    SERVER = 2


def _launcher():
    """(rank, world size) as the MPI launcher numbered this process."""
    return _core.launcher_rank(), _core.launcher_world_size()


def _env_int(name):
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r}: an integer is expected") from None


class RoleMakerBase:
    """What Fleet asks a role maker: this process's worker index, the number
    of workers, their endpoints; every process is a worker. Subclasses set
    _rank, _size and _endpoints in generate_role()."""

    def __init__(self):
        self._role_is_generated = False
        self._rank, self._size = 0, 1
        self._endpoints = None
        self._is_collective = True

    def generate_role(self):
        """Reads and checks the rank and world size (once)."""
        if not self._role_is_generated:
            self._generate()
            self._role_is_generated = True

    def _generate(self):
        self._rank, self._size = _launcher()

    def is_worker(self):
        """True: every process is a worker."""
        return True

    def is_server(self):
        """False: there are no parameter servers."""
        return False

    def is_first_worker(self):
        """True on worker 0."""
        return self.worker_index() == 0

    def worker_index(self):
        """This process's rank."""
        self.generate_role()
        return self._rank

    def role_id(self):
        """The worker index (every process is a worker)."""
        return self.worker_index()

    def worker_num(self):
        """The number of ranks."""
        self.generate_role()
        return self._size

    def server_num(self):
        """0: there are no parameter servers."""
        return 0

    def get_trainer_endpoints(self):
        """The workers' endpoints: those given (PADDLE_TRAINER_ENDPOINTS,
        UserDefinedCollectiveRoleMaker's worker_endpoints), else one name
        per rank, "mpi:<rank>" (ranks reach each other through MPI, not by
        address)."""
        self.generate_role()
        if self._endpoints:
            return list(self._endpoints)
        return [f"mpi:{i}" for i in range(self._size)]

    def get_pserver_endpoints(self):
        """[]: there are no parameter servers."""
        return []

    def barrier_worker(self):
        """Waits until every rank has called it."""
        from ..collective import _barrier
        _barrier()

    def to_string(self):
        """One line: the role maker, this rank and the world size."""
        return (f"{type(self).__name__}(worker {self.worker_index()} of "
                f"{self.worker_num()})")

    __repr__ = to_string


class MPIRoleMaker(RoleMakerBase):
    """The MPI launcher's rank and world size (mpirun -np N)."""


class PaddleCloudRoleMaker(RoleMakerBase):
    """PaddleCloudRoleMaker(is_collective=False), as in Fluid 1.x; only
    is_collective=True exists here. The rank and world size are the MPI
    launcher's; PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM and
    PADDLE_TRAINER_ENDPOINTS, when set, must agree with them."""

    def __init__(self, is_collective=False, **kwargs):
        super().__init__()
        if not is_collective:
            raise ValueError(
                "PaddleCloudRoleMaker(is_collective=False) makes parameter "
                "servers and trainers; this product has no parameter server "
                "(gradients are averaged by allreduce over MPI ranks): use "
                "PaddleCloudRoleMaker(is_collective=True) with "
                "fluid.incubate.fleet.collective")
        self._is_collective = True

    def _generate(self):
        rank, size = _launcher()
        endpoints = [e.strip() for e in os.environ.get(
            "PADDLE_TRAINER_ENDPOINTS", "").split(",") if e.strip()]
        checks = [("PADDLE_TRAINER_ID", _env_int("PADDLE_TRAINER_ID"), rank,
                   "rank"),
                  ("PADDLE_TRAINERS_NUM", _env_int("PADDLE_TRAINERS_NUM"),
                   size, "world size"),
                  ("PADDLE_TRAINER_ENDPOINTS",
                   len(endpoints) if endpoints else None, size,
                   "world size (endpoints counted)")]
        for name, value, want, what in checks:
            if value is not None and value != want:
                raise ValueError(
                    f"PaddleCloudRoleMaker: {name} says {value}, but the MPI "
                    f"launcher's {what} is {want} (this process is rank "
                    f"{rank} of {size}): the ranks here are the processes of "
                    f"`mpirun -np N python3 train.py`; unset {name} or make "
                    "it agree")
        self._rank, self._size = rank, size
        self._endpoints = endpoints or None


class UserDefinedCollectiveRoleMaker(RoleMakerBase):
    """UserDefinedCollectiveRoleMaker(current_id=0, worker_endpoints=None):
    this process is worker `current_id` of the workers `worker_endpoints`
    names ("ip:port" strings), which must be the MPI launcher's rank and
    world size (one endpoint without a launcher)."""

    def __init__(self, current_id=0, worker_endpoints=None):
        super().__init__()
        if not isinstance(worker_endpoints, (list, tuple)) or \
                not worker_endpoints or \
                not all(isinstance(e, str) for e in worker_endpoints):
            raise ValueError(
                "UserDefinedCollectiveRoleMaker(worker_endpoints=...) takes "
                "a non-empty list of 'ip:port' strings, one per worker, got "
                f"{worker_endpoints!r}")
        if isinstance(current_id, bool) or not isinstance(current_id, int) \
                or not 0 <= current_id < len(worker_endpoints):
            raise ValueError(
                f"UserDefinedCollectiveRoleMaker(current_id={current_id!r}): "
                f"must be in [0, {len(worker_endpoints)}) for "
                f"{len(worker_endpoints)} worker endpoint(s)")
        self._current_id = current_id
        self._given = list(worker_endpoints)

    def _generate(self):
        rank, size = _launcher()
        if len(self._given) != size or self._current_id != rank:
            raise ValueError(
                f"UserDefinedCollectiveRoleMaker: worker {self._current_id} "
                f"of {len(self._given)}, but the MPI launcher started this "
                f"process as rank {rank} of {size}: the workers here are "
                f"the processes of `mpirun -np {len(self._given)} python3 "
                "train.py`; pass current_id=<the rank> and one endpoint per "
                "rank")
        self._rank, self._size = rank, size
        self._endpoints = self._given


def _no_servers(name, *args, **kwargs):
    raise ValueError(
        f"{name} makes parameter servers, which this product does not have "
        "(gradients are averaged by allreduce over MPI ranks): use "
        "role_maker.PaddleCloudRoleMaker(is_collective=True), "
        "MPIRoleMaker() or UserDefinedCollectiveRoleMaker(current_id, "
        "worker_endpoints) with fluid.incubate.fleet.collective")


class UserDefinedRoleMaker(RoleMakerBase):
    """Fluid's parameter-server role maker: refused (see _no_servers)."""

    def __init__(self, current_id=0, role=Role.WORKER, worker_num=0,
                 server_endpoints=None):
        _no_servers("UserDefinedRoleMaker")


class MPISymetricRoleMaker(RoleMakerBase):
    """Fluid's parameter-server role maker over MPI (half the ranks
    servers): refused; MPIRoleMaker is the collective one."""

    def __init__(self):
        _no_servers("MPISymetricRoleMaker")


class GeneralRoleMaker(RoleMakerBase):
    """Fluid's parameter-server role maker over Gloo: refused."""

    def __init__(self, **kwargs):
        _no_servers("GeneralRoleMaker")
