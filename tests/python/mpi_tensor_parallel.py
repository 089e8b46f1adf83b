"""Run under `mpirun -np 2` by test_mpi_tensor_parallel.py.

fluid.MPIExecutor with DistributedStrategy.tensor_parallel_degree = 2 on a
Fluid MLP (its first fc pair splits across the two ranks, and its logits
layer by classes, with a vocabulary-parallel loss):

1. losses: each step's loss equals a plain fluid.Executor's on the same
   seed and batches, to 1e-5 relative (the batches come through a
   fluid.io.DataLoader, which gives both ranks of the tensor-parallel
   group the same batches);
2. parameters: inside `with exe.gathered_parameters():` every parameter is
   whole and equals the plain executor's to 1e-5 relative; outside it an
   evaluation program is refused naming gathered_parameters;
3. checkpoints: fluid.io.save_persistables writes the parameters whole; a
   plain fluid.Executor loads them and evaluates the same loss;
4. keep_whole: with tensor_parallel_configs = {"keep_whole": ["fc_2.w_0"]}
   the logits layer stays whole on each rank (the first pair still
   splits), and the losses still equal the plain executor's;
5. defer_startup: exe.run(startup) makes nothing (an evaluation before
   the first training run is refused naming defer_startup), the first
   training run makes each state and keeps its slice before the next:
   the losses equal the plain executor's, and a wider MLP's tensor memory
   peaks below its whole state's size from the startup through the first
   steps (without the field, above), with the same losses; in a pipeline
   of two stages each rank makes its own stage's state only (a lower
   peak, the same losses); values loaded into the scope after the
   deferred startup are kept; the same through Fleet (a plain Executor
   running the startup and fleet.main_program).
Prints "all 5 checks passed on N rank(s)" on rank 0."""
import os
import sys

import numpy as np

import fluid
from mpi_model_parallel import report, saved_and_loaded

STEPS = 12
BATCH = 16
CLASSES = 4


def build(wrap=lambda optimizer: optimizer):
    """The MLP; `wrap` may wrap its optimizer (Fleet's)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data("x", [32])
        y = fluid.layers.data("y", [1], dtype="int64")
        h = fluid.layers.fc(x, 64, act="relu")
        h = fluid.layers.fc(h, 48, act="relu")
        logits = fluid.layers.fc(h, CLASSES)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, y))
        test = main.clone(for_test=True)
        wrap(fluid.optimizer.Adam(learning_rate=1e-2)).minimize(loss)
    return main, startup, test, loss


def batches():
    rng = np.random.RandomState(11)
    for _ in range(STEPS):
        x = rng.rand(BATCH, 32).astype("float32")
        y = rng.randint(0, CLASSES, (BATCH, 1)).astype("int64")
        yield x, y


def plain_run():
    # The reference: one process's training, on every rank alike.
    os.environ["FLUID_INDEPENDENT_RANKS"] = "1"
    main, startup, test, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = []
    for x, y in batches():
        out, = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss],
                       scope=scope)
        losses.append(float(np.asarray(out).ravel()[0]))
    params = {p.name: np.array(scope.find_var(p.name).get_tensor())
              for p in main.global_block().all_parameters()}
    return losses, params


def close(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.abs(a - b).max() <= 1e-5 * max(np.abs(b).max(), 1e-30)


def split_run(strategy):
    """(executor, programs, scope, losses) of a tensor-parallel run."""
    main, startup, test, loss = build()
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    loader = fluid.io.DataLoader.from_generator(
        feed_list=[main.global_block().var("x"),
                   main.global_block().var("y")], capacity=4)
    loader.set_batch_generator(batches)
    losses = []
    for feed in loader():
        out, = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        losses.append(float(np.asarray(out).ravel()[0]))
    return exe, (main, startup, test, loss), scope, losses


def startup_peak(defer, width=512, layers=6, stages=1):
    """This rank's peak tensor bytes from the startup through the first
    two training steps of an MLP of `layers` fc layers of `width` (Adam:
    its two moments are as large as the weights) at tensor_parallel_degree
    2 (or, with `stages` 2, a pipeline of two stages), with and without
    defer_startup; the whole state's bytes; and the steps' losses."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        h = fluid.layers.data("x", [width])
        y = fluid.layers.data("y", [1], dtype="int64")
        for i in range(layers):
            with fluid.pipeline_stage(i * stages // layers):
                h = fluid.layers.fc(h, width, act="relu")
        with fluid.pipeline_stage(stages - 1):
            loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(
                fluid.layers.fc(h, CLASSES), y))
        fluid.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    strategy = fluid.DistributedStrategy()
    if stages > 1:
        strategy.pipeline_stages = stages
        strategy.pipeline_configs = {"micro_batches": 2}
    else:
        strategy.tensor_parallel_degree = 2
    strategy.defer_startup = defer
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    scope = fluid.Scope()
    fluid.memory.reset_max_memory_allocated()
    base = fluid.memory.memory_usage()["in_use"]
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    losses = []
    for _ in range(2):
        out, = exe.run(
            main, feed={"x": rng.rand(4, width).astype("float32"),
                        "y": rng.randint(0, CLASSES, (4, 1)).astype("int64")},
            fetch_list=[loss], scope=scope)
        losses.append(float(np.asarray(out).ravel()[0]))
    whole = 3 * 4 * layers * width * width  # weights and two moments
    return fluid.memory.max_memory_allocated() - base, whole, losses


