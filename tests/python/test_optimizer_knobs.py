"""The training knobs from Python against PyTorch 1.13 (or a NumPy loop
where torch has no counterpart): the optimizers of fluid.optimizer, weight
decay (fluid.regularizer), gradient clipping (fluid.clip) and the
learning-rate schedules of fluid.layers.

The model is a float64 linear layer with a squared loss, so that torch's
autograd gives the same gradients to rounding. Where Fluid's formula
differs from torch's the test picks arguments under which both agree:
RMSProp and Adamax with epsilon 0 (Fluid adds it under the root / to the
decayed norm, torch outside / to |g|), Adadelta with torch's lr 1 (Fluid's
update has no learning rate). Hyper-parameters are exact in float32,
as the ops' attrs are.
"""
import numpy as np
import pytest

import fluid

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

L = fluid.layers
STEPS = 5
RTOL = 1e-9


def needs_torch():
    if torch is None:
        pytest.skip("torch is not importable: no PyTorch oracle")


def batches(seed=0):
    rng = np.random.RandomState(seed)
    return [(rng.randn(8, 4), rng.randn(8, 3)) for _ in range(STEPS)]


def build(make_opt, param_attr=None, before_minimize=None):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float64")
        y = L.data("y", [3], dtype="float64")
        pred = L.fc(x, 3, param_attr=param_attr)
        loss = L.mean(L.square(L.elementwise_sub(pred, y)))
        if before_minimize is not None:
            before_minimize(main)
        make_opt().minimize(loss)
    return main, startup, loss


def run_fluid(make_opt, **kw):
    """Parameters before and after each step."""
    main, startup, loss = build(make_opt, **kw)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    names = ["fc_0.w_0", "fc_0.b_0"]
    init = {n: np.array(scope.get(n), copy=True) for n in names}
    history = []
    for x, y in batches():
        exe.run(main, feed={"x": x, "y": y}, scope=scope)
        history.append({n: np.array(scope.get(n), copy=True) for n in names})
    return init, history


def run_torch(init, make_opt, clip=None, schedule=None):
    w = torch.tensor(init["fc_0.w_0"], requires_grad=True)
    b = torch.tensor(init["fc_0.b_0"].reshape(-1), requires_grad=True)
    opt = make_opt([w, b])
    sched = schedule(opt) if schedule is not None else None
    history = []
    for x, y in batches():
        opt.zero_grad()
        pred = torch.from_numpy(x) @ w + b
        loss = ((pred - torch.from_numpy(y)) ** 2).mean()
        loss.backward()
        if clip is not None:
            clip([w, b])
        opt.step()
        if sched is not None:
            sched.step()
        history.append({"fc_0.w_0": w.detach().numpy().copy(),
                        "fc_0.b_0": b.detach().numpy().copy()})
    return history


def assert_histories(got, want, rtol=RTOL):
    for step, (g, t) in enumerate(zip(got, want)):
        for name in g:
            np.testing.assert_allclose(
                g[name].reshape(-1), t[name].reshape(-1), rtol=rtol,
                atol=rtol, err_msg=f"{name} after step {step + 1}")


O = fluid.optimizer
TORCH_CASES = {
    "adagrad": (lambda: O.Adagrad(0.125, epsilon=2.0 ** -20),
                lambda p: torch.optim.Adagrad(p, lr=0.125, eps=2.0 ** -20)),
    "rmsprop": (lambda: O.RMSProp(0.0625, rho=0.875, epsilon=0.0),
                lambda p: torch.optim.RMSprop(p, lr=0.0625, alpha=0.875,
                                              eps=0.0)),
    "rmsprop_centered_momentum": (
        lambda: O.RMSPropOptimizer(0.0625, rho=0.875, epsilon=0.0,
                                   momentum=0.5, centered=True),
        lambda p: torch.optim.RMSprop(p, lr=0.0625, alpha=0.875, eps=0.0,
                                      momentum=0.5, centered=True)),
    "adamax": (lambda: O.Adamax(0.125, beta1=0.875, beta2=0.9990234375,
                                epsilon=0.0),
               lambda p: torch.optim.Adamax(p, lr=0.125,
                                            betas=(0.875, 0.9990234375),
                                            eps=0.0)),
    "adadelta": (lambda: O.AdadeltaOptimizer(0.001, epsilon=2.0 ** -20,
                                             rho=0.875),
                 lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.875,
                                                eps=2.0 ** -20)),
    "l2_decay": (lambda: O.SGD(0.125,
                               regularization=fluid.regularizer.L2Decay(0.25)),
                 lambda p: torch.optim.SGD(p, lr=0.125, weight_decay=0.25)),
}


