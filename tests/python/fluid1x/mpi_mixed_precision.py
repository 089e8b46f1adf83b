"""Mixed precision under mpirun (run by test_mixed_precision.py):

  mpi_mixed_precision.py bf16 OUT         20 bf16 steps with MPIExecutor and
      DistributedStrategy.amp; saves the parameters (and, on every rank, a
      single-process run of the global batch for N x B vs 1 x NB).
  mpi_mixed_precision.py fp16_poison OUT  fp16 with dynamic loss scaling;
      step 3's batch overflows on rank 1 only: every rank must skip it."""
import sys

import numpy as np

import fluid
from fluid1x_common import (rank_and_world, rank_batch, global_batch,
                            save_results)
from test_mixed_precision import build_mlp

STEPS = 20


def run(mode, out):
    rank, world = rank_and_world()
    strategy = fluid.DistributedStrategy()
    strategy.amp = True
    strategy.amp_configs = (
        {"dtype": "bf16"} if mode == "bf16" else
        {"dtype": "fp16", "init_loss_scaling": 64.0,
         "decr_every_n_nan_or_inf": 1, "decr_ratio": 0.5})
    main, startup, loss = build_mlp()
    with fluid.program_guard(main, startup):
        fluid.optimizer.Momentum(learning_rate=0.1,
                                 momentum=0.9).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    exe.run(startup, scope=scope)
    names = [p.name for p in main.all_parameters()]

    def params():
        return {n: np.array(scope.find_var(n).get_tensor()) for n in names}

    losses, extra, before = [], {}, None
    for step in range(STEPS if mode == "bf16" else 5):
        samples = rank_batch(step, rank, world)
        x = np.stack([s[0] for s in samples])
        y = np.stack([s[1] for s in samples])
        if mode == "fp16_poison" and step == 3:
            before = params()
            if rank == 1:
                x = x.copy()
                x[0, 0] = 1e30
        (value,) = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss],
                           scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
        if mode == "fp16_poison" and step == 3:
            after = params()
            extra["unchanged"] = [int(all(
                before[n].tobytes() == after[n].tobytes() for n in names))]
            extra["scale"] = np.array(
                scope.find_var("loss_scaling").get_tensor())
    ref_losses, ref_params = None, None
    if mode == "bf16":
        # The second program's parameters have other generated names: they
        # pair with this one's by position.
        ref_losses, ref_values = single_process_bf16(strategy)
        ref_params = dict(zip(names, ref_values))
    save_results(out, mode, losses, params(), ref_losses, ref_params, **extra)
    print(f"rank {rank}: ok: {mode}")


def single_process_bf16(strategy):
    """The same STEPS steps on the global batch in one process: the losses
    and the parameters' values, in the program's order."""
    main, startup, loss = build_mlp()
    with fluid.program_guard(main, startup):
        opt = fluid.contrib.mixed_precision.decorate(
            fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9),
            use_bf16=True)
        opt.minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = []
    for step in range(STEPS):
        x, y = global_batch(step)
        (value,) = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss],
                           scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
    return losses, [np.array(scope.find_var(p.name).get_tensor())
                    for p in main.all_parameters()]


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2])
