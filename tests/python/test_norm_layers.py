"""fluid.layers.batch_norm and fluid.layers.dropout: the program they
build, training against PyTorch 1.13 (F.batch_norm: forward, backward and
the running statistics, whose variance convention differs: PyTorch moves the
running variance toward the unbiased batch variance, Fluid toward the
biased one), the masks of dropout, and Program.clone(for_test=True)
switching both to inference.
"""
import numpy as np
import pytest

import fluid

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

L = fluid.layers

# Scopes outlive the executors bound to them.
_SCOPES = []


def _scope():
    scope = fluid.Scope()
    _SCOPES.append(scope)
    return scope


def test_batch_norm_program_and_initial_values():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3, 4, 4])
        y = L.batch_norm(x, act="relu")
    assert main.op_types() == ["batch_norm", "relu"]
    assert y.shape == (-1, 3, 4, 4)
    params = sorted(p.name for p in main.all_parameters())
    assert params == ["batch_norm_0.b_0", "batch_norm_0.w_0"]
    moving = [main.var("batch_norm_0.w_1"), main.var("batch_norm_0.w_2")]
    assert all(v.persistable for v in moving)
    scope = _scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    np.testing.assert_array_equal(scope.get("batch_norm_0.w_0"), np.ones(3))
    np.testing.assert_array_equal(scope.get("batch_norm_0.b_0"), np.zeros(3))
    np.testing.assert_array_equal(scope.get("batch_norm_0.w_1"), np.zeros(3))
    np.testing.assert_array_equal(scope.get("batch_norm_0.w_2"), np.ones(3))


def test_batch_norm_bad_arguments_name_layer_and_argument():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3, 4, 4])
        with pytest.raises(Exception, match="data_layout"):
            L.batch_norm(x, data_layout="NHWC")
        with pytest.raises(Exception, match="batch_norm.*bias_attr"):
            L.batch_norm(x, bias_attr=False)
        with pytest.raises(Exception, match="dropout.*dropout_implementation"):
            L.dropout(x, 0.5, dropout_implementation="upscale")


