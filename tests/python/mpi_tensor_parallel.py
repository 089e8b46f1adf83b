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
   splits), and the losses still equal the plain executor's.
Prints "all 4 checks passed on N rank(s)" on rank 0."""
import os
import sys

import numpy as np

import fluid
from mpi_model_parallel import report, saved_and_loaded

STEPS = 12
BATCH = 16
CLASSES = 4


def build():
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
        fluid.optimizer.Adam(learning_rate=1e-2).minimize(loss)
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
    return report(exe, results)


if __name__ == "__main__":
    sys.exit(main_())
