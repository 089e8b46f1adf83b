"""Mixed precision from Python: fluid.contrib.mixed_precision.decorate
(Fluid 1.x's names and defaults), DistributedStrategy.amp, the 16-bit
dtypes at the numpy boundary (float16 <-> np.float16, bfloat16 <-> the bits
as np.uint16, as Fluid hands them out), and training that matches float32
and, under mpirun, stays bitwise identical across ranks."""
import numpy as np
import pytest

import fluid
from fluid.contrib import mixed_precision
from fluid1x_common import (CLASSES, FEATURES, global_batch, load_results,
                            mpirun)


def run_cast(values, dtype):
    """values (float32) through layers.cast to `dtype`, fetched."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", shape=[values.size],
                              append_batch_size=False)
        y = fluid.layers.cast(x, dtype)
    exe = fluid.Executor(fluid.CPUPlace())
    (out,) = exe.run(main, feed={"x": values}, fetch_list=[y])
    return np.asarray(out)


def test_float16_casts_round_as_numpy_does():
    rng = np.random.RandomState(3)
    values = np.concatenate([
        rng.randn(4000) * 10.0 ** rng.randint(-9, 6, 4000),
        [65504, 65519.99, 65520, 1e9, -1e9, 6e-8, 2.9e-8, 0, -0.0, np.inf,
         -np.inf]]).astype(np.float32)
    got = run_cast(values, "float16")
    assert got.dtype == np.float16
    with np.errstate(over="ignore"):  # beyond 65504: infinity, as ours
        want = values.astype(np.float16)
    assert got.view(np.uint16).tolist() == want.view(np.uint16).tolist()


def test_every_float16_value_widens_exactly():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    halves = bits.view(np.float16)
    finite = np.isfinite(halves)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", shape=[65536], dtype="float16",
                              append_batch_size=False)
        y = fluid.layers.cast(x, "float32")
    (out,) = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": halves}, fetch_list=[y])
    out = np.asarray(out)
    assert out[finite].tolist() == halves[finite].astype(np.float32).tolist()
    assert np.isnan(out[np.isnan(halves)]).all()


def test_bfloat16_casts_round_as_torch_does():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(4)
    values = (rng.randn(5000) * 10.0 ** rng.randint(-30, 30, 5000)).astype(
        np.float32)
    got = run_cast(values, "bfloat16")
    assert got.dtype == np.uint16  # the bits, as Fluid gives bf16 out
    want = torch.from_numpy(values).bfloat16().view(torch.int16).numpy()
    assert got.tolist() == want.view(np.uint16).tolist()


def build_mlp(seed=5):
    """A 16-32-4 classifier; (main, startup, loss, feeds)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", shape=[FEATURES])
        y = fluid.layers.data("y", shape=[1], dtype="int64")
        h = fluid.layers.fc(x, 32, act="relu")
        logits = fluid.layers.fc(h, CLASSES)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, y))
    return main, startup, loss


def train(decorate_args=None, steps=12, optimizer=None, poison=None,
          batches=None):
    """Losses of `steps` steps of the mlp (on global batches 0, 1, ...,
    or on `batches`), decorated when asked; and the decorated optimizer,
    the scope and the main program."""
    main, startup, loss = build_mlp()
    opt = optimizer or fluid.optimizer.Momentum(learning_rate=0.1,
                                                momentum=0.9)
    if decorate_args is not None:
        opt = mixed_precision.decorate(opt, **decorate_args)
    with fluid.program_guard(main, startup):
        opt.minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = []
    for step in (batches if batches is not None else range(steps)):
        x, y = global_batch(step)
        if poison is not None and step == poison:
            x = x.copy()
            x[0, 0] = 1e30
        (value,) = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss],
                           scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
    return losses, opt, scope, main


def test_decorate_bf16_trains_like_float32():
    want, _, _, _ = train()
    got, opt, _, main = train({"use_bf16": True})
    assert opt.get_loss_scaling() is None
    assert "cast" in [op.type for op in main.global_block().ops]
    np.testing.assert_allclose(got, want, rtol=1e-2)


def test_decorate_fp16_scales_and_skips_an_overflow():
    args = {"init_loss_scaling": 64.0, "decr_every_n_nan_or_inf": 1,
            "decr_ratio": 0.5, "incr_every_n_steps": 100}
    want, _, _, _ = train()
    losses, opt, scope, main = train(args, steps=6, poison=3)
    scaling = opt.get_loss_scaling()
    assert scaling.name == "loss_scaling" and scaling.persistable
    value = np.array(scope.find_var(scaling.name).get_tensor())
    assert value.tolist() == [32.0]
    np.testing.assert_allclose(losses[:3], want[:3], rtol=1e-2)
    assert not np.isfinite(losses[3])
    # The skipped step left parameters and momentum as they were: the next
    # steps are those of a run that never saw step 3's batch (its scale
    # stayed 64: a power of two apart, so the same values up to fp16's
    # gradual underflow).
    never, _, _, _ = train(args, batches=[0, 1, 2, 4, 5])
    np.testing.assert_allclose(losses[4:], never[3:], rtol=1e-4)


