"""What the Fluid 1.x-style training scripts of this directory share: the
data (a deterministic, learnable global batch per step, each rank taking
its contiguous share), the MPIExecutor reference run, and the results file
each rank writes for the tests to compare; plus the mpirun launcher the
tests use."""
import os
import shutil
import subprocess
import sys

import numpy as np

import fluid

HERE = os.path.dirname(os.path.abspath(__file__))
GLOBAL_BATCH = 16
FEATURES = 16
CLASSES = 4


def global_batch(step):
    """Step `step`'s global batch: x [16, 16] float32 and y [16, 1] int64,
    y the class a fixed linear map of x scores highest."""
    w = np.random.RandomState(99).randn(FEATURES, CLASSES)
    rng = np.random.RandomState(1000 + step)
    x = rng.randn(GLOBAL_BATCH, FEATURES).astype(np.float32)
    y = np.argmax(x @ w, axis=1).reshape(-1, 1).astype(np.int64)
    return x, y


def rank_batch(step, rank, world):
    """This rank's contiguous share of step `step`'s global batch, as
    (x, y) samples for a DataFeeder."""
    x, y = global_batch(step)
    per = GLOBAL_BATCH // world
    lo = rank * per
    return list(zip(x[lo:lo + per], y[lo:lo + per]))


def rank_and_world():
    """The MPI launcher's numbering of this process (0 of 1 without one)."""
    return fluid._core.launcher_rank(), fluid._core.launcher_world_size()


def parameters(program, scope):
    """{name: value} of the program's trainable parameters in scope."""
    return {p.name: np.array(scope.find_var(p.name).get_tensor())
            for p in program.all_parameters()}


# The scopes the runs used, kept to the end of the script (the executors
# hold theirs too, so the order they are freed in does not matter).
_SCOPES = []


def mpi_reference(build, strategy, steps, warm_start=None):
    """The same training with fluid.MPIExecutor and `strategy`: build() ->
    (main, startup, loss, feed vars); returns (losses, parameters)."""
    rank, world = rank_and_world()
    main, startup, loss, feed_vars = build()
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    exe.run(startup, scope=scope)
    if warm_start is not None:
        warm_start(scope)
    feeder = fluid.DataFeeder(feed_list=feed_vars, place=fluid.CPUPlace(),
                              program=main)
    losses = []
    for step in range(steps):
        (value,) = exe.run(main, feed=feeder.feed(rank_batch(step, rank,
                                                             world)),
                           fetch_list=[loss], scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
    return losses, parameters(main, scope)


def save_results(out, tag, losses, params, ref_losses=None, ref_params=None,
                 **extra):
    """Writes <out>/<tag>.rank<r>.npz: the losses and parameters of the run
    under test and of the reference, and `extra` arrays."""
    rank, _ = rank_and_world()
    arrays = {"losses": np.asarray(losses, dtype=np.float64)}
    arrays.update({"extra/" + k: np.asarray(v) for k, v in extra.items()})
    arrays.update({"param/" + k: v for k, v in params.items()})
    if ref_losses is not None:
        arrays["ref_losses"] = np.asarray(ref_losses, dtype=np.float64)
        arrays.update({"ref/" + k: v for k, v in ref_params.items()})
    np.savez(os.path.join(out, f"{tag}.rank{rank}.npz"), **arrays)


# ---- for the tests ----

def mpirun(script, np_, *args, timeout=240):
    """Runs `script` (of this directory) under mpirun with np_ ranks, one
    thread each; returns the CompletedProcess."""
    import pytest
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
           str(np_), "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS",
           sys.executable, os.path.join(HERE, script)] + [str(a) for a in args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def load_results(out, tag, world):
    """[per rank: dict of arrays] as save_results wrote them."""
    runs = []
    for r in range(world):
        with np.load(os.path.join(out, f"{tag}.rank{r}.npz")) as z:
            runs.append({k: z[k] for k in z.files})
    return runs


def assert_trained_alike(runs):
    """The loss falls on every rank; every rank ends with bitwise the same
    parameters, bitwise those of the MPIExecutor reference run (and the
    same losses)."""
    for r, run in enumerate(runs):
        losses = run["losses"]
        assert losses[-3:].mean() < 0.8 * losses[:3].mean(), \
            f"rank {r}: the loss did not fall: {losses}"
    names = sorted(k for k in runs[0] if k.startswith("param/"))
    assert names, "no parameters saved"
    for r, run in enumerate(runs[1:], 1):
        assert sorted(k for k in run if k.startswith("param/")) == names
        for k in names:
            assert run[k].tobytes() == runs[0][k].tobytes(), \
                f"{k} differs between rank 0 and rank {r}"
    for r, run in enumerate(runs):
        for k in names:
            ref = run["ref/" + k[len("param/"):]]
            assert run[k].tobytes() == ref.tobytes(), \
                (f"rank {r}: {k} differs from fluid.MPIExecutor's: max "
                 f"|diff| {np.abs(run[k] - ref).max()}")
        assert run["losses"].tobytes() == run["ref_losses"].tobytes(), \
            f"rank {r}: losses differ from MPIExecutor's"
