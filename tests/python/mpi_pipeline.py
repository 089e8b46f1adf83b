"""Run under `mpirun -np 2` by test_mpi_pipeline.py.

A Fluid MLP built in two pipeline stages (`with fluid.pipeline_stage(k):`)
trained with momentum by fluid.MPIExecutor, one stage per rank:

1. strategy: DistributedStrategy.pipeline_stages = 2 with 4 micro-batches
   (Fleet's key accumulate_steps): each step's loss, fetched on both
   ranks, equals a plain fluid.Executor's on the same seed and global
   batches, to 1e-5 relative; both ranks read the same batches
   (fluid.reader's data-parallel rank 0 of 1); so do they with
   pipeline_configs forwards_ahead = 1 (stage 0 runs one more forward
   before its first backward);
2. optimizer: the same model through fluid.optimizer.PipelineOptimizer
   (num_microbatches=4, stages from the program, a plain strategy) gives
   the same losses;
3. parameters: outside `with exe.gathered_parameters():` an evaluation
   program is refused naming it; inside, every parameter of both stages
   is on both ranks and equals the plain executor's to 1e-5 relative;
4. checkpoint: fluid.io.save_persistables writes both stages' parameters;
   a plain fluid.Executor loads them and evaluates the same loss;
5. sparse: sentences of word ids (lod_level 1) through an embedding with
   is_sparse=True on stage 0, averaged per sentence and classified on
   stage 1, cut into micro-batches of whole sentences: the losses, the
   accuracy and its counts (fluid.layers.accuracy's correct and total,
   summed over the micro-batches) fetched on both ranks equal a plain
   fluid.Executor's, the counts exactly;
6. control flow: a While loop with a cond inside on stage 0 (two weights
   shared by the steps) and a DynamicRNN over sentences (a LoD feed) on
   stage 1 run once per micro-batch each, on their own copies of their
   blocks; the losses equal a plain fluid.Executor's.
Prints "all 7 checks passed on N rank(s)" on rank 0 (check 1 is two)."""
import contextlib
import os
import sys

import numpy as np

import fluid
from mpi_model_parallel import report, saved_and_loaded

STEPS = 10
BATCH = 16
MICRO = 4


def build(pipeline_optimizer=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data("x", [12])
        y = fluid.layers.data("y", [1], dtype="int64")
        with fluid.pipeline_stage(0):
            h = fluid.layers.fc(x, 24, act="relu")
            h = fluid.layers.fc(h, 20, act="tanh")
        with fluid.pipeline_stage(1):
            logits = fluid.layers.fc(h, 4)
            loss = fluid.layers.mean(
                fluid.layers.softmax_with_cross_entropy(logits, y))
        test = main.clone(for_test=True)
        opt = fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9)
        if pipeline_optimizer:
            opt = fluid.optimizer.PipelineOptimizer(opt,
                                                    num_microbatches=MICRO)
        opt.minimize(loss)
    return main, startup, test, loss


def batches():
    rng = np.random.RandomState(7)
    for _ in range(STEPS):
        yield {"x": rng.rand(BATCH, 12).astype("float32"),
               "y": rng.randint(0, 4, (BATCH, 1)).astype("int64")}


def build_sparse():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.layers.data("words", [1], dtype="int64", lod_level=1)
        y = fluid.layers.data("y", [1], dtype="int64")
        with fluid.pipeline_stage(0):
            emb = fluid.layers.embedding(words, size=[30, 8], is_sparse=True)
            h = fluid.layers.fc(emb, 16, act="relu")
        with fluid.pipeline_stage(1):
            h = fluid.layers.sequence_pool(h, "average")
            logits = fluid.layers.fc(h, 3)
            loss = fluid.layers.mean(
                fluid.layers.softmax_with_cross_entropy(logits, y))
            correct = fluid.layers.create_tensor("int64")
            total = fluid.layers.create_tensor("int64")
            acc = fluid.layers.accuracy(logits, y, correct=correct,
                                        total=total)
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, [loss, acc, correct, total]


def sparse_batches():
    rng = np.random.RandomState(11)
    for _ in range(STEPS):
        lengths = rng.randint(1, 5, BATCH)
        ids = rng.randint(0, 30, (int(lengths.sum()), 1)).astype("int64")
        yield {"words": fluid.create_lod_tensor(ids, [lengths.tolist()],
                                                fluid.CPUPlace()),
               "y": rng.randint(0, 3, (BATCH, 1)).astype("int64")}


def sparse_run(exe):
    main, startup, fetch = build_sparse()
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return [[float(np.asarray(v).ravel()[0])
             for v in exe.run(main, feed=feed, fetch_list=fetch, scope=scope)]
            for feed in sparse_batches()]


