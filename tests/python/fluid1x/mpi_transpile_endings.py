#!/usr/bin/env python3
"""The endings of Fluid's book tests, each as its scripts wrote it:

    mpirun -np N python3 mpi_transpile_endings.py OUT

builds the model into the default programs, transpiles it with
DistributeTranspiler in one of the forms below, runs the startup program
and then get_trainer_program() with fluid.MPIExecutor for a few steps,
each rank feeding its share of the global batch. Every form goes to
OUT/<form>.rank<r>.npz together with the reference: the same model
trained by fluid.MPIExecutor from the plain program (collective mode), so
that test_transpile_endings.py can check that the loss falls, that the
ranks agree bitwise, and that each form equals the reference bitwise.

Forms:
  seed_0.11        transpile(optimize_ops, params_grads, pservers=...,
                   trainers=N) (collective by default)
  1x_pserver       Fluid 1.x's default config (pserver mode):
                   transpile(trainer_id, pservers="127.0.0.1:6174",
                   trainers=2), the default startup program
  1x_pserver_own_startup
                   transpile(trainer_id, program=main, pservers=two
                   servers, trainers=N), t.get_startup_program()
  nccl2            config.mode "nccl2", trainers the endpoint list,
                   t.get_startup_program()
  collective       config.mode "collective", trainers the endpoint list,
                   the default startup program
"""
import argparse

import fluid
from fluid1x_common import (mpi_reference, parameters, rank_and_world,
                            rank_batch, save_results)

SEED = 3
STEPS = 25
FORMS = ("seed_0.11", "1x_pserver", "1x_pserver_own_startup", "nccl2",
         "collective", "seed_0.11+Executor", "1x_pserver+Executor")


def build_net():
    """The model, into the default programs: x [16] -> fc 24 relu -> fc 4,
    softmax cross entropy, Momentum (whose velocities a pserver-mode
    trainer's startup leaves to the servers)."""
    fluid.default_main_program().random_seed = SEED
    x = fluid.layers.data(name="x", shape=[16], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="int64")
    hidden = fluid.layers.fc(input=x, size=24, act="relu")
    logits = fluid.layers.fc(input=hidden, size=4)
    loss = fluid.layers.mean(
        fluid.layers.softmax_with_cross_entropy(logits=logits, label=y))
    optimize_ops, params_grads = fluid.optimizer.Momentum(
        learning_rate=0.1, momentum=0.9).minimize(loss)
    return x, y, loss, optimize_ops, params_grads


def build_reference():
    """The plain program pair, for mpi_reference."""
    fluid.reset_default_programs()
    with fluid.unique_name.guard():
        x, y, loss, _, _ = build_net()
    return (fluid.default_main_program(), fluid.default_startup_program(),
            loss, [x, y])


def endpoints(world):
    return ",".join(f"127.0.0.1:{6170 + i}" for i in range(world))


def transpile(form, rank, world, optimize_ops, params_grads):
    """Transpiles the default programs as `form` writes it; returns the
    transpiler and the startup program the form runs."""
    if form == "seed_0.11":
        t = fluid.DistributeTranspiler()
        t.transpile(optimize_ops, params_grads, pservers="127.0.0.1:6174",
                    trainers=world)
        return t, fluid.default_startup_program()
    if form == "1x_pserver":
        t = fluid.DistributeTranspiler()
        t.transpile(rank, pservers="127.0.0.1:6174", trainers=2)
        return t, fluid.default_startup_program()
    if form == "1x_pserver_own_startup":
        t = fluid.DistributeTranspiler()
        t.transpile(rank, program=fluid.default_main_program(),
                    pservers="127.0.0.1:6174,127.0.0.1:6175",
                    trainers=world)
        return t, t.get_startup_program()
    config = fluid.DistributeTranspilerConfig()
    config.mode = form
    t = fluid.DistributeTranspiler(config=config)
    eps = endpoints(world)
    t.transpile(rank, program=fluid.default_main_program(), pservers="",
                trainers=eps, current_endpoint=eps.split(",")[rank],
                startup_program=fluid.default_startup_program())
    return t, (t.get_startup_program() if form == "nccl2"
               else fluid.default_startup_program())


def train(form):
    """One form's run: (losses, parameters)."""
    rank, world = rank_and_world()
    fluid.reset_default_programs()
    with fluid.unique_name.guard():
        x, y, loss, optimize_ops, params_grads = build_net()
    # "+Executor": the script as 1.x wrote it, with a plain fluid.Executor.
    base, _, executor = form.partition("+")
    t, startup = transpile(base, rank, world, optimize_ops, params_grads)
    prog = t.get_trainer_program()
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = (fluid.Executor if executor else fluid.MPIExecutor)(
            fluid.CPUPlace())
        exe.run(startup)
        feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace())
        losses = []
        for step in range(STEPS):
            (value,) = exe.run(prog,
                               feed=feeder.feed(rank_batch(step, rank,
                                                           world)),
                               fetch_list=[loss])
            losses.append(float(value.ravel()[0]))
    return losses, parameters(fluid.default_main_program(), scope)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    args = parser.parse_args()
    ref_losses, ref_params = mpi_reference(build_reference, None, STEPS)
    for form in FORMS:
        losses, params = train(form)
        save_results(args.out, form, losses, params, ref_losses, ref_params)


if __name__ == "__main__":
    main()