def _bn_net(momentum, epsilon):
    """conv2d 1x1 (so dX is checked through the filter's gradient) ->
    batch_norm -> mean(y * r), SGD(1.0), in float64."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3, 4, 4], dtype="float64")
        r = L.data("r", [3, 4, 4], dtype="float64")
        h = L.conv2d(x, 3, 1, bias_attr=False)
        y = L.batch_norm(h, momentum=momentum, epsilon=epsilon)
        loss = L.mean(L.elementwise_mul(y, r))
        fluid.optimizer.SGD(1.0).minimize(loss)
    return main, startup, y


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_batch_norm_training_matches_torch():
    # Exact in float32, as the op's attrs are.
    momentum, eps = 0.75, 2.0 ** -10
    main, startup, y = _bn_net(momentum, eps)
    rs = np.random.RandomState(0)
    n = 6
    xv = rs.uniform(-2, 3, (n, 3, 4, 4))
    rv = rs.uniform(-1, 1, (n, 3, 4, 4))
    w = rs.uniform(-1, 1, (3, 3, 1, 1))
    gamma, beta = rs.uniform(0.5, 1.5, 3), rs.uniform(-1, 1, 3)
    mean0, var0 = rs.uniform(-1, 1, 3), rs.uniform(0.5, 2, 3)
    scope = _scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for name, v in [("conv2d_0.w_0", w), ("batch_norm_0.w_0", gamma),
                    ("batch_norm_0.b_0", beta), ("batch_norm_0.w_1", mean0),
                    ("batch_norm_0.w_2", var0)]:
        scope.set(name, v)
    (out,) = exe.run(main, feed={"x": xv, "r": rv}, fetch_list=[y],
                     scope=scope)

    t = {k: torch.tensor(v, requires_grad=True)
         for k, v in [("w", w), ("gamma", gamma), ("beta", beta)]}
    t_mean, t_var = torch.tensor(mean0), torch.tensor(var0)
    h = F.conv2d(torch.tensor(xv), t["w"])
    # PyTorch's momentum is the weight of the batch: 1 - Fluid's.
    ty = F.batch_norm(h, t_mean, t_var, t["gamma"], t["beta"], training=True,
                      momentum=1 - momentum, eps=eps)
    (ty * torch.tensor(rv)).mean().backward()
    np.testing.assert_allclose(out, ty.detach().numpy(), rtol=1e-9,
                               atol=1e-10)
    for name, key in [("conv2d_0.w_0", "w"), ("batch_norm_0.w_0", "gamma"),
                      ("batch_norm_0.b_0", "beta")]:
        want = (t[key] - t[key].grad).detach().numpy()
        np.testing.assert_allclose(scope.get(name), want, rtol=1e-9,
                                   atol=1e-10, err_msg=name)
    np.testing.assert_allclose(scope.get("batch_norm_0.w_1"), t_mean.numpy(),
                               rtol=1e-12)
    # The running variance: PyTorch's moved toward the unbiased variance,
    # ours toward the biased one, m / (m - 1) times smaller.
    m = n * 4 * 4
    torch_step = t_var.numpy() - momentum * var0
    ours_step = scope.get("batch_norm_0.w_2") - momentum * var0
    np.testing.assert_allclose(ours_step, torch_step * (m - 1) / m,
                               rtol=1e-10)


def test_clone_for_test_switches_to_inference():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [2, 3], dtype="float64")
        y = L.batch_norm(x, epsilon=1e-5)
        z = L.dropout(y, 0.25, seed=3)
        loss = L.mean(z)
        fluid.optimizer.SGD(0.1).minimize(loss)
    test = main.clone(for_test=True)
    assert test.op_types() == ["batch_norm", "dropout", "mean"]
    scope = _scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    mean, var = np.array([0.5, -1.0]), np.array([2.0, 0.25])
    scope.set("batch_norm_0.w_1", mean)
    scope.set("batch_norm_0.w_2", var)
    xv = np.random.RandomState(1).uniform(-1, 1, (4, 2, 3))
    zt, = exe.run(test, feed={"x": xv}, fetch_list=[z], scope=scope)
    want = (xv - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5)
    np.testing.assert_allclose(zt, want * 0.75, rtol=1e-6)
    # Evaluation leaves the running statistics and the step counter alone.
    np.testing.assert_array_equal(scope.get("batch_norm_0.w_1"), mean)
    assert scope.get("dropout_0.step")[0] == 0


def _dropout_run(impl, steps, p=0.4, seed=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [1000], dtype="float64")
        h = L.fc(x, 1000, bias_attr=False)
        d = L.dropout(h, p, seed=seed, dropout_implementation=impl)
        fluid.optimizer.SGD(1e-30).minimize(L.mean(d))
    scope = _scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    scope.set("fc_0.w_0", np.eye(1000))
    xv = np.random.RandomState(2).uniform(1, 2, (2, 1000))
    outs = [exe.run(main, feed={"x": xv}, fetch_list=[d], scope=scope)[0]
            for _ in range(steps)]
    return xv, outs, scope


@pytest.mark.parametrize("impl", ["downgrade_in_infer", "upscale_in_train"])
def test_dropout_training(impl):
    p = 0.4
    xv, outs, scope = _dropout_run(impl, 3, p)
    scale = 1 / (1 - np.float64(np.float32(p))) if impl == "upscale_in_train" \
        else 1.0
    for out in outs:
        kept = out != 0
        assert abs(kept.mean() - (1 - p)) < 0.03
        np.testing.assert_allclose(out[kept], xv[kept] * scale, rtol=1e-12)
    # Each run draws a new mask; the counter is saved with the persistables.
    assert not np.array_equal(outs[0] != 0, outs[1] != 0)
    assert scope.get("dropout_0.step")[0] == 3
    assert fluid.default_main_program() is not None
    # A rerun from scratch draws the same masks.
    _, again, _ = _dropout_run(impl, 3, p)
    for a, b in zip(outs, again):
        np.testing.assert_array_equal(a, b)
    # Another seed, other masks.
    _, other, _ = _dropout_run(impl, 1, p, seed=123)
    assert not np.array_equal(other[0] != 0, outs[0] != 0)


def test_sync_batch_norm_transpiler_option():
    """The option reaches the program: the serialized trainer program names
    sync_stats once per batch_norm op either way (the layer sets it), and
    holds a true bool attr only with the option."""
    main, startup, _ = _bn_net(0.9, 1e-5)
    sizes = {}
    for sync in (False, True):
        t = fluid.DistributeTranspiler(sync_batch_norm=sync)
        t.transpile(trainers=2, program=main, startup_program=startup)
        data = t.get_trainer_program().serialize()
        assert data.count(b"sync_stats") == 2  # batch_norm and its gradient
        sizes[sync] = data
    assert sizes[False] != sizes[True]


def test_mpi_ranks(tmp_path):
    """tests/python/mpi_norm.py under mpirun -np 2 (see its docstring)."""
    import os
    import shutil
    import subprocess
    import sys
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    # The script's single-process reference Executor is meant to run alone.
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", FLUID_INDEPENDENT_RANKS="1")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "mpi_norm.py")
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe",
                        "-np", "2", "-x", "PYTHONPATH", "-x",
                        "FLUID_INDEPENDENT_RANKS", sys.executable, script,
                        str(tmp_path)], env=env, capture_output=True,
                       text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    lines = []
    for rank in range(2):
        lines += (tmp_path / f"rank{rank}.txt").read_text().splitlines()
    assert lines.count("PASS sync") == 2, lines
    words = [line.split() for line in lines]
    stats = {(w[1], w[2]): w[3] for w in words if w[0] == "stats"}
    assert stats[("0", "before")] != stats[("1", "before")], lines
    assert stats[("0", "after")] == stats[("1", "after")], lines
    masks = {w[1]: w[2] for w in words if w[0] == "mask"}
    assert masks["0"] != masks["1"], lines