def deferred_start(exe, startup, test, loss, scope):
    """Runs a deferred `startup` on `scope`, then `test` (and, on an
    MPIExecutor, enters gathered_parameters): (whether the startup made a
    parameter, whether each was refused naming defer_startup)."""
    exe.run(startup, scope=scope)
    made = scope.find_var("fc_0.w_0") is not None
    x, y = next(batches())
    refused = []
    try:
        exe.run(test, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
    except ValueError as e:
        refused.append("defer_startup" in str(e))
    if isinstance(exe, fluid.MPIExecutor):  # and so is a gather
        try:
            with exe.gathered_parameters():
                pass
        except ValueError as e:
            refused.append("defer_startup" in str(e))
    want = 2 if isinstance(exe, fluid.MPIExecutor) else 1
    return made, refused == [True] * want


def fleet_deferred(want_losses):
    """Fleet's way (fleet.distributed_optimizer, a plain Executor running
    the startup and fleet.main_program) with defer_startup: (ok, detail)."""
    from fluid.incubate.fleet.base import role_maker
    from fluid.incubate.fleet.collective import fleet, DistributedStrategy
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    strategy = DistributedStrategy()
    strategy.tensor_parallel_degree = 2
    strategy.defer_startup = True
    _, _, test, loss = build(
        lambda optimizer: fleet.distributed_optimizer(optimizer, strategy))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    made, refused = deferred_start(exe, fleet.startup_program, test, loss,
                                   scope)
    losses = []
    for bx, by in batches():
        out, = exe.run(fleet.main_program, feed={"x": bx, "y": by},
                       fetch_list=[loss], scope=scope)
        losses.append(float(np.asarray(out).ravel()[0]))
    ok = not made and refused and close(losses, want_losses)
    return ok, f"fleet: made {made}, refused {refused}, losses {losses}"


def deferred_checks(want_losses):
    """Check 5 (see the docstring): (ok, detail)."""
    strategy = fluid.DistributedStrategy()
    strategy.tensor_parallel_degree = 2
    strategy.defer_startup = True
    main, startup, test, loss = build()
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    made, refused = deferred_start(exe, startup, test, loss, fluid.Scope())
    x, y = next(batches())
    _, _, _, losses = split_run(strategy)
    # Loaded after the deferred startup: the first step starts from it.
    zero = np.zeros((48, CLASSES), "float32")
    main, startup, test, loss = build()
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    scope.set("fc_2.w_0", zero)
    exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
    with exe.gathered_parameters():
        kept = np.array(scope.find_var("fc_2.w_0").get_tensor())
    # A zero logits weight gets a gradient of zero but for Adam's first
    # step, which moves every weight by about the learning rate.
    kept_ok = kept.shape == zero.shape and np.abs(kept).max() < 0.02
    deferred, whole, tp_losses = startup_peak(True)
    eager, _, eager_losses = startup_peak(False)
    # A pipeline of two stages: each makes its own stage's state only.
    stage, _, pp_losses = startup_peak(True, stages=2)
    stage_eager, _, pp_eager_losses = startup_peak(False, stages=2)
    # Deferred, the whole state never exists on a rank (its slices, one
    # state whole and the steps: 12.1 MiB of 18 MiB); without, it does.
    fleet_ok, fleet_detail = fleet_deferred(want_losses)
    ok = (not made and refused and close(losses, want_losses) and kept_ok
          and deferred < whole < eager and stage < stage_eager
          and tp_losses == eager_losses and pp_losses == pp_eager_losses
          and fleet_ok)
    return ok, (f"{fleet_detail}; made {made}, refused {refused}, losses "
                f"{losses}, kept "
                f"{np.abs(kept).max()}, peak {deferred} deferred against "
                f"{eager} (whole state {whole}), losses {tp_losses} and "
                f"{eager_losses}; pipeline peak {stage} against "
                f"{stage_eager}, losses {pp_losses} and {pp_eager_losses}")


def shape_of(scope, name):
    return tuple(np.array(scope.find_var(name).get_tensor()).shape)


def main_():
    want_losses, want_params = plain_run()
    strategy = fluid.DistributedStrategy()
    strategy.tensor_parallel_degree = 2
    exe, (main, startup, test, loss), scope, losses = split_run(strategy)
    results = []
    ok = len(losses) == STEPS and close(losses, want_losses)
    results.append(("losses", ok, f"{losses} vs {want_losses}"))

    x, y = next(batches())
    try:
        exe.run(test, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
        refused = False
    except ValueError as e:
        refused = "gathered_parameters" in str(e)
    with exe.gathered_parameters():
        got = {n: np.array(scope.find_var(n).get_tensor())
               for n in want_params}
        eval_loss, = exe.run(test, feed={"x": x, "y": y}, fetch_list=[loss],
                             scope=scope)
    ok = refused and all(got[n].shape == want_params[n].shape and
                         close(got[n], want_params[n]) for n in want_params)
    results.append(("parameters", ok,
                    f"refused {refused}, shapes "
                    f"{[(n, got[n].shape) for n in got]}"))

    _, loaded_loss = saved_and_loaded(
        exe, (main, startup, test), scope, {"x": x, "y": y}, loss, [], "tp")
    ok = close(loaded_loss, eval_loss)
    results.append(("checkpoint", ok, f"{loaded_loss} vs {eval_loss}"))

    split = (shape_of(scope, "fc_0.w_0"), shape_of(scope, "fc_2.w_0"))
    strategy.tensor_parallel_configs = {"keep_whole": ["fc_2.w_0"]}
    _, _, kept_scope, kept_losses = split_run(strategy)
    kept = (shape_of(kept_scope, "fc_0.w_0"), shape_of(kept_scope, "fc_2.w_0"))
    ok = (split == ((32, 32), (48, CLASSES // 2)) and
          kept == ((32, 32), (48, CLASSES)) and
          close(kept_losses, want_losses))
    results.append(("keep_whole", ok,
                    f"slices {split}, kept {kept}, losses {kept_losses}"))
    results.append(("defer_startup",) + deferred_checks(want_losses))
    return report(exe, results)


if __name__ == "__main__":
    sys.exit(main_())
