"""Mixed precision with a sharded optimizer under mpirun (run by
test_shard_mixed_precision.py):

  mpi_shard_mixed_precision.py train DTYPE STAGE OUT
      20 steps of the mlp in DTYPE (bf16 | fp16) with sharding stage STAGE
      (1 | 2 | 3) and, for reference, the same steps unsharded; the gradients
      travel in DTYPE in both. Saves both runs' losses and parameters.
  mpi_shard_mixed_precision.py poison STAGE OUT
      fp16 with dynamic loss scaling, sharded: step 3's batch overflows on
      the last rank only, whose shard of the gradients is not the first
      rank's; every rank must skip the step."""
import os
import sys

import numpy as np

import fluid
from fluid1x_common import rank_and_world, rank_batch, save_results
from test_mixed_precision import build_mlp

STEPS = 20


def strategy_for(dtype, stage):
    """amp in `dtype`, sharded at `stage` (0: not sharded)."""
    s = fluid.DistributedStrategy()
    s.amp = True
    s.amp_configs = (
        {"dtype": "bf16"} if dtype == "bf16" else
        {"dtype": "fp16", "init_loss_scaling": 1024.0,
         "decr_every_n_nan_or_inf": 1, "decr_ratio": 0.5})
    if stage:
        s.sharding = True
        # Stage 3 shards the two weights (512 and 128 elements).
        s.sharding_configs = {"stage": stage,
                              "param_persistence_threshold": 100}
    return s


def build():
    """The mlp with Momentum, its names the same at every call."""
    with fluid.unique_name.guard():
        main, startup, loss = build_mlp()
        with fluid.program_guard(main, startup):
            fluid.optimizer.Momentum(learning_rate=0.1,
                                     momentum=0.9).minimize(loss)
    return main, startup, loss


def gathered(exe, main, scope, out):
    """The parameters of a run that keeps them as shards (stage 3): saved
    collectively in the full form, read back in one process."""
    rank, _ = rank_and_world()
    ckpt = os.path.join(out, f"ckpt.rank{rank}")
    fluid.io.save_persistables(exe, ckpt, main, scope=scope)
    plain, plain_startup, _ = build()
    one = fluid.Scope()
    single = fluid.Executor(fluid.CPUPlace())
    single.run(plain_startup, scope=one)
    if rank == 0:
        fluid.io.load_persistables(single, ckpt, plain, scope=one)
    return {p.name: np.array(one.find_var(p.name).get_tensor())
            for p in plain.all_parameters()}


def train(strategy, steps, poison_step=None, out=None):
    """(losses, parameters, extra) of `steps` steps of the mlp."""
    rank, world = rank_and_world()
    main, startup, loss = build()
    scope = fluid.Scope()
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    exe.run(startup, scope=scope)
    names = [p.name for p in main.all_parameters()]

    def params():
        return {n: np.array(scope.find_var(n).get_tensor()) for n in names}

    losses, extra = [], {}
    for step in range(steps):
        samples = rank_batch(step, rank, world)
        x = np.stack([s[0] for s in samples])
        y = np.stack([s[1] for s in samples])
        if step == poison_step:
            before = params()
            if rank == world - 1:
                x = x.copy()
                x[-1, 0] = 1e30
        (value,) = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss],
                           scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
        if step == poison_step:
            after = params()
            extra["unchanged"] = [int(all(
                before[n].tobytes() == after[n].tobytes() for n in names))]
            extra["scale"] = np.array(
                scope.find_var("loss_scaling").get_tensor())
            extra["found"] = np.array(
                scope.find_var("found_infinite").get_tensor())
    if strategy.sharding and strategy.sharding_configs["stage"] == 3:
        return losses, gathered(exe, main, scope, out), extra
    return losses, params(), extra


def main(argv):
    mode, out = argv[1], argv[-1]
    rank, _ = rank_and_world()
    if mode == "train":
        dtype, stage = argv[2], int(argv[3])
        losses, params, _ = train(strategy_for(dtype, stage), STEPS, out=out)
        # The second program's parameters have other generated names: they
        # pair with this one's by position.
        ref_losses, ref_params, _ = train(strategy_for(dtype, 0), STEPS)
        ref_params = dict(zip(params, ref_params.values()))
        save_results(out, f"{dtype}_stage{stage}", losses, params,
                     ref_losses, ref_params)
    else:
        stage = int(argv[2])
        losses, params, extra = train(strategy_for("fp16", stage), 6,
                                      poison_step=3)
        save_results(out, f"poison_stage{stage}", losses, params, **extra)
    print(f"rank {rank}: ok: {mode}")


if __name__ == "__main__":
    main(sys.argv)
