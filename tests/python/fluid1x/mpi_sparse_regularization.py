#!/usr/bin/env python3
"""Weight decay and gradient clipping of a sparse gradient across ranks.

    mpirun -np 2 /usr/bin/python3 tests/python/fluid1x/mpi_sparse_regularization.py --out DIR

For each case (a regularizer / clip combination of
test_sparse_regularization.py, SGD or Adam, and sparse_dense_ratio 1.0,
where the ranks gather each other's rows, or 0.0, where the rows go
through a dense allreduce), fluid.MPIExecutor trains the sparse embedding
model for STEPS steps, each rank feeding its half of a global batch, and:
  - the transpiled program reduces the table's gradient
    (c_sparse_allreduce, then its c_wait) before merge_selected_rows, and
    merges before every clip and decay op that reads it: the clip and the
    decay act on the reduced rows;
  - the parameters equal those of one process (fluid.Executor) trained on
    the whole global batch (rtol 1e-10, float64: the ranks' gradients are
    summed in another order, nothing else differs);
  - check_consistency() passes, and each rank saves its parameters to
    DIR/rank<r>/<case>.npy, which the caller compares byte for byte.
Rank 0 prints "PASS <case>" or "FAIL <case>: why" per case; the exit
status is non-zero if any case failed.
"""
import argparse
import os
import sys
import traceback

import numpy as np

import fluid

# The one-process reference runs on every rank, on its own on purpose.
os.environ["FLUID_INDEPENDENT_RANKS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_sparse_regularization as t  # noqa: E402

COMBOS = ["l2_optimizer", "clip_by_value", "attr_clip_by_norm_and_l1",
          "global_norm_and_l2"]
GLOBAL_EXTRA = 9  # with TOUCHED: a global batch of 16, 8 per rank
RTOL = 1e-10


def global_batches():
    return [t.batch(s, extra=GLOBAL_EXTRA) for s in range(t.STEPS)]


def half(arrays, rank, world):
    per = len(arrays[0]) // world
    return [a[rank * per:(rank + 1) * per] for a in arrays]


def check_order(program):
    """'' when the table's gradient is reduced, then merged, then clipped
    and decayed; else what is out of place."""
    seen = []
    for op in program.ops():
        if "emb@GRAD" in sum(op["inputs"].values(), []) + \
                sum(op["outputs"].values(), []):
            seen.append(op["type"])
    first = {k: seen.index(k) for k in seen}
    for before, after in [("c_sparse_allreduce", "c_wait"),
                          ("c_wait", "merge_selected_rows")]:
        if before not in first or after not in first or \
                first[before] > first[after]:
            return f"{before} not before {after}: {seen}"
    merge = first["merge_selected_rows"]
    for k in ("clip", "clip_by_norm", "squared_l2_norm", "elementwise_mul",
              "sparse_weight_decay"):
        if k in first and first[k] < merge:
            return f"{k} before merge_selected_rows: {seen}"
    return ""


def run_case(exe, name, optimizer, rank, world, out_dir, case):
    combo = t.combos()[name]
    batches = global_batches()
    want = t.train(*t.build(True, optimizer, **combo), batches)
    main, startup = t.build(True, optimizer, **combo)
    scope = fluid.Scope()
    t._SCOPES.append(scope)
    exe.run(startup, scope=scope)
    for n, value in t.initial_params().items():
        scope.set(n, value)
    for ids, labels in batches:
        ids, labels = half([ids, labels], rank, world)
        exe.run(main, feed={"ids": ids, "label": labels}, scope=scope)
    exe.check_consistency()
    got = {n: np.array(scope.get(n), copy=True) for n in want}
    np.save(os.path.join(out_dir, f"rank{rank}", case + ".npy"),
            np.concatenate([got[n].ravel() for n in sorted(got)]))
    problem = check_order(exe.transpiled_program(main))
    if problem:
        return problem
    for n in want:
        err = np.abs(got[n] - want[n]).max() / np.abs(want[n]).max()
        if not err <= RTOL:
            return f"{n}: relative difference {err:.3g} > {RTOL:g}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    failed = 0
    for ratio in (1.0, 0.0):
        exe = fluid.MPIExecutor(fluid.CPUPlace(), sparse_dense_ratio=ratio)
        rank, world = exe.rank, exe.world_size
        os.makedirs(os.path.join(args.out, f"rank{rank}"), exist_ok=True)
        for name in COMBOS:
            for optimizer in ("sgd", "adam"):
                case = f"{name}-{optimizer}-ratio{ratio:g}"
                try:
                    problem = run_case(exe, name, optimizer, rank, world,
                                       args.out, case)
                except Exception:  # noqa: BLE001 - report, then fail
                    problem = "raised:\n" + traceback.format_exc()
                if problem:
                    failed += 1
                    print(f"FAIL {case}: {problem}", flush=True)
                elif rank == 0:
                    print(f"PASS {case}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