@pytest.mark.parametrize("case", sorted(TORCH_CASES))
def test_matches_torch(case):
    needs_torch()
    make_fluid, make_torch = TORCH_CASES[case]
    init, got = run_fluid(make_fluid)
    assert_histories(got, run_torch(init, make_torch))


def test_global_norm_clip_matches_torch_gradients_scaled():
    needs_torch()

    norms = []

    def clip(params):  # Fluid's rule: clip_norm / max(norm, clip_norm)
        norm = torch.sqrt(sum((p.grad ** 2).sum() for p in params))
        norms.append(float(norm))
        scale = 0.5 / torch.clamp(norm, min=0.5)
        for p in params:
            p.grad.mul_(scale)

    def before(main):
        fluid.clip.set_gradient_clip(
            fluid.clip.GradientClipByGlobalNorm(clip_norm=0.5), program=main)

    init, got = run_fluid(lambda: O.SGD(0.25), before_minimize=before)
    want = run_torch(init, lambda p: torch.optim.SGD(p, lr=0.25), clip=clip)
    assert max(norms) > 0.5  # the clip was active
    assert_histories(got, want)


def test_clip_by_value_matches_torch():
    needs_torch()
    attr = fluid.ParamAttr(
        gradient_clip=fluid.clip.GradientClipByValue(0.0625))
    main_clip = fluid.clip.GradientClipByValue(0.0625)

    def before(main):
        fluid.clip.set_gradient_clip(main_clip, param_list=["fc_0.b_0"],
                                     program=main)

    init, got = run_fluid(lambda: O.SGD(0.25), param_attr=attr,
                          before_minimize=before)
    largest = []

    def clip(params):
        largest.append(max(float(p.grad.abs().max()) for p in params))
        torch.nn.utils.clip_grad_value_(params, 0.0625)

    want = run_torch(init, lambda p: torch.optim.SGD(p, lr=0.25), clip=clip)
    assert max(largest) > 0.0625  # the clip was active
    assert_histories(got, want)


def test_exponential_and_piecewise_schedules_match_torch():
    needs_torch()
    lr_sched = torch.optim.lr_scheduler

    def exp_opt():
        return O.SGD(L.exponential_decay(0.5, 1, 0.5))

    init, got = run_fluid(exp_opt)
    want = run_torch(init, lambda p: torch.optim.SGD(p, lr=0.5),
                     schedule=lambda o: lr_sched.ExponentialLR(o, 0.5))
    assert_histories(got, want)

    def piece_opt():
        return O.Momentum(L.piecewise_decay([2, 4], [0.5, 0.25, 0.125]),
                          momentum=0.5)

    init, got = run_fluid(piece_opt)
    want = run_torch(
        init, lambda p: torch.optim.SGD(p, lr=0.5, momentum=0.5),
        schedule=lambda o: lr_sched.MultiStepLR(o, [2, 4], gamma=0.5))
    assert_histories(got, want)


def naive(init, rule):
    """Plain SGD-shaped loop: rule(name, p, g, state) -> new p."""
    p = {n: v.reshape(-1).copy() for n, v in init.items()}
    state = {n: {} for n in p}
    history = []
    for x, y in batches():
        w = p["fc_0.w_0"].reshape(4, 3)
        d = 2 * (x @ w + p["fc_0.b_0"] - y) / y.size
        grads = {"fc_0.w_0": (x.T @ d).reshape(-1),
                 "fc_0.b_0": d.sum(axis=0)}
        for n in p:
            p[n] = rule(n, p[n], grads[n], state[n])
        history.append({n: v.copy() for n, v in p.items()})
    return history


def test_decayed_adagrad_and_lars_match_numpy():
    def decayed(n, p, g, s):
        s["m"] = 0.875 * s.get("m", 0) + 0.125 * g * g
        return p - 0.125 * g / (np.sqrt(s["m"]) + 2.0 ** -20)

    init, got = run_fluid(lambda: O.DecayedAdagrad(0.125, decay=0.875,
                                                   epsilon=2.0 ** -20))
    assert_histories(got, naive(init, decayed))

    def lars(n, p, g, s):
        pn, gn = np.linalg.norm(p), np.linalg.norm(g)
        lr = 0.5 * 0.125 * pn / (gn + 0.0625 * pn) if pn > 0 and gn > 0 \
            else 0.5
        s["v"] = 0.5 * s.get("v", 0) + lr * (g + 0.0625 * p)
        return p - s["v"]

    init, got = run_fluid(lambda: O.LarsMomentum(
        0.5, 0.5, lars_coeff=0.125, lars_weight_decay=0.0625))
    assert_histories(got, naive(init, lars))


