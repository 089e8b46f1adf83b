#!/usr/bin/env python3
"""The data loaders under MPI: each rank reads its part of the batches.

    mpirun -np 2 /usr/bin/python3 tests/python/fluid1x/mpi_data_loader.py

The generators yield 11 batches of 4 samples (44 samples); each rank takes
the batches at its position in each run of N, 5 each at N = 2, and the
11th (the remainder) is dropped. Checks (every rank runs all; rank 0
prints one line per check):
  (a) an iterable DataLoader over a sample generator, trained with
      fluid.MPIExecutor for two epochs, gives parameters identical on every
      rank (check_consistency) and equal (relative 1e-5) to one process
      training on the union of the ranks' batches (batches of 4 N from an
      unsharded loader, shard=False);
  (b) a non-iterable DataLoader over a batch generator, double buffer off,
      start/reset over two epochs: 5 steps per epoch on every rank, then
      EOFException; the parameters of (a), bitwise;
  (c) the py_reader form (read_file, decorate_paddle_reader over
      fluid.io.batch): the parameters of (a), bitwise;
  (d) drop_last=False: the remainder batch goes to rank 0; a training
      program raises ValueError on every rank at the step after the 5th;
      an evaluation program (clone for_test) runs it: 6 batches on rank 0,
      5 on rank 1, iterable and not;
  (e) a reader built on fluid.io.shard is not sharded again: each rank gets
      the 5 batches of its samples (rank r: samples r, r + N, ...);
  (f) shard=False: every rank reads all 11 batches.
Exits non-zero if any check fails.
"""
import os
import sys
import traceback

os.environ.setdefault("FLUID_INDEPENDENT_RANKS", "1")  # (a)'s reference

import numpy as np  # noqa: E402

import fluid  # noqa: E402

L = fluid.layers
S, B, DIM, CLASSES = 44, 4, 6, 3
BATCHES = S // B
rng = np.random.RandomState(11)
X = rng.rand(S, DIM).astype("float32")
Y = rng.randint(0, CLASSES, (S, 1)).astype("int64")
SCOPES = []   # scopes outlive the executors bound to them


def samples():
    for i in range(S):
        yield X[i], int(Y[i, 0])


def batches():
    for b in range(BATCHES):
        yield X[b * B:(b + 1) * B], Y[b * B:(b + 1) * B]


def net(data=None):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 4
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x, y = data() if data else (L.data("x", [DIM]),
                                    L.data("y", [1], dtype="int64"))
        h = L.fc(x, 8, act="tanh")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, CLASSES), y))
        test_program = main.clone(for_test=True)
        fluid.optimizer.Momentum(0.2, 0.9).minimize(loss)
    return main, startup, test_program, x, y, loss


def new_scope():
    SCOPES.append(fluid.Scope())
    return SCOPES[-1]


def params(main, scope):
    return {p.name: scope.get(p.name) for p in main.all_parameters()}


def run_pass(exe, program, loss, scope, loader):
    loader.start()
    steps = 0
    try:
        while True:
            exe.run(program, fetch_list=[loss], scope=scope)
            steps += 1
    except fluid.core.EOFException:
        loader.reset()
    return steps


def check_a(exe, world):
    main, startup, _, x, y, loss = net()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=3)
    loader.set_sample_generator(samples, batch_size=B)
    scope = new_scope()
    exe.run(startup, scope=scope)
    steps = 0
    for _ in range(2):
        for data in loader():
            exe.run(main, feed=data, fetch_list=[loss], scope=scope)
            steps += 1
    assert steps == 2 * (BATCHES // world), steps
    exe.check_consistency()
    got = params(main, scope)

    # One process on the union: batches of B * world, unsharded.
    main, startup, _, x, y, loss = net()
    whole = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=3)
    whole.set_sample_generator(samples, batch_size=B * world, shard=False)
    scope, one = new_scope(), fluid.Executor(fluid.CPUPlace())
    one.run(startup, scope=scope)
    for _ in range(2):
        for data in whole():
            one.run(main, feed=data, fetch_list=[loss], scope=scope)
    want = params(main, scope)
    for name in want:
        err = np.linalg.norm(got[name] - want[name]) / max(
            np.linalg.norm(want[name]), 1e-12)
        assert err <= 1e-5, f"{name}: relative difference {err:.3g}"
    return got, f"{steps} steps; the union in one process agrees"