def test_decorate_defaults_are_fluids():
    import inspect
    sig = inspect.signature(mixed_precision.decorate)
    assert sig.parameters["init_loss_scaling"].default == 2.0 ** 15
    assert sig.parameters["incr_every_n_steps"].default == 1000
    assert sig.parameters["decr_every_n_nan_or_inf"].default == 2
    assert sig.parameters["incr_ratio"].default == 2.0
    assert sig.parameters["decr_ratio"].default == 0.8
    assert sig.parameters["use_dynamic_loss_scaling"].default is True


def test_amp_lists_errors_name_the_op():
    lists = mixed_precision.AutoMixedPrecisionLists(
        custom_black_list={"conv2d"})
    assert "conv2d" in lists.black_list and "conv2d" not in lists.white_list
    with pytest.raises(ValueError, match="'relu' is in both"):
        mixed_precision.AutoMixedPrecisionLists(custom_white_list=["relu"],
                                                custom_black_list=["relu"])
    with pytest.raises(Exception, match="'no_such_op', which does not exist"):
        mixed_precision.AutoMixedPrecisionLists(custom_white_list=["no_such_op"])
    with pytest.raises(Exception, match="decr_ratio"):
        mixed_precision.decorate(fluid.optimizer.SGD(0.1), decr_ratio=1.5)


def test_strategy_amp_fields():
    s = fluid.DistributedStrategy()
    s.amp = True
    s.amp_configs = {"dtype": "fp16", "custom_white_list": ["relu"],
                     "init_loss_scaling": 1024.0}
    assert s.amp_configs["custom_white_list"] == ["relu"]
    assert s.amp_configs["dtype"] == "fp16"
    again = fluid.DistributedStrategy.from_text(str(s))
    assert again == s
    with pytest.raises(ValueError, match="dtype"):
        s.amp_configs = {"dtype": "fp8"}


@pytest.mark.parametrize("nranks", [2, 4])
def test_bf16_ranks_stay_identical(tmp_path, nranks):
    r = mpirun("mpi_mixed_precision.py", nranks, "bf16", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = load_results(str(tmp_path), "bf16", nranks)
    names = sorted(k for k in runs[0] if k.startswith("param/"))
    assert names
    for run in runs[1:]:
        for k in names:
            assert run[k].tobytes() == runs[0][k].tobytes(), k
    # N x B against 1 x NB: the same within bf16's tolerance. Each rank's
    # forward pass rounds its own activations and the gradients travel as
    # bf16 (8 significant bits); over 20 steps the parameters stay within 1%
    # of the single process's, measured as a whole (single elements near
    # zero can differ by more than themselves).
    for k in names:
        got, want = runs[0][k], runs[0]["ref/" + k[6:]]
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert err < 1e-2, f"{k}: relative difference {err:.2e}"
    # The ranks' mean losses (equal shares) are the global batch's loss.
    mean = np.mean([run["losses"] for run in runs], axis=0)
    np.testing.assert_allclose(mean, runs[0]["ref_losses"], rtol=1e-2)


def test_fp16_overflow_on_one_rank_skips_on_all(tmp_path):
    r = mpirun("mpi_mixed_precision.py", 2, "fp16_poison", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = load_results(str(tmp_path), "fp16_poison", 2)
    for k in runs[0]:
        if k.startswith("param/") or k.startswith("extra/"):
            assert runs[1][k].tobytes() == runs[0][k].tobytes(), k
    # The poisoned step changed nothing but the scale, on both ranks.
    assert runs[0]["extra/scale"].tolist() == [32.0]
    assert runs[0]["extra/unchanged"].tolist() == [1]


def test_bf16_composes_with_the_distributed_features(tmp_path):
    """bf16 with sync batch norm, a sparse embedding, global-norm clipping
    and L2 decay, at np 2: ranks bitwise identical; sharded (stage 2) the
    same training within bf16's tolerance."""
    r = mpirun("mpi_mixed_precision.py", 2, "composed", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = load_results(str(tmp_path), "composed", 2)
    names = sorted(k for k in runs[0] if k.startswith("param/"))
    for k in names:
        assert runs[1][k].tobytes() == runs[0][k].tobytes(), k
        assert runs[1]["ref/" + k[6:]].tobytes() == \
            runs[0]["ref/" + k[6:]].tobytes(), k
        got, want = runs[0]["ref/" + k[6:]], runs[0][k]
        err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-12)
        assert err < 2e-2, f"{k}: sharded differs by {err:.2e}"
    assert np.isfinite(runs[0]["losses"]).all()
