"""batch_norm and dropout under `mpirun -np N` through fluid.MPIExecutor
(driven by test_norm_layers.py, which compares what the ranks write, one
line per result, to DIR/rank<R>.txt; the script's argument is DIR):

1. MPIExecutor(sync_batch_norm=True), each rank feeding its slice, gives the
   outputs, parameters and running statistics of one Executor on the whole
   batch (1e-9, float64). Writes "PASS sync".
2. Without it, ranks fed different data hold different running statistics
   until sync_running_stats(), and the same ones after. Writes
   "stats R before HASH" and "stats R after HASH".
3. A dropout program's masks: writes "mask R HASH".
"""
import hashlib
import os
import sys

import numpy as np

import fluid

L = fluid.layers
_SCOPES = []


def scope():
    s = fluid.Scope()
    _SCOPES.append(s)
    return s


def bn_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3, 2, 2], dtype="float64")
        r = L.data("r", [3, 2, 2], dtype="float64")
        y = L.batch_norm(x, momentum=0.75)
        fluid.optimizer.SGD(0.5).minimize(L.mean(L.elementwise_mul(y, r)))
    return main, startup, y


_OUT = []


def report(line):
    _OUT.append(line)


def digest(a):
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


STATE = ["batch_norm_0.w_0", "batch_norm_0.b_0", "batch_norm_0.w_1",
         "batch_norm_0.w_2"]


def check_sync(rank, world):
    main, startup, y = bn_program()
    per = 5
    single_scope, dist_scope = scope(), scope()
    single = fluid.Executor(fluid.CPUPlace())
    single.run(startup, scope=single_scope)
    dist = fluid.MPIExecutor(sync_batch_norm=True)
    dist.run(startup, scope=dist_scope)
    rs = np.random.RandomState(3)
    for _ in range(3):
        x = rs.uniform(-2, 3, (per * world, 3, 2, 2))
        r = rs.uniform(-1, 1, (per * world, 3, 2, 2))
        (ys,) = single.run(main, feed={"x": x, "r": r}, fetch_list=[y],
                           scope=single_scope)
        part = slice(rank * per, (rank + 1) * per)
        (yd,) = dist.run(main, feed={"x": x[part], "r": r[part]},
                         fetch_list=[y], scope=dist_scope)
        np.testing.assert_allclose(yd, ys[part], rtol=1e-9, atol=1e-9)
    for name in STATE:
        np.testing.assert_allclose(dist_scope.get(name),
                                   single_scope.get(name), rtol=1e-9,
                                   atol=1e-9, err_msg=name)
    report("PASS sync")


def check_stat_sync(rank):
    main, startup, _ = bn_program()
    s = scope()
    exe = fluid.MPIExecutor()
    exe.run(startup, scope=s)
    rs = np.random.RandomState(10 + rank)
    for _ in range(3):
        exe.run(main, feed={"x": rs.uniform(rank, 2 + 3 * rank, (4, 3, 2, 2)),
                            "r": rs.uniform(-1, 1, (4, 3, 2, 2))}, scope=s)
    stats = [s.get("batch_norm_0.w_1"), s.get("batch_norm_0.w_2")]
    report(f"stats {rank} before {digest(np.concatenate(stats))}")
    exe.sync_running_stats()
    stats = [s.get("batch_norm_0.w_1"), s.get("batch_norm_0.w_2")]
    report(f"stats {rank} after {digest(np.concatenate(stats))}")


def check_dropout(rank):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [64], dtype="float64")
        d = L.dropout(L.fc(x, 64), 0.5, seed=5)
        fluid.optimizer.SGD(0.1).minimize(L.mean(d))
    s = scope()
    exe = fluid.MPIExecutor()
    exe.run(startup, scope=s)
    (out,) = exe.run(main, feed={"x": np.ones((4, 64))}, fetch_list=[d],
                     scope=s)
    report(f"mask {rank} {digest(out != 0)}")


def main():
    probe = fluid.MPIExecutor()
    rank, world = probe.rank, probe.world_size
    check_sync(rank, world)
    check_stat_sync(rank)
    check_dropout(rank)
    with open(os.path.join(sys.argv[1], f"rank{rank}.txt"), "w") as f:
        f.write("\n".join(_OUT) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