def test_param_attr_l1_overrides_optimizer_l2():
    attr = fluid.ParamAttr(regularizer=fluid.regularizer.L1Decay(0.25))
    init, got = run_fluid(
        lambda: O.SGD(0.125, regularization=(
            fluid.regularizer.L2DecayRegularizer(0.5))), param_attr=attr)

    def rule(n, p, g, s):
        decay = 0.25 * np.sign(p) if n == "fc_0.w_0" else 0.5 * p
        return p - 0.125 * (g + decay)

    assert_histories(got, naive(init, rule))


def test_minimize_parameter_list_and_no_grad_set():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float64")
        loss = L.mean(L.fc(x, 3))
        ops, pg = O.Adagrad(0.1).minimize(loss, parameter_list=["fc_0.w_0"])
    assert [p.name for p, _ in pg] == ["fc_0.w_0"]
    assert [op["type"] for op in ops] == ["adagrad"]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float64")
        loss = L.mean(L.fc(x, 3))
        _, pg = O.SGD(0.1).minimize(loss, no_grad_set={"fc_0.b_0"})
    assert [p.name for p, _ in pg] == ["fc_0.w_0"]


def test_clip_layer_and_schedules_run():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [5], dtype="float64")
        y = L.clip(x, min=-0.5, max=0.25)
        lrs = [L.natural_exp_decay(1.0, 2, 0.5, staircase=True),
               L.inverse_time_decay(1.0, 2, 0.5),
               L.polynomial_decay(1.0, 4, cycle=True),
               L.noam_decay(64, 2),
               L.cosine_decay(1.0, 2, 3),
               L.linear_lr_warmup(L.exponential_decay(1.0, 1, 0.5), 2, 0.0,
                                  1.0)]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    xs = np.linspace(-1, 1, 10).reshape(2, 5)
    for step in range(4):
        out = exe.run(main, feed={"x": xs}, fetch_list=[y] + lrs, scope=scope)
        np.testing.assert_array_equal(out[0], np.clip(xs, -0.5, 0.25))
        rates = [float(np.asarray(r).reshape(-1)[0]) for r in out[1:]]
        assert rates[0] == pytest.approx(np.exp(-0.5 * (step // 2)))
        assert rates[1] == pytest.approx(1 / (1 + 0.5 * step / 2))
        n = step + 1
        assert rates[3] == pytest.approx(64 ** -0.5 * min(n ** -0.5,
                                                          n * 2 ** -1.5))
        assert rates[4] == pytest.approx(
            0.5 * (np.cos((step // 2) * np.pi / 3) + 1), rel=1e-6)
        want = step / 2 if step < 2 else 0.5 ** step
        assert rates[5] == pytest.approx(want)
    assert np.asarray(scope.get("@LR_DECAY_COUNTER@")).reshape(-1)[0] == 3


def test_bad_knobs_are_clear_errors():
    with pytest.raises(ValueError, match="regularization_coeff"):
        fluid.regularizer.L2Decay(-1)
    with pytest.raises(ValueError, match="clip_norm"):
        fluid.clip.GradientClipByGlobalNorm(0)
    with pytest.raises(ValueError, match="min"):
        fluid.clip.GradientClipByValue(max=-1.0, min=1.0)
    with pytest.raises(TypeError, match="regularization"):
        O.SGD(0.1, regularization=0.5)
    with pytest.raises(TypeError, match="learning_rate"):
        O.Adagrad("fast")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        with pytest.raises(Exception, match="values"):
            L.piecewise_decay([1, 2], [0.1])
        with pytest.raises(ValueError, match="not a parameter"):
            fluid.clip.set_gradient_clip(
                fluid.clip.GradientClipByNorm(1.0), param_list=["nope"])


def test_schedule_resumes_from_a_checkpoint(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float64")
        loss = L.mean(L.fc(x, 3))
        lr = L.exponential_decay(1.0, 1, 0.5)
        O.SGD(lr).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x": np.ones((2, 4))}
    first = fluid.Scope()
    exe.run(startup, scope=first)
    for _ in range(3):
        exe.run(main, feed=feed, scope=first)
    fluid.io.save_persistables(exe, str(tmp_path), main, scope=first, step=3)
    second = fluid.Scope()
    exe.run(startup, scope=second)
    fluid.io.load_persistables(exe, str(tmp_path), main, scope=second)
    (rate,) = exe.run(main, feed=feed, fetch_list=[lr], scope=second)
    assert float(np.asarray(rate).reshape(-1)[0]) == 0.5 ** 3
