"""fluid.install_check.run_check(): trains a tiny program for one step to
show the package works here: on the CPU, on a CUDA device when one is
visible, and data-parallel when the process was started by mpirun with
several ranks (every rank must call it then)."""
import numpy as np

from . import _core, executor, framework, layers, optimizer, unique_name

__all__ = ["run_check"]


def _one_step(exe_class, place):
    """Builds and trains a 2-layer net for one step; returns the loss."""
    main, startup = framework.Program(), framework.Program()
    main.random_seed = startup.random_seed = 1
    with framework.program_guard(main, startup), unique_name.guard():
        x = layers.data("x", [4])
        y = layers.fc(layers.fc(x, 8, act="relu"), 1)
        loss = layers.mean(layers.square(y))
        optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe = exe_class(place)
    scope = executor.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((2, 4), dtype="float32")}
    value, = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    return float(np.asarray(value).ravel()[0])


def run_check():
    """Trains one step where this installation can: prints what ran and
    returns True; raises with the cause when something does not work."""
    ranks = _core.launcher_world_size()
    places = [executor.CPUPlace()]
    if _core.built_with_cuda() and _core.cuda_device_count() > 0:
        places.append(executor.CUDAPlace())
    exe_class = executor.MPIExecutor if ranks > 1 else executor.Executor
    for place in places:
        loss = _one_step(exe_class, place)
        if not np.isfinite(loss):
            raise RuntimeError(f"run_check: the loss on {place!r} is {loss}")
    where = ", ".join(repr(p) for p in places)
    how = f"data-parallel on {ranks} ranks" if ranks > 1 else "in one process"
    if ranks == 1 or _core.launcher_rank() == 0:
        print(f"fluid works: one training step on {where}, {how}.")
    return True