def check_b(exe, world, want):
    main, startup, _, x, y, loss = net()
    loader = fluid.io.DataLoader.from_generator(
        feed_list=[x, y], capacity=2, use_double_buffer=False,
        iterable=False)
    loader.set_batch_generator(batches)
    scope = new_scope()
    exe.run(startup, scope=scope)
    steps = [run_pass(exe, main, loss, scope, loader) for _ in range(2)]
    assert steps == [BATCHES // world] * 2, steps
    exe.check_consistency()
    same(params(main, scope), want)
    return f"{steps} steps, then EOFException"


def check_c(exe, world, want):
    def data():
        reader = L.py_reader(capacity=8, shapes=[(-1, DIM), (-1, 1)],
                             dtypes=["float32", "int64"])
        data.reader = reader
        return L.read_file(reader)

    main, startup, _, x, y, loss = net(data)
    data.reader.decorate_paddle_reader(fluid.io.batch(samples, B))
    scope = new_scope()
    exe.run(startup, scope=scope)
    steps = [run_pass(exe, main, loss, scope, data.reader)
             for _ in range(2)]
    assert steps == [BATCHES // world] * 2, steps
    same(params(main, scope), want)
    return f"{steps} steps"


def check_d(exe, world):
    main, startup, test_program, x, y, loss = net()
    loader = fluid.io.DataLoader.from_generator(
        feed_list=[x, y], capacity=2, iterable=False, drop_last=False)
    loader.set_batch_generator(batches)
    scope = new_scope()
    exe.run(startup, scope=scope)
    loader.start()
    for _ in range(BATCHES // world):
        exe.run(main, fetch_list=[loss], scope=scope)
    try:
        exe.run(main, fetch_list=[loss], scope=scope)
        raise AssertionError("a training step ran on the remainder")
    except ValueError as e:
        assert "drop_last=False" in str(e), e
    loader.reset()
    mine = BATCHES // world + (exe.rank < BATCHES % world)
    assert run_pass(exe, test_program, loss, scope, loader) == mine
    it = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2,
                                            drop_last=False)
    it.set_batch_generator(batches)
    n = sum(1 for data in it() if exe.run(test_program, feed=data,
                                          fetch_list=[loss], scope=scope))
    assert n == mine, n
    return f"rank 0 evaluates {BATCHES // world + 1} batches"


def check_e(world, rank):
    x = L.data("x", [DIM])
    loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2)
    loader.set_sample_list_generator(fluid.io.batch(
        fluid.io.shard(lambda: ((X[i],) for i in range(S))), B,
        drop_last=True))
    got = [np.array(d[0]["x"]) for d in loader()]
    assert len(got) == (S // world) // B, len(got)
    np.testing.assert_array_equal(got[0], X[rank:rank + world * B:world])
    return f"{len(got)} batches of this rank's samples"


def check_f():
    x = L.data("x", [DIM])
    loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2)
    loader.set_batch_generator(lambda: ((b[0],) for b in batches()),
                               shard=False)
    got = [np.array(d[0]["x"]) for d in loader()]
    assert len(got) == BATCHES
    np.testing.assert_array_equal(got[-1], X[(BATCHES - 1) * B:])
    return f"{len(got)} batches"


def same(got, want):
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def main():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    results = []

    def check(label, fn, *args):
        try:
            out = fn(*args)
        except Exception:
            print(f"FAIL rank {rank} ({label}):\n{traceback.format_exc()}",
                  flush=True)
            raise
        results.append(label)
        note = out[1] if isinstance(out, tuple) else out
        if rank == 0:
            print(f"PASS ({label}) {note}", flush=True)
        return out[0] if isinstance(out, tuple) else out

    want = check("a", check_a, exe, world)
    check("b", check_b, exe, world, want)
    check("c", check_c, exe, world, want)
    check("d", check_d, exe, world)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        check("e", check_e, world, rank)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        check("f", check_f)
    if rank == 0:
        print(f"all {len(results)} checks passed on {world} rank(s)",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
