"""Layers: each appends its ops to the current main program (and its
parameters' initialisers to the startup program) through the C++ builder,
and returns the output Variable.

Every layer is declared once, in C++ (src/builder/layers.cc, REGISTER_LAYER),
with its arguments named as here; a function below only checks and converts
its Python arguments (Variables to names, Fluid's spellings of sizes and
param attrs) and passes them on by name through `_layer`.
"""
from . import clip as _clip
from . import regularizer as _regularizer
from .framework import current_builder
# The learning-rate schedules, in a module of their own as in Fluid.
from .learning_rate_scheduler import (  # noqa: F401
    cosine_decay, exponential_decay, inverse_time_decay, linear_lr_warmup,
    natural_exp_decay, noam_decay, piecewise_decay, polynomial_decay)


def _name(x, layer="layer", arg="input"):
    """The variable name of a layer argument: a Variable or a name."""
    if hasattr(x, "name"):
        return x.name
    if isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):
        raise TypeError(
            f"{layer}({arg}=...): got a {type(x).__name__} of "
            f"{len(x)}; this layer takes one Variable (several inputs are "
            "not supported here yet: combine them first, e.g. with "
            "elementwise_add)")
    raise TypeError(f"{layer}({arg}=...): expected a Variable, got "
                    f"{type(x).__name__}")


def _attr(attr, layer="layer", arg="param_attr"):
    """ParamAttr as a dict for the builder (None: defaults; False: no such
    parameter). Takes what Fluid takes: None or True (defaults), a
    ParamAttr, a dict, or a string (the parameter's name); False only where
    the layer can go without the parameter (bias_attr)."""
    if attr is None or attr is True:
        return None
    if attr is False:
        if arg == "bias_attr":
            return False  # the layer goes without this parameter
        raise TypeError(f"{layer}({arg}=False): a layer cannot go without "
                        "its weight; pass None for the default")
    if isinstance(attr, str):
        return {"name": attr}
    if isinstance(attr, dict):
        return attr
    if isinstance(attr, ParamAttr):
        return attr.to_dict()
    raise TypeError(f"{layer}({arg}=...): expected a ParamAttr, a dict, a "
                    f"name, None or a bool, got {type(attr).__name__}")


def _square(value, layer, arg):
    """An int from an int or a pair of equal ints (Fluid takes both)."""
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and value[0] == value[1]:
            value = value[0]
        else:
            raise ValueError(
                f"{layer}({arg}={list(value)}): only square sizes (one int, "
                "or two equal ints) are supported")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{layer}({arg}=...): expected an int or a pair of "
                        f"ints, got {type(value).__name__}")
    return value


class ParamAttr:
    def __init__(self, name=None, initializer=None, trainable=True,
                 regularizer=None, gradient_clip=None):
        self.name, self.initializer, self.trainable = name, initializer, trainable
        # fluid.regularizer.L1Decay/L2Decay (overrides the optimizer's) and
        # a fluid.clip.GradientClipBy* of this parameter.
        self.regularizer, self.gradient_clip = regularizer, gradient_clip

    def to_dict(self):
        d = {"trainable": self.trainable}
        if self.name:
            d["name"] = self.name
        if self.initializer is not None:
            d["initializer"] = dict(self.initializer)
        if self.regularizer is not None:
            d["regularizer"] = _regularizer._as_dict(self.regularizer,
                                                     "ParamAttr")
        if self.gradient_clip is not None:
            d["gradient_clip"] = _clip._as_dict(self.gradient_clip,
                                                "ParamAttr")
        return d


def _layer(type, **args):
    """Builds the C++ layer `type` with `args` (its argument names) and
    returns its output Variable (a tuple of them for several outputs). None
    stands for an argument's default."""
    b, program = current_builder()
    outs = [program.var(name) for name in b.layer(type, args)]
    return outs[0] if len(outs) == 1 else tuple(outs)


def data(name, shape, dtype="float32", append_batch_size=True):
    return _layer("data", name=name, shape=list(shape), dtype=dtype,
                  append_batch_size=append_batch_size)


def fc(input, size, act=None, num_flatten_dims=1, param_attr=None,
       bias_attr=None):
    return _layer("fc", input=_name(input, "fc"), size=size, act=act,
                  num_flatten_dims=num_flatten_dims,
                  param_attr=_attr(param_attr, "fc", "param_attr"),
                  bias_attr=_attr(bias_attr, "fc", "bias_attr"))


