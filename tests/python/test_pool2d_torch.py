"""fluid.layers.pool2d with ceil_mode and exclusive against PyTorch's
max_pool2d / avg_pool2d (ceil_mode, count_include_pad = not exclusive):
output shapes at build time, values and input gradients in float64.

Where the two differ by design: Fluid 1.x would add a last window lying
wholly in the right padding; like PyTorch, pool2d drops it (the case
5 / k 2 / s 2 / pad 1 below checks this)."""
import numpy as np
import pytest

import fluid

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

L = fluid.layers

# (C, H, W, kernel, stride, padding)
CASES = [
    (2, 7, 9, 2, 2, 0),
    (3, 5, 5, 2, 2, 1),
    (2, 8, 7, 3, 2, 1),
    (1, 10, 11, 3, 3, 0),
    (2, 6, 9, [3, 2], [2, 3], [1, 0]),
    (2, 9, 9, 3, 1, 1),
]


def pair(v):
    return list(v) if isinstance(v, list) else [v, v]


def run_fluid(x, r, pool_type, k, s, p, ceil_mode, exclusive):
    """Out and dLoss/dX, X a parameter (so that minimize() computes its
    gradient) set to `x`."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xv = L.create_parameter(list(x.shape), "float64", name="xp")
        rv = L.data("r", list(r.shape[1:]), dtype="float64")
        y = L.pool2d(xv, k, pool_type, s, p, ceil_mode=ceil_mode,
                     exclusive=exclusive)
        assert list(y.shape[1:]) == list(r.shape[1:]), (y.shape, r.shape)
        # mean over [N, ...] of y * r: torch's (y * r).mean() times N / N.
        loss = L.mean(L.elementwise_mul(y, rv))
        fluid.optimizer.SGD(1.0).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    scope.set("xp", x)
    out, dx = exe.run(main, feed={"r": r}, fetch_list=[y, "xp@GRAD"],
                      scope=scope)
    return np.array(out), np.array(dx)


def run_torch(x, r, pool_type, k, s, p, ceil_mode, exclusive):
    t = torch.from_numpy(x).requires_grad_()
    if pool_type == "max":
        y = F.max_pool2d(t, pair(k), pair(s), pair(p), ceil_mode=ceil_mode)
    else:
        y = F.avg_pool2d(t, pair(k), pair(s), pair(p), ceil_mode=ceil_mode,
                         count_include_pad=not exclusive)
    (y * torch.from_numpy(r)).mean().backward()
    return y.detach().numpy(), t.grad.numpy()


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("mode", ["max", "avg_exclusive", "avg_inclusive"])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_pool2d_matches_torch(case, mode, ceil_mode):
    if torch is None:
        pytest.skip("torch is not importable: no PyTorch reference")
    c, h, w, k, s, p = case
    pool_type = "max" if mode == "max" else "avg"
    exclusive = mode != "avg_inclusive"
    rng = np.random.RandomState(3)
    # Distinct values: no ties for max pooling to break differently.
    x = rng.permutation(2 * c * h * w).reshape(2, c, h, w) / 7.0
    probe = run_torch(x, np.ones((1,)), pool_type, k, s, p, ceil_mode,
                      exclusive)[0]
    r = rng.rand(*probe.shape)
    want_y, want_dx = run_torch(x, r, pool_type, k, s, p, ceil_mode,
                                exclusive)
    got_y, got_dx = run_fluid(x, r, pool_type, k, s, p, ceil_mode, exclusive)
    assert got_y.shape == want_y.shape
    np.testing.assert_allclose(got_y, want_y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_dx, want_dx, rtol=1e-12, atol=1e-14)


def test_ceil_mode_changes_only_the_ragged_sizes():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data("x", [3, 7, 8])
        assert L.pool2d(x, 2, "max", 2).shape[1:] == (3, 3, 4)
        assert L.pool2d(x, 2, "max", 2, ceil_mode=True).shape[1:] == (3, 4, 4)
