"""fluid.layers.cos_sim, l2_normalize, prelu, smooth_l1 and group_norm
through fluid.Executor, compared with PyTorch on the same inputs (float64):
forward values, the gradient that reaches each input
(test_tensor_layers._check), and the gradients of prelu's alpha and
group_norm's scale and bias; then the programs they build and the errors
their bad arguments give."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import fluid
from test_tensor_layers import _check, _input, _run

L = fluid.layers


def _torch_smooth_l1(x, y, iw=None, ow=None, sigma=1.0):
    """Fluid's smooth_l1 written with torch: per row, the sum of ow *
    huber(iw * (x - y)) at beta = 1 / sigma^2, scaled by sigma^2."""
    d = x - y if iw is None else iw * (x - y)
    s2 = sigma * sigma
    per = F.smooth_l1_loss(d * s2, torch.zeros_like(d), reduction="none",
                           beta=1.0) / s2
    if ow is not None:
        per = per * ow
    return per.reshape(per.shape[0], -1).sum(1, keepdim=True)


@pytest.mark.parametrize("yrows", [4, 1])
def test_cos_sim(yrows):
    main, (out,) = _check(lambda x, y: L.cos_sim(x, y),
                          lambda x, y: F.cosine_similarity(
                              x, y.expand_as(x), dim=1, eps=0).unsqueeze(1),
                          [[4, 6], [yrows, 6]])
    assert "cos_sim_grad" in main.op_types()
    assert out.shape == (-1, 1)


def test_cos_sim_rank3():
    _check(lambda x, y: L.cos_sim(x, y),
           lambda x, y: F.cosine_similarity(
               x.flatten(1), y.flatten(1), dim=1, eps=0).unsqueeze(1),
           [[3, 2, 4], [3, 2, 4]], seed=1)


@pytest.mark.parametrize("shape,axis", [([4, 6], 1), ([3, 4, 5], -1),
                                        ([3, 4, 5], 1), ([5, 3], 0)])
def test_l2_normalize(shape, axis):
    main, (out,) = _check(lambda x: L.l2_normalize(x, axis=axis),
                          lambda t: t / torch.sqrt(
                              (t * t).sum(axis, keepdim=True) +
                              float(np.float32(1e-12))),
                          [shape])
    assert "norm_grad" in main.op_types()
    assert out.shape == tuple([-1] + shape[1:])


def test_l2_normalize_epsilon():
    eps = float(np.float32(0.3))
    _check(lambda x: L.l2_normalize(x, axis=1, epsilon=0.3),
           lambda t: t / torch.sqrt((t * t).sum(1, keepdim=True) + eps),
           [[4, 5]], seed=2)


def _alpha_for_torch(mode, shape, alpha):
    if mode == "all":
        return torch.tensor(alpha.reshape(1))
    if mode == "channel":
        return torch.tensor(alpha.reshape(shape[1]))
    return torch.tensor(alpha)


@pytest.mark.parametrize("mode,shape", [("all", [4, 3, 2, 2]),
                                        ("channel", [4, 3, 2, 2]),
                                        ("channel", [5, 6]),
                                        ("element", [2, 3, 4])])
def test_prelu_with_default_alpha(mode, shape):
    """alpha starts at 0.25; torch's prelu does 'all' and 'channel', the
    elementwise form is written out."""
    def ref(t):
        if mode == "element":
            return torch.where(t > 0, t, 0.25 * t)
        n = 1 if mode == "all" else shape[1]
        return F.prelu(t, torch.full((n,), 0.25, dtype=torch.float64))
    main, (out,) = _check(lambda x: L.prelu(x, mode), ref, [shape])
    assert "prelu_grad" in main.op_types()


@pytest.mark.parametrize("mode", ["all", "channel", "element"])
def test_prelu_alpha_gradient(mode):
    rng = np.random.RandomState(3)
    shape = [3, 4, 2, 3]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", shape[1:], dtype="float64", stop_gradient=False)
        y = L.prelu(x, mode, param_attr="a")
        c = L.data("c", shape[1:], dtype="float64")
        fluid.optimizer.SGD(0.1).minimize(L.mean(L.elementwise_mul(y, c)))
    a_shape = main.global_block().var("a").shape
    assert a_shape == {"all": (1,), "channel": (1, 4, 1, 1),
                       "element": (1, 4, 2, 3)}[mode]
    xv, cv = rng.uniform(-2, 2, shape), rng.uniform(-1, 1, shape)
    av = rng.uniform(0, 1, a_shape)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    scope.set("a", av)
    got = exe.run(main, feed={"x": xv, "c": cv}, scope=scope,
                  fetch_list=[y, "a@GRAD", "x@GRAD"])
    ta = _alpha_for_torch(mode, shape, av).requires_grad_()
    tx = torch.tensor(xv, requires_grad=True)
    ty = (torch.where(tx > 0, tx, ta * tx) if mode == "element"
          else F.prelu(tx, ta))
    (ty * torch.tensor(cv)).mean().backward()
    np.testing.assert_allclose(got[0], ty.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(got[1].reshape(-1), ta.grad.numpy().reshape(-1),
                               rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(got[2], tx.grad.numpy(), rtol=1e-10,
                               atol=1e-15)


@pytest.mark.parametrize("sigma", [None, 0.5, 3.0])
def test_smooth_l1(sigma):
    main, (out,) = _check(lambda x, y: L.smooth_l1(x, y, sigma=sigma),
                          lambda x, y: _torch_smooth_l1(
                              x, y, sigma=1.0 if sigma is None else sigma),
                          [[5, 6], [5, 6]], seed=4)
    assert out.shape == (-1, 1)
    assert "smooth_l1_loss_grad" in main.op_types()


def test_smooth_l1_weighted():
    """The weights are constants (no gradient reaches them, as in Fluid):
    the loss and the gradients of x and y against torch."""
    rng = np.random.RandomState(5)
    shape = [4, 3, 2]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        (x, xval), (y, yval) = _input("x", shape), _input("y", shape)
        iw, ow = [L.data(n, shape[1:], dtype="float64") for n in ("iw", "ow")]
        out = L.smooth_l1(x, y, inside_weight=iw, outside_weight=ow,
                          sigma=2.0)
        c = L.data("c", [1], dtype="float64")
        fluid.optimizer.SGD(0.1).minimize(L.mean(L.elementwise_mul(out, c)))
    feed = {"x": rng.uniform(-1, 1, (4, 6)), "y": rng.uniform(-1, 1, (4, 6)),
            "iw": rng.uniform(0, 2, shape), "ow": rng.uniform(0, 2, shape),
            "c": rng.uniform(-1, 1, (shape[0], 1))}
    got = _run(main, startup, feed, [out, x.name + "@GRAD", y.name + "@GRAD"])
    tx = torch.tensor(xval(feed["x"]), requires_grad=True)
    ty = torch.tensor(yval(feed["y"]), requires_grad=True)
    ref = _torch_smooth_l1(tx, ty, torch.tensor(feed["iw"]),
                           torch.tensor(feed["ow"]), 2.0)
    (ref * torch.tensor(feed["c"])).mean().backward()
    np.testing.assert_allclose(got[0], ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[1], tx.grad.numpy(), rtol=1e-10,
                               atol=1e-15)
    np.testing.assert_allclose(got[2], ty.grad.numpy(), rtol=1e-10,
                               atol=1e-15)


@pytest.mark.parametrize("layout,shape,groups", [
    ("NCHW", [2, 6, 3, 2], 3), ("NCHW", [3, 4], 2), ("NHWC", [2, 3, 2, 6], 2),
    ("NCHW", [2, 4, 5], 1)])
def test_group_norm_default_params(layout, shape, groups):
    """The scale starts at 1 and the bias at 0, as torch's do."""
    eps = float(np.float32(1e-5))

    def ref(t):
        if layout == "NHWC":
            t = t.movedim(-1, 1)
        y = F.group_norm(t, groups, eps=eps)
        return y.movedim(1, -1) if layout == "NHWC" else y
    main, (out,) = _check(
        lambda x: L.group_norm(x, groups, data_layout=layout), ref, [shape])
    assert "group_norm_grad" in main.op_types()
    assert out.shape == tuple([-1] + shape[1:])


