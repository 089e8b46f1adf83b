"""Parameter initialisers, as Fluid names them. Each is an object that
ParamAttr(initializer=...) takes; it becomes one op of the startup program
(fill_constant, uniform_random, gaussian_random,
truncated_gaussian_random or assign_value), built in C++
(src/builder/initializer.cc). A seed of 0 draws one from the program's
random_seed sequence.

Fans: an fc weight [in, out] has fan_in = in, fan_out = out; a conv filter
[M, C / groups, kh, kw] has fan_in = C / groups * kh * kw and
fan_out = M * kh * kw.
"""

import contextlib

__all__ = [
    "Constant", "Uniform", "Normal", "TruncatedNormal", "Xavier", "MSRA",
    "Bilinear", "ConstantInitializer", "UniformInitializer",
    "NormalInitializer", "TruncatedNormalInitializer", "XavierInitializer",
    "MSRAInitializer", "BilinearInitializer", "force_init_on_cpu",
    "init_on_cpu",
]

_force_init_on_cpu = False


def force_init_on_cpu():
    """Whether the code runs inside init_on_cpu(), as Fluid's. Here it
    changes nothing: a var lives where the executor runs.

        >>> with fluid.initializer.init_on_cpu():
        ...     assert fluid.initializer.force_init_on_cpu()
    """
    return _force_init_on_cpu


@contextlib.contextmanager
def init_on_cpu():
    """Fluid's block for initialising variables on the CPU. Accepted, and
    changes nothing here: a var lives where the executor runs.

        >>> with fluid.initializer.init_on_cpu():
        ...     step = fluid.layers.create_global_var(
        ...         [1], 0.0, "float32", persistable=True)
    """
    global _force_init_on_cpu
    saved, _force_init_on_cpu = _force_init_on_cpu, True
    try:
        yield
    finally:
        _force_init_on_cpu = saved


def _seed(seed, name):
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"{name}(seed={seed!r}): the seed must be a "
                         "non-negative int (0: from the program's seed)")
    return seed


def _fan(value, name, arg):
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name}({arg}={value!r}): must be a positive int "
                         "or None (computed from the weight's shape)")
    return value


class Initializer:
    """Base class: to_dict() is what the builder reads."""

    def to_dict(self):
        """The initializer as the C++ builder reads it: {"kind": ..., and
        its settings}, the dict form ParamAttr(initializer=...) also
        takes."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({self.to_dict()})"


class ConstantInitializer(Initializer):
    """Fills the parameter with `value` (op `fill_constant`); force_cpu is
    accepted for Fluid's signature.

        >>> attr = fluid.ParamAttr(
        ...     initializer=fluid.initializer.Constant(0.5))
    """

    def __init__(self, value=0.0, force_cpu=False):
        self.value = float(value)

    def to_dict(self):
        return {"kind": "constant", "value": self.value}


class UniformInitializer(Initializer):
    """Draws each element from U(low, high) (op `uniform_random`); seed 0
    takes one from the program's random_seed. diag_num, diag_step and
    diag_val (Fluid's diagonal fill) are accepted at their defaults (0, 0,
    1.0); another diag_num raises NotImplementedError.

        >>> init = fluid.initializer.Uniform(low=-0.1, high=0.1)
        >>> w = fluid.layers.fc(x, 10, param_attr=fluid.ParamAttr(
        ...     initializer=init))
    """

    def __init__(self, low=-1.0, high=1.0, seed=0, diag_num=0, diag_step=0,
                 diag_val=1.0):
        if diag_num != 0:
            raise NotImplementedError(
                f"Uniform(diag_num={diag_num!r}): the diagonal fill is not "
                "supported; initialise with Uniform, then write the "
                "diagonal values into the parameter after the startup "
                "program has run (scope.find_var(name).get_tensor().set("
                "array, place))")
        if not float(low) < float(high):
            raise ValueError(f"Uniform(low={low}, high={high}): low must be "
                             "below high")
        self.low, self.high = float(low), float(high)
        self.seed = _seed(seed, "Uniform")

    def to_dict(self):
        return {"kind": "uniform", "low": self.low, "high": self.high,
                "seed": self.seed}


class NormalInitializer(Initializer):
    """Draws each element from N(loc, scale^2) (op `gaussian_random`);
    seed 0 takes one from the program's random_seed.

        >>> init = fluid.initializer.Normal(loc=0.0, scale=0.02)
    """

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        if not float(scale) >= 0.0:
            raise ValueError(f"Normal(scale={scale}): the standard deviation "
                             "must be non-negative")
        self.loc, self.scale = float(loc), float(scale)
        self.seed = _seed(seed, "Normal")

    def to_dict(self):
        return {"kind": "gaussian", "mean": self.loc, "std": self.scale,
                "seed": self.seed}


class TruncatedNormalInitializer(Initializer):
    """N(loc, scale^2) truncated to [loc - 2 scale, loc + 2 scale]: values
    outside are redrawn (truncated_gaussian_random)."""

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        if not float(scale) >= 0.0:
            raise ValueError(f"TruncatedNormal(scale={scale}): the standard "
                             "deviation must be non-negative")
        self.loc, self.scale = float(loc), float(scale)
        self.seed = _seed(seed, "TruncatedNormal")

    def to_dict(self):
        return {"kind": "truncated_gaussian", "mean": self.loc,
                "std": self.scale, "seed": self.seed}


class XavierInitializer(Initializer):
    """Glorot: U(-sqrt(6 / (fan_in + fan_out)), +...) when uniform, else
    N(0, sqrt(2 / (fan_in + fan_out)))."""

    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        self.uniform = bool(uniform)
        self.fan_in = _fan(fan_in, "Xavier", "fan_in")
        self.fan_out = _fan(fan_out, "Xavier", "fan_out")
        self.seed = _seed(seed, "Xavier")

    def to_dict(self):
        return {"kind": "xavier_uniform" if self.uniform else "xavier_normal",
                "fan_in": self.fan_in, "fan_out": self.fan_out,
                "seed": self.seed}


class MSRAInitializer(Initializer):
    """He / Kaiming: U(-sqrt(6 / fan_in), +...) when uniform, else
    N(0, sqrt(2 / fan_in))."""

    def __init__(self, uniform=True, fan_in=None, seed=0):
        self.uniform = bool(uniform)
        self.fan_in = _fan(fan_in, "MSRA", "fan_in")
        self.seed = _seed(seed, "MSRA")

    def to_dict(self):
        return {"kind": ("kaiming_uniform" if self.uniform
                         else "kaiming_normal"),
                "fan_in": self.fan_in, "seed": self.seed}


class BilinearInitializer(Initializer):
    """The bilinear upsampling kernel, for a conv2d_transpose weight
    [C_out, C_in, k, k] (float32): with f = ceil(k / 2) and c = (2 f - 1 -
    f % 2) / (2 f), element (.., .., y, x) is (1 - |x / f - c|) *
    (1 - |y / f - c|), in every [k, k] slice. The weight must be 4-D with a
    square kernel (checked when the parameter is created)."""

    def __init__(self):
        pass

    def to_dict(self):
        return {"kind": "bilinear"}


Constant = ConstantInitializer
Uniform = UniformInitializer
Normal = NormalInitializer
TruncatedNormal = TruncatedNormalInitializer
Xavier = XavierInitializer
MSRA = MSRAInitializer
Bilinear = BilinearInitializer
