"""fluid.initializer.Bilinear and TruncatedNormal: Bilinear against Fluid
1.x's definition written out as a loop over the flat weight, and its shape
errors; TruncatedNormal's bounds, moments and distribution (against the
truncated normal CDF, and a two-sample test against torch's
trunc_normal_ when torch is importable)."""
import math

import numpy as np
import pytest

import fluid

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

I = fluid.initializer
L = fluid.layers


def _init(make_layer, init, dtype="float32", seed=7):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        make_layer(fluid.ParamAttr(name="w", initializer=init), dtype)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    return np.array(scope.get("w"))


def _conv(c, m, k):
    return lambda attr, dtype: L.conv2d(
        L.data("x", [c, 16, 16], dtype=dtype), m, k, param_attr=attr,
        bias_attr=False)


def _fc(attr, dtype):
    return L.fc(L.data("x", [5], dtype=dtype), 3, param_attr=attr)


def _fluid_bilinear(shape):
    """Fluid 1.x's BilinearInitializer, element by element."""
    weight = np.zeros(int(np.prod(shape)), dtype=np.float32)
    size = shape[3]
    f = np.ceil(size / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    for i in range(weight.size):
        x = i % size
        y = (i // size) % shape[2]
        weight[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    return weight.reshape(shape)


@pytest.mark.parametrize("c,m,k", [(2, 3, 4), (1, 1, 3), (3, 2, 5),
                                   (2, 2, 1)])
def test_bilinear_matches_fluid_definition(c, m, k):
    v = _init(_conv(c, m, k), I.Bilinear())
    assert v.shape == (m, c, k, k) and v.dtype == np.float32
    np.testing.assert_array_equal(v, _fluid_bilinear((m, c, k, k)))
    assert I.BilinearInitializer is I.Bilinear


def test_bilinear_upsamples_a_constant_image_to_a_constant():
    # k = 4 (factor 2): each output pixel of the transposed convolution gets
    # weights summing to 1 from the interior taps, i.e. the 1-D kernel's
    # even and odd taps each sum to 1.
    v = _init(_conv(1, 1, 4), I.Bilinear())[0, 0]
    k1 = np.array([0.25, 0.75, 0.75, 0.25])
    np.testing.assert_allclose(v, np.outer(k1, k1), rtol=1e-7)
    assert k1[0::2].sum() == k1[1::2].sum() == 1.0


def test_bilinear_bad_shapes_name_the_parameter():
    with pytest.raises(Exception, match=r"'w'.*4-D"):
        _init(_fc, I.Bilinear())
    nonsquare = lambda attr, dtype: L.conv2d(  # noqa: E731
        L.data("x", [1, 16, 16], dtype=dtype), 2, [3, 5], param_attr=attr)
    with pytest.raises(Exception, match=r"'w'.*square"):
        _init(nonsquare, I.Bilinear())
    with pytest.raises(Exception, match=r"'w'.*float32"):
        _init(_conv(1, 1, 4), I.Bilinear(), dtype="float64")


def _phi(z):
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_truncated_normal_distribution(dtype):
    loc, scale = 0.5, 2.0
    v = _init(_conv(16, 64, 5), I.TruncatedNormal(loc, scale, seed=11),
              dtype=dtype).astype(np.float64).ravel()
    assert v.size == 64 * 16 * 25
    assert v.min() >= loc - 2 * scale - 1e-5
    assert v.max() <= loc + 2 * scale + 1e-5
    z = np.sort((v - loc) / scale)
    mass = _phi(2.0) - _phi(-2.0)
    sd = math.sqrt(1 - 4 * math.exp(-2.0) / math.sqrt(2 * math.pi) / mass)
    n = z.size
    assert abs(z.mean()) < 5 * sd / math.sqrt(n)
    assert abs(z.std() - sd) < 5 / math.sqrt(2 * n)
    cdf = (np.array([_phi(t) for t in z]) - _phi(-2.0)) / mass
    ks = max(np.max(np.arange(1, n + 1) / n - cdf),
             np.max(cdf - np.arange(n) / n))
    assert ks < 1.95 / math.sqrt(n), ks  # p = 0.001


def test_truncated_normal_like_torch():
    if torch is None:
        pytest.skip("torch is not importable: no PyTorch reference")
    ours = _init(_conv(16, 64, 5), I.TruncatedNormal(0.0, 1.0, seed=3))
    ours = np.sort(ours.astype(np.float64).ravel())
    torch.manual_seed(0)
    ref = torch.nn.init.trunc_normal_(
        torch.empty(ours.size, dtype=torch.float64), mean=0.0, std=1.0,
        a=-2.0, b=2.0)
    ref = np.sort(ref.numpy())
    both = np.concatenate([ours, ref])
    f1 = np.searchsorted(ours, both, side="right") / ours.size
    f2 = np.searchsorted(ref, both, side="right") / ref.size
    d = np.abs(f1 - f2).max()
    assert d < 1.95 / math.sqrt(ours.size / 2), d  # two-sample KS, p = 0.001


def test_truncated_normal_arguments():
    assert I.TruncatedNormalInitializer is I.TruncatedNormal
    with pytest.raises(ValueError, match="scale"):
        I.TruncatedNormal(scale=-1.0)
    with pytest.raises(ValueError, match="seed"):
        I.TruncatedNormal(seed=-2)
    a = _init(_fc, I.TruncatedNormal(seed=5))
    b = _init(_fc, I.TruncatedNormal(seed=5))
    np.testing.assert_array_equal(a, b)