def build_loops():
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data("x", [12])
        words = L.data("words", [1], dtype="int64", lod_level=1)
        y = L.data("y", [1], dtype="int64")
        with fluid.pipeline_stage(0):
            h = L.fc(x, 10, act="tanh")
            i = L.fill_constant([1], "int64", 0)
            n = L.fill_constant([1], "int64", 3)
            one = L.fill_constant([1], "int64", 1)
            c = L.less_than(i, n)
            loop = L.While(c)
            with loop.block():
                first = L.less_than(i, one)
                out = L.cond(first,
                             lambda: L.fc(h, 10, act="tanh",
                                          param_attr=fluid.ParamAttr("w")),
                             lambda: L.fc(h, 10, act="tanh",
                                          param_attr=fluid.ParamAttr("u")))
                L.assign(out, h)
                L.increment(i)
                L.less_than(i, n, cond=c)
        with fluid.pipeline_stage(1):
            emb = L.embedding(words, size=[30, 6])
            rnn = L.DynamicRNN()
            with rnn.block():
                w = rnn.step_input(emb)
                mem = rnn.memory(shape=[8])
                state = L.fc([w, mem], 8, act="tanh")
                rnn.update_memory(mem, state)
                rnn.output(state)
            last = L.sequence_last_step(rnn())
            logits = L.fc(L.concat([h, last], axis=1), 3)
            loss = L.mean(L.softmax_with_cross_entropy(logits, y))
        fluid.optimizer.SGD(learning_rate=0.3).minimize(loss)
    return main, startup, loss


def loop_batches():
    rng = np.random.RandomState(13)
    for _ in range(STEPS):
        lengths = rng.randint(1, 5, BATCH)
        ids = rng.randint(0, 30, (int(lengths.sum()), 1)).astype("int64")
        yield {"x": rng.rand(BATCH, 12).astype("float32"),
               "words": fluid.create_lod_tensor(ids, [lengths.tolist()],
                                                fluid.CPUPlace()),
               "y": rng.randint(0, 3, (BATCH, 1)).astype("int64")}


