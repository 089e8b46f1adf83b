"""Recompute under mpirun (run by test_recompute.py):

  mpi_recompute.py OUT strategy   the mlp with dropout trained by
      fluid.MPIExecutor with DistributedStrategy.recompute (checkpoints:
      the hidden layers' outputs; its timeline in OUT/trace.json);
  mpi_recompute.py OUT fleet      the same through fleet (Fluid 1.x's
      forward_recompute and recompute_checkpoints), fleet.main_program run
      by a plain fluid.Executor.
Each rank saves the run's losses and parameters, and those of the same
training by fluid.MPIExecutor without recompute, to
OUT/recompute_<mode>.rank<r>.npz."""
import os
import sys

import numpy as np

import fluid
from fluid.incubate.fleet.base import role_maker
from fluid.incubate.fleet.collective import fleet, DistributedStrategy
from fluid1x_common import rank_and_world, rank_batch, save_results
from test_recompute import STEPS, build


def feed(step):
    rank, world = rank_and_world()
    samples = rank_batch(step, rank, world)
    return {"x": np.stack([a for a, _ in samples]),
            "y": np.stack([b for _, b in samples])}


def replays(program):
    return sum(1 for op in program.global_block().ops
               if any(n.endswith("@RECOMPUTE") for n in op.output_arg_names))


def train(main, startup, loss, exe, run_main):
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = []
    for step in range(STEPS):
        (value,) = exe.run(run_main, feed=feed(step), fetch_list=[loss],
                           scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
    params = {p.name: np.array(scope.find_var(p.name).get_tensor())
              for p in main.all_parameters()}
    return losses, params


def with_mpi_executor(recompute, timeline=None):
    """(losses, parameters, replay op count) with fluid.MPIExecutor."""
    with fluid.unique_name.guard():
        main, startup, loss, hidden = build()
        with fluid.program_guard(main, startup):
            fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    s = fluid.DistributedStrategy()
    if recompute:
        s.recompute = True
        s.recompute_configs = {"checkpoints": [h.name for h in hidden]}
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=s, timeline=timeline)
    losses, params = train(main, startup, loss, exe, main)
    return losses, params, replays(exe.transpiled_program(main))


def with_fleet():
    """(losses, parameters, replay op count) through fleet."""
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    with fluid.unique_name.guard():
        main, startup, loss, hidden = build()
        with fluid.program_guard(main, startup):
            s = DistributedStrategy()
            s.forward_recompute = True
            s.recompute_checkpoints = hidden
            fleet.distributed_optimizer(
                fluid.optimizer.SGD(learning_rate=0.1), strategy=s).minimize(
                    loss)
    exe = fluid.Executor(fluid.CPUPlace())
    losses, params = train(main, startup, loss, exe, fleet.main_program)
    return losses, params, replays(main)


def main():
    out, mode = sys.argv[1], sys.argv[2]
    ref_losses, ref_params, _ = with_mpi_executor(False)
    if mode == "strategy":
        losses, params, count = with_mpi_executor(
            True, os.path.join(out, "trace.json"))
    else:
        losses, params, count = with_fleet()
    save_results(out, "recompute_" + mode, losses, params, ref_losses,
                 ref_params, replays=count)


if __name__ == "__main__":
    main()
