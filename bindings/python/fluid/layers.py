"""Layers: each appends its ops to the current main program (and its
parameters' initialisers to the startup program) through the C++ builder,
and returns the output Variable."""
from .framework import current_builder


def _name(x):
    return x.name if hasattr(x, "name") else str(x)


def _attr(attr):
    """ParamAttr as a dict for the builder (None: defaults)."""
    if attr is None or attr is False or isinstance(attr, dict):
        return None if attr is False else attr
    return attr.to_dict()


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
    return _build("fc", _name(input), size, act or "", num_flatten_dims,
                  _attr(param_attr), _attr(bias_attr), bias_attr is not False)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, act=None,
           param_attr=None, bias_attr=None):
    return _build("conv2d", _name(input), num_filters, filter_size, stride,
                  padding, act or "", _attr(param_attr), _attr(bias_attr),
                  bias_attr is not False)


def pool2d(input, pool_size, pool_type="max", pool_stride=1, pool_padding=0,
           global_pooling=False):
    return _build("pool2d", _name(input), pool_size, pool_type, pool_stride,
                  pool_padding, global_pooling)


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