def test_group_norm_parameters_gradients_and_act():
    rng = np.random.RandomState(6)
    shape = [3, 6, 2, 2]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", shape[1:], dtype="float64", stop_gradient=False)
        y = L.group_norm(x, 3, epsilon=0.01, param_attr="g", bias_attr="b",
                         act="tanh")
        c = L.data("c", shape[1:], dtype="float64")
        fluid.optimizer.SGD(0.1).minimize(L.mean(L.elementwise_mul(y, c)))
    xv, cv = rng.uniform(-2, 2, shape), rng.uniform(-1, 1, shape)
    gv, bv = rng.uniform(0.5, 2, 6), rng.uniform(-1, 1, 6)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    scope.set("g", gv)
    scope.set("b", bv)
    got = exe.run(main, feed={"x": xv, "c": cv}, scope=scope,
                  fetch_list=[y, "g@GRAD", "b@GRAD", "x@GRAD"])
    gn = torch.nn.GroupNorm(3, 6, eps=float(np.float32(0.01)),
                            dtype=torch.float64)
    with torch.no_grad():
        gn.weight.copy_(torch.tensor(gv))
        gn.bias.copy_(torch.tensor(bv))
    tx = torch.tensor(xv, requires_grad=True)
    ty = torch.tanh(gn(tx))
    (ty * torch.tensor(cv)).mean().backward()
    np.testing.assert_allclose(got[0], ty.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    for k, want in ((1, gn.weight.grad), (2, gn.bias.grad), (3, tx.grad)):
        np.testing.assert_allclose(got[k], want.numpy(), rtol=1e-10,
                                   atol=1e-14, err_msg=f"fetch {k}")


def test_group_norm_without_params_and_names():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4, 3])
        L.group_norm(x, 2, param_attr=False, bias_attr=False)
        L.group_norm(x, 2, name="gn")
        L.prelu(x, "channel", name="pr")
    names = {p.name for p in main.global_block().all_parameters()}
    assert names == {"gn.w_0", "gn.b_0", "pr.w_0"}, names