def data_part(feed, rank, ranks):
    """Data-parallel rank `rank` of `ranks`'s rows (whole sentences) of a
    loop_batches() batch."""
    if ranks == 1:
        return feed
    rows = slice(rank * BATCH // ranks, (rank + 1) * BATCH // ranks)
    lengths = feed["words"].recursive_sequence_lengths()[0]
    offsets = np.cumsum([0] + lengths)
    ids = np.array(feed["words"])[offsets[rows.start]:offsets[rows.stop]]
    return {"x": feed["x"][rows], "y": feed["y"][rows],
            "words": fluid.create_lod_tensor(ids, [lengths[rows]],
                                             fluid.CPUPlace())}


def loops_run(exe, part=(0, 1)):
    """The losses (of data-parallel part `part`, (rank, ranks), of each
    batch), and each parameter's (start, end) values."""
    main, startup, loss = build_loops()
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    names = [p.name for p in main.global_block().all_parameters()]

    def params():
        gathered = getattr(exe, "gathered_parameters", None)
        with gathered() if gathered else contextlib.nullcontext():
            return {n: np.array(scope.find_var(n).get_tensor())
                    for n in names}
    start = params()
    losses = [first(exe.run(main, feed=data_part(feed, *part),
                            fetch_list=[loss], scope=scope))
              for feed in loop_batches()]
    end = params()
    return losses, {n: (start[n], end[n]) for n in names}


def plain_run():
    # The reference: one process's training, on every rank alike.
    os.environ["FLUID_INDEPENDENT_RANKS"] = "1"
    main, startup, _, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [first(exe.run(main, feed=feed, fetch_list=[loss],
                            scope=scope)) for feed in batches()]
    params = {p.name: np.array(scope.find_var(p.name).get_tensor())
              for p in main.global_block().all_parameters()}
    return losses, params


def first(fetched):
    return float(np.asarray(fetched[0]).ravel()[0])


def close(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and \
        np.abs(a - b).max() <= 1e-5 * max(np.abs(b).max(), 1e-30)


def train(exe, main, startup, loss):
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [first(exe.run(main, feed=feed, fetch_list=[loss],
                            scope=scope)) for feed in batches()]
    return scope, losses


def main_():
    want_losses, want_params = plain_run()
    results = []

    main, startup, test, loss = build()
    strategy = fluid.DistributedStrategy()
    strategy.pipeline_stages = 2
    strategy.pipeline_configs = {"accumulate_steps": MICRO}
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    data_ranks = fluid.reader._data_ranks()
    scope, losses = train(exe, main, startup, loss)
    ok = close(losses, want_losses) and data_ranks == (0, 1)
    results.append(("strategy", ok, f"data ranks {data_ranks}, losses "
                    f"{losses} vs {want_losses}"))

    # One forward ahead of 1F1B on stage 0: the same losses.
    ahead = fluid.DistributedStrategy()
    ahead.pipeline_stages = 2
    ahead.pipeline_configs = {"micro_batches": MICRO, "forwards_ahead": 1}
    a_main, a_startup, _, a_loss = build()
    _, a_losses = train(fluid.MPIExecutor(fluid.CPUPlace(), strategy=ahead),
                        a_main, a_startup, a_loss)
    results.append(("forwards ahead", close(a_losses, want_losses),
                    f"{a_losses} vs {want_losses}"))

    p_main, p_startup, _, p_loss = build(pipeline_optimizer=True)
    p_exe = fluid.MPIExecutor(fluid.CPUPlace())
    _, p_losses = train(p_exe, p_main, p_startup, p_loss)
    ok = close(p_losses, want_losses)
    results.append(("optimizer", ok, f"{p_losses} vs {want_losses}"))

    feed = next(batches())
    try:
        exe.run(test, feed=feed, fetch_list=[loss], scope=scope)
        refused = False
    except ValueError as e:
        refused = "gathered_parameters" in str(e)
    with exe.gathered_parameters():
        got = {n: np.array(scope.find_var(n).get_tensor())
               for n in want_params if scope.find_var(n) is not None}
        eval_loss = first(exe.run(test, feed=feed, fetch_list=[loss],
                                  scope=scope))
    ok = refused and set(got) == set(want_params) and all(
        close(got[n], want_params[n]) for n in want_params)
    results.append(("parameters", ok,
                    f"refused {refused}, on rank {exe.rank}: "
                    f"{sorted(got)} of {sorted(want_params)}"))

    loaded, loaded_loss = saved_and_loaded(
        exe, (main, startup, test), scope, feed, loss, want_params, "pp")
    ok = close(loaded_loss, eval_loss) and all(
        close(loaded[n], want_params[n]) for n in want_params)
    results.append(("checkpoint", ok, f"{loaded_loss} vs {eval_loss}"))

    want = sparse_run(fluid.Executor(fluid.CPUPlace()))
    got = sparse_run(fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy))
    ok = len(got) == len(want) and all(
        close(g[:2], w[:2]) and g[2:] == w[2:] for g, w in zip(got, want)) \
        and all(w[3] == BATCH for w in want) and sum(w[2] for w in want) > 0
    results.append(("sparse", ok, f"{got} vs {want}"))

    want, want_p = loops_run(fluid.Executor(fluid.CPUPlace()))
    got, got_p = loops_run(
        fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy))
    # Every parameter trained (the loop's weights, the cond's and the
    # DynamicRNN's among them) ends as one process's.
    moved = [n for n, (a, b) in want_p.items() if np.abs(a - b).max() > 1e-4]
    ok = close(got, want) and set(got_p) == set(want_p) and all(
        close(got_p[n][1], want_p[n][1]) for n in want_p) and \
        {"w", "u"} <= set(moved) and len(moved) == len(want_p)
    results.append(("control flow", ok, f"{got} vs {want}; moved {moved}"))
    return report(exe, results)


def loops_main():
    """--loops, under mpirun -np 4: check 6 at pp 2 x dp 2, with and
    without ZeRO 2 on each stage's data-parallel pair: each pair feeds its
    half of every batch, and every parameter ends as one process's
    trained on the whole batches."""
    os.environ["FLUID_INDEPENDENT_RANKS"] = "1"
    _, want = loops_run(fluid.Executor(fluid.CPUPlace()))
    results = []
    for stage in (0, 2):
        strategy = fluid.DistributedStrategy()
        strategy.pipeline_stages = 2
        strategy.pipeline_configs = {"micro_batches": 2}
        if stage:
            strategy.sharding = True
            strategy.sharding_configs = {"stage": stage}
        exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
        part = fluid.reader._data_ranks()
        _, got = loops_run(exe, part)
        diff = max(float(np.abs(got[n][1] - want[n][1]).max()
                         / np.abs(want[n][1]).max()) for n in want)
        ok = part[1] == 2 and set(got) == set(want) and diff <= 1e-5
        results.append((f"control flow, dp 2, ZeRO {stage}", ok,
                        f"data ranks {part}, largest difference {diff:.2e}"))
    return report(exe, results)


if __name__ == "__main__":
    sys.exit(loops_main() if "--loops" in sys.argv else main_())
