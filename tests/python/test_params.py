"""conv2d (non-square windows, dilation, groups) and pool2d (lists,
global, exclusive) against PyTorch; fc over several inputs; ParamAttr
(names that share a parameter, learning_rate, trainable); the
initializers' statistics and fans; unique names across programs;
fluid.nets."""
import numpy as np
import pytest

import fluid

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

L = fluid.layers
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not "
                                 "importable: no PyTorch oracle")


def _run(main, startup, feed, fetch, setup=None):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    if setup:
        setup(scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope), scope


def _grad_net(build, x_shape, seed=3):
    """x -> 1x1 identity conv (so that x gets a gradient) -> build(h) ->
    loss = mean(out * r). Returns the program pair, the names to fetch
    (out, d loss / d h, the tested layer's weight gradient) and a setup
    that writes the identity."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    c = x_shape[0]
    with fluid.program_guard(main, startup):
        x = L.data("x", list(x_shape), dtype="float64")
        h = L.conv2d(x, c, 1, bias_attr=False)
        out = build(h)
        r = L.data("r", list(out.shape[1:]), dtype="float64")
        loss = L.mean(L.elementwise_mul(out, r))
        fluid.optimizer.SGD(1.0).minimize(loss)
    params = [p.name for p in main.all_parameters()]
    ident = params[0]

    def setup(scope):
        scope.set(ident, np.eye(c).reshape(c, c, 1, 1))
    return main, startup, out, h.name + "@GRAD", params[1:], setup


CONV_CASES = [
    # (C, H, W, M, filter, stride, padding, dilation, groups)
    (4, 9, 8, 6, [3, 2], [2, 1], [1, 0], [1, 2], 2),
    (6, 7, 7, 6, 3, 1, 1, 1, 6),          # depthwise
    (4, 8, 9, 8, [1, 1], 1, 0, 1, 4),     # pointwise, grouped
    (3, 10, 7, 4, [5, 3], [3, 2], [2, 1], [2, 1], 1),
]


@needs_torch
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_torch_forward_and_backward(case):
    c, h, w, m, k, s, p, d, g = case
    n = 2

    def build(x):
        return L.conv2d(x, m, k, stride=s, padding=p, dilation=d, groups=g)
    main, startup, out, dx_name, (wn, bn), setup = _grad_net(build,
                                                             (c, h, w))
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (n, c, h, w))
    r = rng.uniform(-1, 1, (n,) + tuple(out.shape[1:]))
    (y, dx, dw, db), scope = _run(
        main, startup, {"x": x, "r": r},
        [out.name, dx_name, wn + "@GRAD", bn + "@GRAD"], setup)
    # The weights the step started from: after SGD(1.0), w0 = w1 + dw.
    w0 = np.array(scope.get(wn)) + dw
    b0 = np.array(scope.get(bn)) + db
    assert w0.shape == (m, c // g) + tuple(np.broadcast_to(k, 2))

    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    tb = torch.tensor(b0.reshape(-1), requires_grad=True)
    ty = F.conv2d(tx, tw, tb, stride=s, padding=p, dilation=d, groups=g)
    (ty * torch.tensor(r)).mean().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(db.reshape(-1), tb.grad.numpy(), rtol=1e-10,
                               atol=1e-12)


@needs_torch
@pytest.mark.parametrize("pool_type,size,stride,padding,exclusive", [
    ("max", [3, 2], [2, 1], [1, 0], True),
    ("avg", [3, 2], [2, 1], [1, 1], True),
    ("avg", [3, 3], 2, 1, False),
    ("max", 2, 2, 0, True),
])
def test_pool2d_matches_torch(pool_type, size, stride, padding, exclusive):
    def build(x):
        return L.pool2d(x, pool_size=size, pool_type=pool_type,
                        pool_stride=stride, pool_padding=padding,
                        exclusive=exclusive)
    main, startup, out, dx_name, _, setup = _grad_net(build, (3, 7, 6))
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (2, 3, 7, 6))
    r = rng.uniform(-1, 1, (2,) + tuple(out.shape[1:]))
    (y, dx), _ = _run(main, startup, {"x": x, "r": r}, [out.name, dx_name],
                      setup)
    tx = torch.tensor(x, requires_grad=True)
    if pool_type == "max":
        ty = F.max_pool2d(tx, size, stride, padding)
    else:
        ty = F.avg_pool2d(tx, size, stride, padding,
                          count_include_pad=not exclusive)
    (ty * torch.tensor(r)).mean().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_global_pooling_needs_no_size():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 5, 4])
        mx = L.pool2d(x, global_pooling=True)
        avg = L.pool2d(x, pool_type="avg", global_pooling=True)
        assert mx.shape == (-1, 3, 1, 1)
    v = np.random.RandomState(2).rand(2, 3, 5, 4).astype(np.float32)
    (a, b), _ = _run(main, startup, {"x": v}, [mx, avg])
    np.testing.assert_allclose(a[:, :, 0, 0], v.max(axis=(2, 3)), rtol=1e-6)
    np.testing.assert_allclose(b[:, :, 0, 0], v.mean(axis=(2, 3)), rtol=1e-6)


def test_window_argument_errors_name_the_argument():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data("x", [4, 8, 8])
        with pytest.raises(Exception, match="groups"):
            L.conv2d(x, 6, 3, groups=3)  # 4 channels in 3 groups
        with pytest.raises(Exception, match="dilation"):
            L.conv2d(x, 4, 3, dilation=[1, 0])
        with pytest.raises(TypeError, match="filter_size"):
            L.conv2d(x, 4, [3, 3, 3])
        with pytest.raises(ValueError, match="global_pooling"):
            L.pool2d(x)
        with pytest.raises(ValueError, match="'pool2d'.*'ceil_mode'"):
            L.pool2d(x, 2, ceil_mode="yes")


def test_fc_of_several_inputs_sums_projections():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a = L.data("a", [3])
        b = L.data("b", [2, 2])
        y = L.fc([a, b], 4, param_attr=[fluid.ParamAttr(name="wa"), "wb"],
                 act="relu")
    assert main.var("wa").shape == (3, 4)
    assert main.var("wb").shape == (4, 4)
    bias = [p.name for p in main.all_parameters() if p.name.endswith(".b_0")]
    assert len(bias) == 1
    assert "sum" in main.op_types()
    rng = np.random.RandomState(3)
    av = rng.rand(5, 3).astype(np.float32)
    bv = rng.rand(5, 2, 2).astype(np.float32)
    (got,), scope = _run(main, startup, {"a": av, "b": bv}, [y])
    want = (av @ np.array(scope.get("wa")) +
            bv.reshape(5, 4) @ np.array(scope.get("wb")) +
            np.array(scope.get(bias[0])).reshape(-1))
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-5)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        a = L.data("a", [3])
        # One attr (a list of one too) serves every input, as in Fluid;
        # a list of another length than the inputs' is refused.
        with pytest.raises(ValueError, match="param_attr"):
            L.fc([a, a], 2, param_attr=["w1", "w2", "w3"])


def test_shared_parameter_gets_summed_gradient():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3], dtype="float64")
        shared = fluid.ParamAttr(name="shared_w",
                                 initializer=fluid.initializer.Constant(0.5))
        h1 = L.fc(x, 3, param_attr=shared, bias_attr=False)
        h2 = L.fc(h1, 3, param_attr="shared_w", bias_attr=False)
        loss = L.mean(h2)
        fluid.optimizer.SGD(0.1).minimize(loss)
    params = [p.name for p in main.all_parameters()]
    assert params == ["shared_w"]
    startup_ops = [op for op in startup.ops()
                   if "shared_w" in sum(op["outputs"].values(), [])]
    assert len(startup_ops) == 1
    xv = np.random.RandomState(4).rand(4, 3)
    (g,), scope = _run(main, startup, {"x": xv}, ["shared_w@GRAD"])
    # loss = mean(x W W): dW = x^T (1/12) W^T + (x W)^T (1/12).
    w = np.full((3, 3), 0.5)
    ones = np.full((4, 3), 1.0 / 12)
    want = xv.T @ ones @ w.T + (xv @ w).T @ ones
    # rtol 1e-7: mean's gradient 1 / 12 is scaled in float32.
    np.testing.assert_allclose(g, want, rtol=1e-7)
    np.testing.assert_allclose(np.array(scope.get("shared_w")),
                               w - 0.1 * want, rtol=1e-7)


def test_shared_name_with_another_shape_is_an_error():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data("x", [3])
        L.fc(x, 4, param_attr="w")
        with pytest.raises(Exception) as e:
            L.fc(x, 5, param_attr="w")
        msg = str(e.value)
        assert "fc" in msg and "param_attr" in msg and "'w'" in msg, msg


def test_learning_rate_and_trainable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [2], dtype="float64")
        one = fluid.initializer.Constant(1.0)
        h = L.fc(x, 2, param_attr=fluid.ParamAttr(
            name="slow", initializer=one, learning_rate=0.25),
            bias_attr=fluid.ParamAttr(name="frozen", initializer=one,
                                      trainable=False))
        h = L.fc(h, 1, param_attr=fluid.ParamAttr(name="fast",
                                                  initializer=one),
                 bias_attr=False)
        loss = L.mean(h)
        fluid.optimizer.SGD(0.5).minimize(loss)
    sgd = [op for op in main.ops() if op["type"] == "sgd"]
    assert sorted(op["inputs"]["Param"][0] for op in sgd) == ["fast", "slow"]
    xv = np.array([[1.0, 2.0]])
    (gs, gf), scope = _run(main, startup, {"x": xv},
                           ["slow@GRAD", "fast@GRAD"])
    np.testing.assert_allclose(np.array(scope.get("slow")),
                               1.0 - 0.5 * 0.25 * gs, rtol=1e-12)
    np.testing.assert_allclose(np.array(scope.get("fast")),
                               1.0 - 0.5 * gf, rtol=1e-12)
    np.testing.assert_array_equal(np.array(scope.get("frozen")), 1.0)


def _init_values(shape_layer, init, seed=7):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        shape_layer(fluid.ParamAttr(name="w", initializer=init))
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    return np.array(scope.get("w"), dtype=np.float64)


def _fc_weight(in_dim, out_dim):
    return lambda attr: L.fc(L.data("x", [in_dim]), out_dim,
                             param_attr=attr)


def _conv_weight(c, m, k, groups=1):
    return lambda attr: L.conv2d(L.data("x", [c, 16, 16]), m, k,
                                 groups=groups, param_attr=attr)


def test_initializer_statistics_and_fans():
    I = fluid.initializer
    v = _init_values(_fc_weight(300, 200), I.Constant(0.25))
    assert (v == 0.25).all()
    v = _init_values(_fc_weight(300, 200), I.Uniform(-0.5, 1.5, seed=3))
    assert v.min() >= -0.5 and v.max() < 1.5
    assert abs(v.mean() - 0.5) < 0.02 and abs(v.std() - 2 / 12**0.5) < 0.02
    v = _init_values(_fc_weight(300, 200), I.Normal(1.0, 2.0, seed=3))
    assert abs(v.mean() - 1.0) < 0.03 and abs(v.std() - 2.0) < 0.03
    # fc [300, 200]: Xavier limit sqrt(6 / 500), MSRA sqrt(6 / 300).
    v = _init_values(_fc_weight(300, 200), I.Xavier())
    assert np.abs(v).max() <= (6 / 500) ** 0.5
    assert abs(v.std() - (2 / 500) ** 0.5) < 0.002
    v = _init_values(_fc_weight(300, 200), I.MSRA(uniform=False))
    assert abs(v.std() - (2 / 300) ** 0.5) < 0.003
    v = _init_values(_fc_weight(300, 200), I.Xavier(fan_in=50, fan_out=50))
    assert np.abs(v).max() > (6 / 500) ** 0.5  # the given fans: wider
    assert np.abs(v).max() <= (6 / 100) ** 0.5
    # conv [64, 16 / 2, 3, 3]: fan_in = 8 * 9 = 72, fan_out = 64 * 9 = 576.
    v = _init_values(_conv_weight(16, 64, 3, groups=2),
                     I.XavierInitializer(uniform=False))
    assert v.shape == (64, 8, 3, 3)
    assert abs(v.std() - (2 / (72 + 576)) ** 0.5) < 0.003
    v = _init_values(_conv_weight(16, 64, 3, groups=2), I.MSRA())
    assert np.abs(v).max() <= (6 / 72) ** 0.5
    assert abs(v.std() - (2 / 72) ** 0.5) < 0.006


def test_generated_names_are_unique_across_programs():
    with fluid.unique_name.guard():
        progs = []
        for _ in range(2):
            main, startup = fluid.Program(), fluid.Program()
            with fluid.program_guard(main, startup):
                L.fc(L.data("x", [3]), 2)
            progs.append({p.name for p in main.all_parameters()})
        assert progs[0] == {"fc_0.w_0", "fc_0.b_0"}
        assert progs[1] == {"fc_1.w_0", "fc_1.b_0"}
    with fluid.unique_name.guard():
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            L.fc(L.data("x", [3]), 2)
            assert fluid.default_main_program().desc.has_var("fc_0.w_0")


def test_nets():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 16, 16])
        y = fluid.nets.simple_img_conv_pool(
            x, num_filters=6, filter_size=[3, 5], pool_size=2, pool_stride=2,
            conv_padding=[1, 2], conv_groups=3, act="relu")
        assert y.shape == (-1, 6, 8, 8)
        z = fluid.nets.img_conv_group(y, conv_num_filter=[4, 4],
                                      pool_size=2, pool_stride=2,
                                      conv_act="relu")
        assert z.shape == (-1, 4, 4, 4)
        assert main.op_types().count("conv2d") == 3
    (v,), _ = _run(main, startup,
                   {"x": np.random.rand(2, 3, 16, 16).astype(np.float32)},
                   [z])
    assert v.shape == (2, 4, 4, 4) and (v >= 0).all()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4, 8, 8])
        bn = fluid.nets.img_conv_group(x, [4, 4], 2, pool_stride=2,
                                       conv_act="relu",
                                       conv_with_batchnorm=[True, True],
                                       conv_batchnorm_drop_rate=[0.5, 0.0])
        assert main.op_types().count("batch_norm") == 2
        assert main.op_types().count("dropout") == 1
        assert bn.shape == (-1, 4, 4, 4)
        g = fluid.nets.glu(x, dim=1)
        assert g.shape == (-1, 2, 8, 8)
    xv = np.random.RandomState(3).randn(2, 4, 8, 8).astype(np.float32)
    (gv,), _ = _run(main, startup, {"x": xv}, [g])
    a, b = xv[:, :2], xv[:, 2:]
    np.testing.assert_allclose(gv, a / (1 + np.exp(-b)), rtol=1e-6,
                               atol=1e-6)