def conv2d(input, num_filters, filter_size, stride=1, padding=0, act=None,
           param_attr=None, bias_attr=None):
    return _layer("conv2d", input=_name(input, "conv2d"),
                  num_filters=num_filters,
                  filter_size=_square(filter_size, "conv2d", "filter_size"),
                  stride=_square(stride, "conv2d", "stride"),
                  padding=_square(padding, "conv2d", "padding"), act=act,
                  param_attr=_attr(param_attr, "conv2d", "param_attr"),
                  bias_attr=_attr(bias_attr, "conv2d", "bias_attr"))


def pool2d(input, pool_size, pool_type="max", pool_stride=1, pool_padding=0,
           global_pooling=False):
    return _layer("pool2d", input=_name(input, "pool2d"),
                  pool_size=_square(pool_size, "pool2d", "pool_size"),
                  pool_type=pool_type,
                  pool_stride=_square(pool_stride, "pool2d", "pool_stride"),
                  pool_padding=_square(pool_padding, "pool2d",
                                       "pool_padding"),
                  global_pooling=global_pooling)


def relu(x):
    return _layer("relu", x=_name(x))


def sigmoid(x):
    return _layer("sigmoid", x=_name(x))


def tanh(x):
    return _layer("tanh", x=_name(x))


def _activation(layer, x, name, **attrs):
    """A one-input activation layer with its attributes; `name` (None: the
    op type) prefixes the output variable's name."""
    return _layer(layer, x=_name(x, layer, "x"), **attrs, name=name)


def leaky_relu(x, alpha=0.02, name=None):
    return _activation("leaky_relu", x, name, alpha=alpha)


def elu(x, alpha=1.0, name=None):
    return _activation("elu", x, name, alpha=alpha)


def relu6(x, threshold=6.0, name=None):
    return _activation("relu6", x, name, threshold=threshold)


def exp(x, name=None):
    return _activation("exp", x, name)


def log(x, name=None):
    return _activation("log", x, name)


def sqrt(x, name=None):
    return _activation("sqrt", x, name)


def square(x, name=None):
    return _activation("square", x, name)


def abs(x, name=None):
    return _activation("abs", x, name)


def pow(x, factor=1.0, name=None):
    return _activation("pow", x, name, factor=factor)


def softplus(x, name=None):
    return _activation("softplus", x, name)


def softsign(x, name=None):
    return _activation("softsign", x, name)


def brelu(x, t_min=0.0, t_max=24.0, name=None):
    return _activation("brelu", x, name, t_min=t_min, t_max=t_max)


def softmax(x):
    return _layer("softmax", x=_name(x))


def cross_entropy(input, label):
    return _layer("cross_entropy", input=_name(input), label=_name(label))


def softmax_with_cross_entropy(logits, label):
    return _layer("softmax_with_cross_entropy", logits=_name(logits),
                  label=_name(label))


def mean(x):
    return _layer("mean", x=_name(x))


def accuracy(input, label):
    return _layer("accuracy", input=_name(input), label=_name(label))


def reshape(x, shape):
    return _layer("reshape", x=_name(x), shape=list(shape))


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None,
          name=None):
    return _layer("scale", x=_name(x, "scale", "x"), scale=float(scale),
                  bias=float(bias), bias_after_scale=bias_after_scale,
                  act=act, name=name)


def fill_constant(shape, dtype, value):
    return _layer("fill_constant", shape=list(shape), dtype=dtype,
                  value=float(value))


def _elementwise(type, x, y, axis, act, name):
    return _layer(type, x=_name(x, type, "x"), y=_name(y, type, "y"),
                  axis=axis, act=act, name=name)


def elementwise_add(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_add", x, y, axis, act, name)


def elementwise_sub(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_sub", x, y, axis, act, name)


def elementwise_mul(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_mul", x, y, axis, act, name)


def elementwise_div(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_div", x, y, axis, act, name)


def elementwise_max(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_max", x, y, axis, act, name)


def elementwise_min(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_min", x, y, axis, act, name)


def elementwise_pow(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_pow", x, y, axis, act, name)


# ---- training knobs: clip ----

def clip(x, min, max, name=None):
    """min(max(x, min), max) elementwise; the gradient is 0 outside."""
    return _layer("clip", x=_name(x, "clip", "x"), min=min, max=max,
                  name=name)

