"""Layers: each appends its ops to the current main program (and its
parameters' initialisers to the startup program) through the C++ builder,
and returns the output Variable."""
from .framework import current_builder


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
    """ParamAttr as a dict for the builder (None: defaults). Takes what
    Fluid takes: None or True (defaults), a ParamAttr, a dict, or a string
    (the parameter's name); False only where the layer can go without the
    parameter (bias_attr)."""
    if attr is None or attr is True:
        return None
    if attr is False:
        if arg == "bias_attr":
            return None
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
    def __init__(self, name=None, initializer=None, trainable=True):
        self.name, self.initializer, self.trainable = name, initializer, trainable

    def to_dict(self):
        d = {"trainable": self.trainable}
        if self.name:
            d["name"] = self.name
        if self.initializer is not None:
            d["initializer"] = dict(self.initializer)
        return d


def _build(method, *args):
    b, program = current_builder()
    return program.var(getattr(b, method)(*args))


def data(name, shape, dtype="float32", append_batch_size=True):
    return _build("data", name, list(shape), dtype, append_batch_size)


def fc(input, size, act=None, num_flatten_dims=1, param_attr=None,
       bias_attr=None):
    return _build("fc", _name(input, "fc"), size, act or "",
                  num_flatten_dims, _attr(param_attr, "fc", "param_attr"),
                  _attr(bias_attr, "fc", "bias_attr"), bias_attr is not False)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, act=None,
           param_attr=None, bias_attr=None):
    return _build("conv2d", _name(input, "conv2d"), num_filters,
                  _square(filter_size, "conv2d", "filter_size"),
                  _square(stride, "conv2d", "stride"),
                  _square(padding, "conv2d", "padding"), act or "",
                  _attr(param_attr, "conv2d", "param_attr"),
                  _attr(bias_attr, "conv2d", "bias_attr"),
                  bias_attr is not False)


def pool2d(input, pool_size, pool_type="max", pool_stride=1, pool_padding=0,
           global_pooling=False):
    return _build("pool2d", _name(input, "pool2d"),
                  _square(pool_size, "pool2d", "pool_size"), pool_type,
                  _square(pool_stride, "pool2d", "pool_stride"),
                  _square(pool_padding, "pool2d", "pool_padding"),
                  global_pooling)


def relu(x):
    return _build("activation", _name(x), "relu")


def sigmoid(x):
    return _build("activation", _name(x), "sigmoid")


def tanh(x):
    return _build("activation", _name(x), "tanh")


def softmax(x):
    return _build("activation", _name(x), "softmax")


def cross_entropy(input, label):
    return _build("cross_entropy", _name(input), _name(label))


def softmax_with_cross_entropy(logits, label):
    return _build("softmax_with_cross_entropy", _name(logits), _name(label))


def mean(x):
    return _build("mean", _name(x))


def accuracy(input, label):
    return _build("accuracy", _name(input), _name(label))


def reshape(x, shape):
    return _build("reshape", _name(x), list(shape))


def elementwise_add(x, y, axis=-1, act=None):
    return _build("elementwise_add", _name(x), _name(y), axis, act or "")
