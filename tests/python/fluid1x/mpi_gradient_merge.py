"""Gradient merge under mpirun (run by test_gradient_merge.py):

  mpi_gradient_merge.py optimizer OUT  GradientMergeOptimizer(k_steps=4)
      with fluid.MPIExecutor (timeline in OUT/trace.json); the reference:
      one process at k = 1 on the global batch.
  mpi_gradient_merge.py sharded OUT    DistributedStrategy.gradient_merge
      (k_steps 4) with sharding stage 2; the same reference.
  mpi_gradient_merge.py bf16 OUT       the strategy form with amp bf16;
      the reference in bf16 too.
  mpi_gradient_merge.py strategy OUT   the strategy form (np 1).
  mpi_gradient_merge.py fleet OUT      fleet's collective mode with the
      strategy's gradient_merge, run by a plain fluid.Executor.
  mpi_gradient_merge.py resume OUT     6 micro-steps, the persistables
      taken after sync_running_stats and loaded into a fresh executor,
      6 more: against the run that continued.
Each rank takes its contiguous share of the global batch, cut into 4
micro-batches."""
import os
import sys

import numpy as np

import fluid
from fluid1x_common import rank_and_world, global_batch, save_results
from test_gradient_merge import STEPS, build, inner

K = 4


def micro_batches(step, rank, world):
    """This rank's share of global batch `step`, as K micro-batches."""
    x, y = global_batch(step)
    per = len(x) // world
    x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
    m = per // K
    return [(x[i * m:(i + 1) * m], y[i * m:(i + 1) * m]) for i in range(K)]


def strategy_of(mode):
    s = fluid.DistributedStrategy()
    if mode != "optimizer":
        s.gradient_merge = True
        s.gradient_merge_configs = {"k_steps": K}
    if mode == "sharded":
        s.sharding = True
        s.sharding_configs = {"stage": 2}
    if mode == "bf16":
        s.amp = True
        s.amp_configs = {"dtype": "bf16"}
    return s


LOSS = []


def merged_program(optimizer):
    """The mlp and its training ops (GradientMergeOptimizer when
    `optimizer`), with the same generated names on every call."""
    with fluid.unique_name.guard():
        main, startup, loss = build()
        with fluid.program_guard(main, startup):
            opt = inner("momentum")
            if optimizer:
                opt = fluid.optimizer.GradientMergeOptimizer(opt, k_steps=K)
            opt.minimize(loss)
    LOSS[:] = [loss.name]
    return main, startup


def train_ranks(mode, scope, out, steps=STEPS):
    """`steps` merged steps on this rank with MPIExecutor; returns the
    executor, the main program and the losses."""
    rank, world = rank_and_world()
    main, startup = merged_program(mode in ("optimizer", "resume"))
    loss = main.global_block().var(LOSS[0])
    timeline = os.path.join(out, "trace.json") if mode == "optimizer" \
        else None
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy_of(mode),
                            timeline=timeline)
    exe.run(startup, scope=scope)
    losses = []
    for step in range(steps):
        for x, y in micro_batches(step, rank, world):
            (value,) = exe.run(main, feed={"x": x, "y": y},
                               fetch_list=[loss], scope=scope)
            losses.append(float(np.asarray(value).ravel()[0]))
    return exe, main, losses


def one_process(bf16):
    """The reference: k = 1 on the global batch in one process."""
    main, startup, loss = build()
    with fluid.program_guard(main, startup):
        opt = inner("momentum")
        if bf16:
            opt = fluid.contrib.mixed_precision.decorate(opt, use_bf16=True)
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


def params_of(main, scope):
    return {p.name: np.array(scope.find_var(p.name).get_tensor())
            for p in main.all_parameters()}


def resume(out):
    """Run A: 1.5 merged steps, sync, snapshot, 1.5 more. Run B: a fresh
    executor from the snapshot, the same 1.5 more."""
    rank, world = rank_and_world()
    batches = [b for s in range(3) for b in micro_batches(s, rank, world)]
    scope_a = fluid.Scope()
    exe_a, main, _ = train_ranks("resume", scope_a, out, steps=0)
    for x, y in batches[:6]:
        exe_a.run(main, feed={"x": x, "y": y}, scope=scope_a)
    exe_a.sync_running_stats()
    names = [v.name for v in main.list_vars() if v.persistable]
    snapshot = {n: np.array(scope_a.find_var(n).get_tensor()) for n in names
                if scope_a.find_var(n) is not None}
    assert int(snapshot["@GRAD_MERGE_STEP@"].ravel()[0]) == 2, snapshot
    for x, y in batches[6:]:
        exe_a.run(main, feed={"x": x, "y": y}, scope=scope_a)
    scope_b = fluid.Scope()
    exe_b = fluid.MPIExecutor(fluid.CPUPlace())
    main_b, startup_b = merged_program(True)
    exe_b.run(startup_b, scope=scope_b)
    for n, v in snapshot.items():
        scope_b.find_var(n).get_tensor().set(v, fluid.CPUPlace())
    for x, y in batches[6:]:
        exe_b.run(main_b, feed={"x": x, "y": y}, scope=scope_b)
    a, b = params_of(main, scope_a), params_of(main_b, scope_b)
    save_results(out, "resume", [0.0], a, [0.0], b)


def fleet_run(out):
    """fleet.distributed_optimizer with gradient_merge in the strategy,
    fleet.main_program run by fluid.Executor."""
    from fluid.incubate.fleet.base import role_maker
    from fluid.incubate.fleet.collective import fleet, DistributedStrategy
    rank, world = rank_and_world()
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    strategy = DistributedStrategy()
    strategy.gradient_merge = True
    strategy.gradient_merge_configs = {"k_steps": K}
    with fluid.unique_name.guard():
        main, startup, loss = build()
        with fluid.program_guard(main, startup):
            fleet.distributed_optimizer(inner("momentum"),
                                        strategy=strategy).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    losses = []
    for step in range(STEPS):
        for x, y in micro_batches(step, rank, world):
            (value,) = exe.run(fleet.main_program, feed={"x": x, "y": y},
                               fetch_list=[loss.name])
            losses.append(float(np.asarray(value).ravel()[0]))
    names = [p.name for p in main.all_parameters()]
    scope = fluid.global_scope()
    params = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    ref_losses, ref_values = one_process(False)
    save_results(out, "fleet", losses, params, ref_losses,
                 dict(zip(names, ref_values)))


def run(mode, out):
    rank, _ = rank_and_world()
    if mode == "fleet":
        fleet_run(out)
        print(f"rank {rank}: ok: {mode}")
        return
    if mode == "resume":
        resume(out)
        print(f"rank {rank}: ok: {mode}")
        return
    scope = fluid.Scope()
    exe, main, losses = train_ranks(mode, scope, out)
    names = [p.name for p in main.all_parameters()]
    params = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    ref_losses, ref_values = one_process(mode == "bf16")
    exe.close()
    save_results(out, mode, losses, params, ref_losses,
                 dict(zip(names, ref_values)))
    print(f"rank {rank}: ok: {mode}")


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2])
