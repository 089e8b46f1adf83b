"""Under `mpirun -np N` (driven by test_transformer_block.py, which reads
DIR/rank<R>.txt; the script's argument is DIR): the pre-LN transformer
block of transformer_block.py with a mean-square loss, 10 Adam steps.

1. fluid.MPIExecutor with each rank feeding its B examples gives the
   parameters of one Executor fed all N * B examples: every parameter in
   float64 (1e-9), every one but the key projection's bias in float32
   (1e-5). Writes "PASS single DTYPE". That bias has a gradient that is 0
   but for rounding (softmax ignores a shift shared by a row of scores,
   so the bias changes no output), and Adam scales a gradient to about its
   sign while it is large against epsilon: in float32 that rounding noise
   (1e-9) moves the bias by about the learning rate, differently for
   different summation orders; in float64 (1e-17) by nothing measurable.
2. The ranks' parameters are bitwise identical. Writes
   "params R DTYPE DIGEST".
"""
import hashlib
import os
import sys

import numpy as np

import fluid
from transformer_block import PARAMS, fluid_block, init_params

L = fluid.layers
SEQ, WIDTH, HEADS, PER_RANK, STEPS = 5, 8, 2, 3, 10
_SCOPES = []


def program(dtype):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [SEQ, WIDTH], dtype=dtype)
        t = L.data("t", [SEQ, WIDTH], dtype=dtype)
        y = fluid_block(x, SEQ, WIDTH, HEADS, dtype)
        loss = L.mean(L.square(L.elementwise_sub(y, t)))
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return main, startup


def train(exe, part, world, dtype):
    main, startup = program(dtype)
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    for name, value in init_params(WIDTH, seed=11).items():
        scope.set(name, value.astype(dtype))
    rng = np.random.RandomState(12)
    for _ in range(STEPS):
        shape = (PER_RANK * world, SEQ, WIDTH)
        x = rng.uniform(-1, 1, shape).astype(dtype)
        t = rng.uniform(-1, 1, shape).astype(dtype)
        exe.run(main, feed={"x": x[part], "t": t[part]}, scope=scope)
    return {name: np.array(scope.get(name)) for name in sorted(PARAMS)}


def check(dist, dtype, tol, unchecked=()):
    rank, world = dist.rank, dist.world_size
    mine = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    got = train(dist, mine, world, dtype)
    want = train(fluid.Executor(fluid.CPUPlace()), slice(None), world, dtype)
    initial = init_params(WIDTH, 11)
    for name in sorted(PARAMS):
        assert not np.array_equal(got[name], initial[name].astype(dtype)), \
            name
        if name in unchecked:
            continue
        np.testing.assert_allclose(got[name], want[name], rtol=tol, atol=tol,
                                   err_msg=f"{name} ({dtype})")
    digest = hashlib.sha1(b"".join(
        np.ascontiguousarray(got[n]).tobytes() for n in sorted(PARAMS)))
    return [f"PASS single {dtype}",
            f"params {rank} {dtype} {digest.hexdigest()[:16]}"]


def main():
    dist = fluid.MPIExecutor()
    lines = check(dist, "float64", 1e-9)
    lines += check(dist, "float32", 1e-5, unchecked=("k.b",))
    with open(os.path.join(sys.argv[1], f"rank{dist.rank}.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
