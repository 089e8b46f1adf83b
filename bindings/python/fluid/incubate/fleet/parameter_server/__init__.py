"""Fleet's parameter-server mode, which this product does not have: it
trains data-parallel over MPI ranks, averaging gradients by allreduce, with
no parameter server. Importing this package (or its distribute_transpiler
and pslib modules) raises ImportError saying what to use instead."""

raise ImportError(
    "fluid.incubate.fleet.parameter_server: there are no parameter servers "
    "here; gradients are averaged by allreduce over MPI ranks. Use Fleet's "
    "collective mode: `from fluid.incubate.fleet.collective import fleet, "
    "DistributedStrategy` with role_maker.PaddleCloudRoleMaker("
    "is_collective=True), and launch with `mpirun -np N python3 train.py`")
