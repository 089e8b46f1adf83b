"""A pre-LN transformer decoder block (layer_norm, causal multi-head
self-attention with fc projections, residual, layer_norm, fc-gelu-fc,
residual) built with fluid.layers against the same block from torch.nn
(transformer_block.py) with identical weights on identical input: the
output and the gradient of every parameter, in float32 (1e-5) and float64
(1e-9); on a CUDA device against the CPU (skipped without one); and the
same block trained under mpirun -np 2 (mpi_transformer.py)."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import fluid
from transformer_block import PARAMS, TorchBlock, fluid_block, init_params

L = fluid.layers
SEQ, WIDTH, HEADS, BATCH = 6, 8, 2, 3
_SCOPES = []


def _fluid_run(params, x, c, dtype, place=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        xv = L.data("x", [SEQ, WIDTH], dtype=dtype)
        cv = L.data("c", [SEQ, WIDTH], dtype=dtype)
        y = fluid_block(xv, SEQ, WIDTH, HEADS, dtype)
        loss = L.mean(L.elementwise_mul(y, cv))
        # The gradients fetched are this run's, before the update.
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(place or fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    for name, value in params.items():
        scope.set(name, value.astype(dtype))
    names = sorted(PARAMS)
    got = exe.run(main, feed={"x": x.astype(dtype), "c": c.astype(dtype)},
                  fetch_list=[y] + [n + "@GRAD" for n in names], scope=scope)
    return got[0], dict(zip(names, got[1:]))


def _torch_run(params, x, c, dtype):
    block = TorchBlock(SEQ, WIDTH, HEADS, dtype)
    block.load(params)
    y = block(torch.tensor(x, dtype=dtype))
    (y * torch.tensor(c, dtype=dtype)).mean().backward()
    return y.detach().numpy(), block.grads()


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-9)])
def test_block_matches_torch(dtype, tol):
    params = init_params(WIDTH, seed=1)
    rng = np.random.RandomState(2)
    x = rng.uniform(-1, 1, (BATCH, SEQ, WIDTH))
    c = rng.uniform(-1, 1, (BATCH, SEQ, WIDTH))
    y, grads = _fluid_run(params, x, c, dtype)
    ty, tgrads = _torch_run(params, x, c, getattr(torch, dtype))
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y, ty, rtol=tol, atol=tol)
    for name in PARAMS:
        scale = max(1.0, np.abs(tgrads[name]).max())
        np.testing.assert_allclose(grads[name], tgrads[name], rtol=tol,
                                   atol=tol * scale, err_msg=name)


@pytest.mark.skipif(fluid.cuda_device_count() == 0,
                    reason="no CUDA device visible")
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
def test_block_on_cuda_matches_cpu(dtype, tol):
    params = init_params(WIDTH, seed=5)
    rng = np.random.RandomState(6)
    x = rng.uniform(-1, 1, (BATCH, SEQ, WIDTH))
    c = rng.uniform(-1, 1, (BATCH, SEQ, WIDTH))
    y, grads = _fluid_run(params, x, c, dtype)
    gy, ggrads = _fluid_run(params, x, c, dtype, fluid.CUDAPlace(0))
    np.testing.assert_allclose(gy, y, rtol=tol, atol=tol)
    for name in PARAMS:
        np.testing.assert_allclose(ggrads[name], grads[name], rtol=tol,
                                   atol=tol, err_msg=name)


def test_block_is_causal():
    """Changing the last position leaves every earlier output as it was."""
    params = init_params(WIDTH, seed=3)
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (2, SEQ, WIDTH))
    c = np.ones_like(x)
    y0, _ = _fluid_run(params, x, c, "float64")
    x[:, -1] += 5.0
    y1, _ = _fluid_run(params, x, c, "float64")
    np.testing.assert_array_equal(y0[:, :-1], y1[:, :-1])
    assert not np.allclose(y0[:, -1], y1[:, -1])


def test_mpi_training(tmp_path):
    """tests/python/mpi_transformer.py under mpirun -np 2 (see its
    docstring)."""
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", FLUID_INDEPENDENT_RANKS="1")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "mpi_transformer.py")
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe",
                        "-np", "2", "-x", "PYTHONPATH", "-x",
                        "FLUID_INDEPENDENT_RANKS", sys.executable, script,
                        str(tmp_path)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = []
    for rank in range(2):
        lines += (tmp_path / f"rank{rank}.txt").read_text().splitlines()
    for dtype in ("float64", "float32"):
        assert lines.count(f"PASS single {dtype}") == 2, lines
    digests = {(w[1], w[2]): w[3] for w in (line.split() for line in lines)
               if w[0] == "params"}
    for dtype in ("float64", "float32"):
        assert digests[("0", dtype)] == digests[("1", dtype)], lines