def test_bad_arguments_raise_clear_errors():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [6, 4])
        y = L.data("y", [5, 4])
        with pytest.raises(Exception, match="mode.*'row'"):
            L.prelu(x, "row")
        with pytest.raises(Exception, match="groups.*4.*6 channels"):
            L.group_norm(x, 4)
        with pytest.raises(ValueError, match="data_layout='NDHW'"):
            L.group_norm(x, 2, data_layout="NDHW")
        with pytest.raises(ValueError, match="together"):
            L.smooth_l1(x, x, inside_weight=x)
        with pytest.raises(Exception, match="Y '.*' .*must match X"):
            L.cos_sim(x, y)
        with pytest.raises(Exception, match="axis=3"):
            L.l2_normalize(x, axis=3)
        with pytest.raises(TypeError, match="axis"):
            L.l2_normalize(x, axis=None)


def test_cos_sim_feeds_a_training_step():
    """A tiny model that trains through cos_sim and l2_normalize: the loss
    falls over a few SGD steps."""
    rng = np.random.RandomState(7)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        q = L.data("q", [8])
        d = L.data("d", [8])
        eq = L.l2_normalize(L.fc(q, 8), axis=1)
        sim = L.cos_sim(eq, d)
        loss = L.mean(L.scale(sim, scale=-1.0))
        fluid.optimizer.SGD(0.5).minimize(loss)
    qv = rng.uniform(-1, 1, (16, 8)).astype("float32")
    dv = rng.uniform(-1, 1, (16, 8)).astype("float32")
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed={"q": qv, "d": dv}, scope=scope,
                      fetch_list=[loss])[0].item() for _ in range(5)]
    assert losses[-1] < losses[0], losses


def _amp_model(use_bf16):
    from fluid.contrib import mixed_precision
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [2, 6, 6])
        label = L.data("label", [1], dtype="int64")
        h = L.conv2d(x, 4, 3)
        h = L.prelu(L.group_norm(h, 2, param_attr="g", bias_attr="b"),
                    "channel")
        e = L.l2_normalize(L.fc(h, 8), axis=1)
        loss = L.mean(L.elementwise_add(
            L.softmax_with_cross_entropy(L.fc(e, 3), label),
            L.smooth_l1(e, L.fc(h, 8))))
        opt = fluid.optimizer.SGD(0.1)
        if use_bf16:
            opt = mixed_precision.decorate(opt, use_bf16=True)
        opt.minimize(loss)
    return main, startup, loss


def test_group_norm_prelu_norm_smooth_l1_stay_float32_under_bf16():
    """Under bf16 the white conv2d runs in bfloat16 and the new ops in
    float32: their inputs are float32 (a cast back is inserted), the
    group_norm scale and bias stay float32, and 4 steps track float32's
    losses within bf16's precision."""
    rng = np.random.RandomState(8)
    feeds = [{"x": rng.uniform(-1, 1, (8, 2, 6, 6)).astype("float32"),
              "label": rng.randint(0, 3, (8, 1)).astype("int64")}
             for _ in range(4)]
    losses = {}
    for bf16 in (False, True):
        main, startup, loss = _amp_model(bf16)
        exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        exe.run(startup, scope=scope)
        losses[bf16] = [exe.run(main, feed=f, fetch_list=[loss],
                                scope=scope)[0].item() for f in feeds]
    block = main.global_block()
    types = [op.type for op in block.ops]
    assert "cast" in types
    for op in block.ops:
        if op.type in ("group_norm", "prelu", "norm", "smooth_l1_loss"):
            for slot in op.input_names:
                for name in op.input(slot):
                    assert block.var(name).dtype == "float32", (op.type, slot)
    assert block.var("g").dtype == "float32"
    assert block.var("b").dtype == "float32"
    np.testing.assert_allclose(losses[True], losses[False], rtol=3e-2)
