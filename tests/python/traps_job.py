"""A small data-parallel job for tests/python/test_traps.py, run under
mpirun. Usage: traps_job.py MODE [ARG ...]

  fail KIND WHEN RANK   rank RANK fails (KIND: raise | exit3 | exit0 | kill)
                        at WHEN (startup: after importing fluid, before any
                        MPI use; mid: at step 3)
  fewer RANK            rank RANK runs one step fewer than the others
  consistency RANK      only rank RANK calls check_consistency() at the end
  eval                  train, rank 0 alone evaluates, train on, compare
  nan RANK              rank RANK feeds a NaN at step 3; every rank prints
                        the FloatingPointError it gets
  plain                 a plain Executor trains (warns on rank 0), then runs
                        a transpiled program (error names MPIExecutor)
"""
import os
import signal
import sys

import numpy as np

MODE = sys.argv[1] if __name__ == "__main__" else None
ARGS = sys.argv[2:]
RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))


def fail(kind):
    sys.stdout.flush()
    if kind == "raise":
        raise RuntimeError("failing on purpose")
    if kind == "exit3":
        sys.exit(3)
    if kind == "exit0":
        sys.exit(0)
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)


import fluid  # noqa: E402  (the job policy starts here)

if MODE == "fail" and ARGS[1] == "startup" and RANK == int(ARGS[2]):
    fail(ARGS[0])

L = fluid.layers


def build(lr=0.1):
    """A small classifier: (main, startup, test program, loss, accuracy)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 7
    # Names from fc_0 for every program built here (the tests read them).
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [8])
        y = L.data("y", [1], dtype="int64")
        logits = L.fc(L.fc(x, 16, act="relu"), 4)
        loss = L.mean(L.softmax_with_cross_entropy(logits, y))
        acc = L.accuracy(logits, y)
        test = main.clone(for_test=True)
        fluid.optimizer.Momentum(lr, 0.9).minimize(loss)
    return main, startup, test, loss, acc


def batch(step, rank, n=4):
    """A seeded batch of n samples for (step, rank)."""
    rng = np.random.RandomState(1000 * step + rank)
    return {"x": rng.rand(n, 8).astype("float32"),
            "y": rng.randint(0, 4, (n, 1)).astype("int64")}


def train(steps, scope=None):
    main, startup, test, loss, acc = build()
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for step in range(steps):
        if MODE == "fail" and ARGS[1] == "mid" and RANK == int(ARGS[2]) \
                and step == 3:
            fail(ARGS[0])
        exe.run(main, feed=batch(step, exe.rank), fetch_list=[loss],
                scope=scope)
    return exe, main, test, loss, acc


if MODE == "fail":
    train(40)
elif MODE == "fewer":
    train(9 if RANK == int(ARGS[0]) else 10)
elif MODE == "consistency":
    exe, *_ = train(5)
    if exe.rank == int(ARGS[0]):
        exe.check_consistency()
elif MODE == "eval":
    exe, main, test, loss, acc = train(10)
    scope = fluid.global_scope()
    w = scope.get("fc_0.w_0").copy()
    if exe.rank == 0:  # alone: evaluation must issue no collective
        for _ in range(3):
            exe.run(test, feed=batch(99, 0, 64), fetch_list=[acc])
    assert np.array_equal(scope.get("fc_0.w_0"), w), "evaluation changed w"
    for step in range(10, 15):
        (l,) = exe.run(main, feed=batch(step, exe.rank), fetch_list=[loss])
    exe.check_consistency()
    print(f"EVAL-OK rank {exe.rank} |w|={np.abs(scope.get('fc_0.w_0')).sum():.6f}"
          f" loss={float(l[0]):.6f}")
elif MODE == "nan":
    main, startup, test, loss, acc = build()
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    exe.run(startup)
    try:
        for step in range(6):
            feed = batch(step, exe.rank)
            if step == 2 and exe.rank == int(ARGS[0]):
                feed["x"][1, 3] = np.nan
            exe.run(main, feed=feed, fetch_list=[loss])
        print(f"NO-ERROR rank {exe.rank}")
    except FloatingPointError as e:
        print(f"RAISED rank {exe.rank}: {e}")
elif MODE == "plain":
    main, startup, test, loss, acc = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    for step in range(3):
        exe.run(main, feed=batch(step, RANK), fetch_list=[loss])
    # The 1.x ending with the same plain Executor: the transpiled program
    # runs data-parallel (an internal MPIExecutor), from rank 0's values.
    t = fluid.DistributeTranspiler()
    t.transpile(trainers=int(os.environ["OMPI_COMM_WORLD_SIZE"]),
                program=main)
    for step in range(2):
        exe.run(t.get_trainer_program(), feed=batch(step, RANK))
    w = np.asarray(fluid.global_scope().get("fc_0.w_0"))
    print(f"PLAIN-TRANSPILED rank {RANK} w={w.tobytes().hex()[:32]}")
if MODE is not None:
    print(f"DONE rank {RANK}")
