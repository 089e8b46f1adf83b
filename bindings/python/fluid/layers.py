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


def _names(x, layer, arg="input"):
    """Names of a layer argument that takes a Variable or a list of them."""
    if isinstance(x, (list, tuple)):
        if not x:
            raise ValueError(f"{layer}({arg}=[]): needs at least one "
                             "Variable")
        return [_name(v, layer, arg) for v in x]
    return [_name(x, layer, arg)]


def _attr(attr, layer="layer", arg="param_attr"):
    """ParamAttr as a dict for the builder (None: defaults; False: no such
    parameter). Takes what Fluid's ParamAttr._to_attr takes: None or True
    (defaults), a ParamAttr, a dict, a string (the parameter's name), an
    initializer or a weight-decay regularizer (a default ParamAttr with
    it), or a list of one of these; False only where the layer can go
    without the parameter (bias_attr)."""
    if isinstance(attr, (list, tuple)):
        if len(attr) != 1:
            raise TypeError(f"{layer}({arg}=...): a list of {len(attr)} "
                            "param attrs, but this layer has one such "
                            "parameter; pass one attr")
        attr = attr[0]
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
    from .initializer import Initializer
    if isinstance(attr, Initializer):
        return ParamAttr(initializer=attr).to_dict()
    if isinstance(attr, _regularizer.WeightDecayRegularizer):
        return ParamAttr(regularizer=attr).to_dict()
    raise TypeError(f"{layer}({arg}=...): expected a ParamAttr, a dict, a "
                    "name, an initializer, a regularizer (L1Decay, "
                    f"L2Decay), None or a bool, got {type(attr).__name__}")


def _attrs(attr, count, layer, arg="param_attr"):
    """One param attr for every input (an attr, or a list of one: copied
    for each, as Fluid's LayerHelper.multiple_param_attr does), or a list
    of `count` (one per input)."""
    if not isinstance(attr, (list, tuple)):
        return _attr(attr, layer, arg)
    if len(attr) == 1:
        return _attr(attr[0], layer, arg)
    if len(attr) != count:
        raise ValueError(f"{layer}({arg}=...): a list of {len(attr)} param "
                         f"attrs for {count} inputs; give one attr (used "
                         "for every input) or one per input")
    return [_attr(a, layer, arg) or {} for a in attr]


def _size(value, layer, arg):
    """[h, w] from an int or a list/tuple of one or two ints."""
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(items) not in (1, 2) or any(
            isinstance(v, bool) or not isinstance(v, int) for v in items):
        raise TypeError(f"{layer}({arg}={value!r}): expected an int or two "
                        "ints [h, w]")
    return items * 2 if len(items) == 1 else items


class ParamAttr:
    """How a layer makes one of its parameters: its name (the same name in
    two layers is one shared parameter), initializer, learning-rate
    multiplier, its own weight decay (fluid.regularizer.L1Decay/L2Decay,
    overriding the optimizer's), its own gradient clip
    (fluid.clip.GradientClipBy*) and whether the optimizer updates it.
    do_model_average is accepted for Fluid's signature: nothing here
    averages parameters (Fluid's ModelAverage), so either value leaves
    training as it is."""

    def __init__(self, name=None, initializer=None, learning_rate=1.0,
                 regularizer=None, trainable=True, gradient_clip=None,
                 do_model_average=True):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"ParamAttr(name={name!r}): expected a str")
        if isinstance(learning_rate, bool) or not isinstance(
                learning_rate, (int, float)) or learning_rate < 0:
            raise ValueError(f"ParamAttr(learning_rate={learning_rate!r}): "
                             "expected a non-negative number")
        self.name, self.initializer = name, initializer
        self.learning_rate = float(learning_rate)
        self.regularizer, self.gradient_clip = regularizer, gradient_clip
        self.trainable = bool(trainable)
        self.do_model_average = bool(do_model_average)

    def to_dict(self):
        """The attr as the C++ builder reads it: a dict of the settings
        that differ from the defaults (name, initializer, learning_rate,
        regularizer, gradient_clip) and trainable."""
        d = {"trainable": self.trainable}
        if self.name:
            d["name"] = self.name
        if self.initializer is not None:
            init = self.initializer
            d["initializer"] = (init.to_dict() if hasattr(init, "to_dict")
                                else dict(init))
        if self.learning_rate != 1.0:
            d["learning_rate"] = self.learning_rate
        if self.regularizer is not None:
            d["regularizer"] = _regularizer._as_dict(self.regularizer,
                                                     "ParamAttr")
        if self.gradient_clip is not None:
            d["gradient_clip"] = _clip._as_dict(self.gradient_clip,
                                                "ParamAttr")
        return d


def _named(attr, name, suffix):
    """Fluid's LayerHelper naming: a layer given `name` names its parameters
    name.w_0, name.w_1, ... and name.b_0 (counted per name, so a second
    layer of that name gets name.w_1), unless the attr names one itself.
    `attr` as _attr returns it (None, False, a dict, or a list of them)."""
    if name is None or attr is False:
        return attr
    if isinstance(attr, list):
        return [_named(a, name, suffix) for a in attr]
    attr = dict(attr or {})
    if not attr.get("name"):
        from . import unique_name
        attr["name"] = unique_name.generate(f"{name}.{suffix}")
    return attr


def _layer(layer_type, /, **args):
    """Builds the C++ layer `layer_type` with `args` (its argument names,
    `type` among them for data) and returns its output Variable (a tuple
    of them for several outputs). None stands for an argument's
    default."""
    b, program = current_builder()
    outs = [program.var(name) for name in b.layer(layer_type, args)]
    return outs[0] if len(outs) == 1 else tuple(outs)


def data(name, shape, append_batch_size=True, dtype="float32", lod_level=0,
         type=None, stop_gradient=True):
    """Declares a variable the executor feeds (appends no op).

    name: the feed's name; shape: one example's shape (append_batch_size
    prepends the batch dim -1); dtype: "float32", "float64", "int32" or
    "int64" (or the NumPy dtype); lod_level=1: a batch of variable-length
    sequences of rows of `shape` (feed a fluid.LoDTensor, or let
    DataFeeder pack the samples). type: None or "LOD_TENSOR" (Fluid's
    VarType.LOD_TENSOR, the default; no other kind of var is fed here).
    stop_gradient=False: the backward pass computes the var's gradient
    (NAME@GRAD), as for any other var.

        >>> image = fluid.layers.data("image", [1, 28, 28])  # [-1, 1, 28, 28]
        >>> label = fluid.layers.data("label", [1], dtype="int64")
    """
    return _layer("data", name=name, shape=list(shape),
                  append_batch_size=append_batch_size,
                  dtype=_dtype_name(dtype, "data"), lod_level=lod_level,
                  type=_var_type(type), stop_gradient=stop_gradient)


def _var_type(type):
    """Fluid's VarType argument of data: None, a name such as
    "LOD_TENSOR", or an enum-like value with a `name`."""
    if type is None:
        return None
    name = getattr(type, "name", type)
    if not isinstance(name, str):
        raise TypeError(f"data(type={type!r}): expected None or "
                        "\"LOD_TENSOR\"")
    return name.rsplit(".", 1)[-1].upper()


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None,
       act=None, name=None):
    """act(sum over the inputs of input_i W_i + b): `input` is a Variable
    or a list of them, `param_attr` one attr for every weight or a list
    (one per input).

    Each input [N, ...] is flattened at num_flatten_dims to [N, K_i]; the
    weights fc_N.w_i are [K_i, size], the bias fc_N.b_0 [size] (with
    `name`, as in Fluid: name.w_0, name.w_1, ..., name.b_0); the output
    is [N, size] (the leading num_flatten_dims dims of input kept).

        >>> x = fluid.layers.data("x", [784])
        >>> h = fluid.layers.fc(x, size=128, act="relu")   # [-1, 128]
    """
    inputs = _names(input, "fc")
    weights = _attrs(param_attr, len(inputs), "fc")
    if name is not None and not isinstance(weights, list):
        weights = [weights or {}] * len(inputs)  # one name per weight
    return _layer("fc", input=inputs, size=size,
                  num_flatten_dims=num_flatten_dims,
                  param_attr=_named(weights, name, "w"),
                  bias_attr=_named(_attr(bias_attr, "fc", "bias_attr"), name,
                                   "b"),
                  act=act, name=name)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1,
           groups=None, param_attr=None, bias_attr=None, use_cudnn=True,
           act=None, name=None, data_format="NCHW"):
    """filter_size, stride, padding and dilation: an int or [h, w].
    groups (None: 1) splits channels and filters into that many groups.
    use_cudnn is accepted and ignored (one kernel per device); name names
    the parameters name.w_0 and name.b_0, as in Fluid (default:
    conv2d_N.*). data_format: "NCHW" only ("NHWC" raises
    NotImplementedError: transpose the input to NCHW).

    input: NCHW [N, C, H, W]; filter conv2d_N.w_0 [num_filters, C / groups,
    kh, kw]; output [N, num_filters, H_out, W_out] with H_out = (H + 2 *
    padding - dilation * (kh - 1) - 1) / stride + 1 (floored), then the
    bias and act.

        >>> image = fluid.layers.data("image", [3, 32, 32])
        >>> h = fluid.layers.conv2d(image, num_filters=16, filter_size=3,
        ...                         padding=1, act="relu")  # [-1, 16, 32, 32]
    """
    if groups is None:
        groups = 1
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"conv2d(groups={groups!r}): expected an int")
    return _layer("conv2d", input=_name(input, "conv2d"),
                  num_filters=num_filters,
                  filter_size=_size(filter_size, "conv2d", "filter_size"),
                  stride=_size(stride, "conv2d", "stride"),
                  padding=_size(padding, "conv2d", "padding"),
                  dilation=_size(dilation, "conv2d", "dilation"),
                  groups=groups,
                  param_attr=_named(_attr(param_attr, "conv2d",
                                          "param_attr"), name, "w"),
                  bias_attr=_named(_attr(bias_attr, "conv2d", "bias_attr"),
                                   name, "b"),
                  use_cudnn=use_cudnn, act=act, name=name,
                  data_format=data_format)


def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1,
           pool_padding=0, global_pooling=False, use_cudnn=True,
           ceil_mode=False, name=None, exclusive=True, data_format="NCHW"):
    """pool_size, pool_stride and pool_padding: an int or [h, w];
    pool_size may stay -1 only with global_pooling. exclusive: an average
    leaves padding out of its count. ceil_mode: output sizes rounded up
    (a last, partial window). use_cudnn is accepted and ignored; name
    names nothing. data_format: "NCHW" only ("NHWC" raises
    NotImplementedError: transpose the input to NCHW).

    pool_type "max" or "avg" over NCHW input; H_out = (H + 2 * padding -
    pool_size) / pool_stride + 1 (floored; rounded up with ceil_mode).

        >>> h = fluid.layers.data("h", [16, 32, 32])
        >>> p = fluid.layers.pool2d(h, pool_size=2, pool_type="max",
        ...                         pool_stride=2)      # [-1, 16, 16, 16]
    """
    return _layer("pool2d", input=_name(input, "pool2d"),
                  pool_size=_size(pool_size, "pool2d", "pool_size"),
                  pool_type=pool_type,
                  pool_stride=_size(pool_stride, "pool2d", "pool_stride"),
                  pool_padding=_size(pool_padding, "pool2d",
                                     "pool_padding"),
                  global_pooling=global_pooling, use_cudnn=use_cudnn,
                  ceil_mode=ceil_mode, name=name, exclusive=exclusive,
                  data_format=data_format)


def relu(x, name=None):
    """max(x, 0), elementwise (op `relu`).

    x: a float Variable of any shape; name: prefix of the output's name.
    The output has x's shape and dtype. The gradient is 0 where x <= 0.

        >>> x = fluid.layers.data("x", [16])
        >>> h = fluid.layers.relu(x)                       # [-1, 16]
    """
    return _activation("relu", x, name)


def sigmoid(x, name=None):
    """1 / (1 + exp(-x)), elementwise (op `sigmoid`).

    x: a float Variable of any shape; name: prefix of the output's name.
    The output has x's shape and dtype, with values in (0, 1).

        >>> x = fluid.layers.data("x", [16])
        >>> p = fluid.layers.sigmoid(x)                    # [-1, 16]
    """
    return _activation("sigmoid", x, name)


def tanh(x, name=None):
    """tanh(x), elementwise (op `tanh`).

    x: a float Variable of any shape; name: prefix of the output's name.
    The output has x's shape and dtype, with values in (-1, 1).

        >>> x = fluid.layers.data("x", [16])
        >>> h = fluid.layers.tanh(x)                       # [-1, 16]
    """
    return _activation("tanh", x, name)


def _activation(layer, x, name, **attrs):
    """A one-input activation layer with its attributes; `name` (None: the
    op type) prefixes the output variable's name."""
    return _layer(layer, x=_name(x, layer, "x"), **attrs, name=name)


def leaky_relu(x, alpha=0.02, name=None):
    """x where x > 0, else alpha * x, elementwise (op `leaky_relu`).

    x: a float Variable of any shape; alpha: the slope below 0 (Fluid's
    default 0.02); name: prefix of the output's name. The output has x's
    shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> h = fluid.layers.leaky_relu(x, alpha=0.1)      # [-1, 16]
    """
    return _activation("leaky_relu", x, name, alpha=alpha)


def elu(x, alpha=1.0, name=None):
    """x where x > 0, else alpha * (exp(x) - 1), elementwise (op `elu`).

    x: a float Variable of any shape; alpha: the scale of the negative part
    (default 1.0); name: prefix of the output's name. The output has x's
    shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> h = fluid.layers.elu(x, alpha=0.5)             # [-1, 16]
    """
    return _activation("elu", x, name, alpha=alpha)


def relu6(x, threshold=6.0, name=None):
    """min(max(x, 0), threshold), elementwise (op `relu6`).

    x: a float Variable of any shape; threshold: the upper bound (default
    6.0); name: prefix of the output's name. The output has x's shape and
    dtype; the gradient is 0 outside (0, threshold).

        >>> x = fluid.layers.data("x", [16])
        >>> h = fluid.layers.relu6(x)                      # [-1, 16]
    """
    return _activation("relu6", x, name, threshold=threshold)


def exp(x, name=None):
    """exp(x), elementwise (op `exp`).

    x: a float Variable of any shape; name: prefix of the output's name. The
    output has x's shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> e = fluid.layers.exp(x)                        # [-1, 16]
    """
    return _activation("exp", x, name)


def log(x, name=None):
    """The natural logarithm of x, elementwise (op `log`); NaN where x < 0,
    -inf where x == 0.

    x: a float Variable of any shape; name: prefix of the output's name. The
    output has x's shape and dtype.

        >>> p = fluid.layers.softmax(fluid.layers.data("logits", [10]))
        >>> logp = fluid.layers.log(p)                     # [-1, 10]
    """
    return _activation("log", x, name)


def sqrt(x, name=None):
    """sqrt(x), elementwise (op `sqrt`); NaN where x < 0.

    x: a float Variable of any shape; name: prefix of the output's name. The
    output has x's shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> r = fluid.layers.sqrt(fluid.layers.square(x))  # |x|, [-1, 16]
    """
    return _activation("sqrt", x, name)


def square(x, name=None):
    """x * x, elementwise (op `square`).

    x: a float Variable of any shape; name: prefix of the output's name. The
    output has x's shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> s = fluid.layers.square(x)                     # [-1, 16]
    """
    return _activation("square", x, name)


def abs(x, name=None):
    """|x|, elementwise (op `abs`); the gradient at 0 is 0.

    x: a float Variable of any shape; name: prefix of the output's name. The
    output has x's shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> a = fluid.layers.abs(x)                        # [-1, 16]
    """
    return _activation("abs", x, name)


def pow(x, factor=1.0, name=None):
    """x ^ factor, elementwise (op `pow`).

    x: a float Variable of any shape; factor: the exponent, a Python number
    (default 1.0; for a Variable exponent use elementwise_pow); name: prefix
    of the output's name. The output has x's shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> cube = fluid.layers.pow(x, factor=3.0)         # [-1, 16]
    """
    return _activation("pow", x, name, factor=factor)


def softplus(x, name=None):
    """log(1 + exp(x)), elementwise (op `softplus`).

    x: a float Variable of any shape; name: prefix of the output's name. The
    output has x's shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> h = fluid.layers.softplus(x)                   # [-1, 16]
    """
    return _activation("softplus", x, name)


def softsign(x, name=None):
    """x / (1 + |x|), elementwise (op `softsign`).

    x: a float Variable of any shape; name: prefix of the output's name. The
    output has x's shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> h = fluid.layers.softsign(x)                   # [-1, 16]
    """
    return _activation("softsign", x, name)


def brelu(x, t_min=0.0, t_max=24.0, name=None):
    """min(max(x, t_min), t_max), elementwise (op `brelu`, the bounded relu).

    x: a float Variable of any shape; t_min, t_max: the bounds (defaults 0.0
    and 24.0); name: prefix of the output's name. The output has x's shape
    and dtype; the gradient is 0 outside (t_min, t_max).

        >>> x = fluid.layers.data("x", [16])
        >>> h = fluid.layers.brelu(x, t_min=1.0, t_max=4.0)  # [-1, 16]
    """
    return _activation("brelu", x, name, t_min=t_min, t_max=t_max)


def softmax(input, use_cudnn=False, name=None, axis=-1):
    """Softmax over dim `axis` (-1: the last). An additive mask of -1e9
    gives exact zeros; a row masked everywhere gives no NaN (see
    ops/softmax_op.cc).

    input: a float Variable of any shape; the output has its shape.

        >>> logits = fluid.layers.fc(fluid.layers.data("x", [8]), 10)
        >>> probs = fluid.layers.softmax(logits)            # [-1, 10]
    """
    return _layer("softmax", input=_name(input, "softmax"),
                  use_cudnn=use_cudnn, name=name, axis=axis)


def cross_entropy(input, label, soft_label=False, ignore_index=-100):
    """Per-example cross entropy of probabilities (op `cross_entropy`):
    -log(input[i, label[i]]), or with soft_label -sum_j label[i, j] *
    log(input[i, j]).

    input: float probabilities [N, D] (a softmax's output; for logits use
    softmax_with_cross_entropy); label: int64 [N, 1] class ids, or with
    soft_label float probabilities [N, D]; ignore_index: a label whose
    example's loss is 0 (hard labels only). Returns the loss [N, 1].

        >>> probs = fluid.layers.fc(fluid.layers.data("x", [8]), 10,
        ...                         act="softmax")
        >>> label = fluid.layers.data("label", [1], dtype="int64")
        >>> loss = fluid.layers.mean(
        ...     fluid.layers.cross_entropy(probs, label))  # [1]
    """
    return _layer("cross_entropy", input=_name(input), label=_name(label),
                  soft_label=soft_label, ignore_index=ignore_index)


def softmax_with_cross_entropy(logits, label, soft_label=False,
                               ignore_index=-100, numeric_stable_mode=True,
                               return_softmax=False, axis=-1):
    """Per-example loss of softmax then cross entropy, in one numerically
    stable op (`softmax_with_cross_entropy`): -log(softmax(logits)[i,
    label[i]]), or with soft_label -sum_j label[i, j] *
    log(softmax(logits)[i, j]).

    logits: float scores [N, D] (any rank: the softmax is over dim `axis`,
    default -1, the last); label: int64 class ids of logits' shape with
    dim `axis` 1, or with soft_label float probabilities of logits' shape
    and dtype. ignore_index: hard labels equal to it give loss 0 and no
    gradient. Returns the loss, logits' shape with dim `axis` 1 (reduce it
    with mean), or with return_softmax (loss, softmax).
    numeric_stable_mode is accepted for Fluid's signature: the op always
    subtracts the row max, either value computes the same.

        >>> logits = fluid.layers.fc(fluid.layers.data("x", [8]), 10)
        >>> label = fluid.layers.data("label", [1], dtype="int64")
        >>> loss = fluid.layers.mean(
        ...     fluid.layers.softmax_with_cross_entropy(logits, label))
    """
    layer = "softmax_with_cross_entropy"
    return _layer(layer, logits=_name(logits, layer, "logits"),
                  label=_name(label, layer, "label"), soft_label=soft_label,
                  ignore_index=ignore_index,
                  numeric_stable_mode=numeric_stable_mode,
                  return_softmax=return_softmax, axis=axis)


def mean(x, name=None):
    """The mean of all elements of x (op `mean`), shape [1]: the usual way to
    turn a per-example loss into the scalar minimize() takes.

    x: a float Variable of any shape; name: prefix of the output's name.

        >>> per_example = fluid.layers.square_error_cost(pred, label)
        >>> loss = fluid.layers.mean(per_example)          # [1]
    """
    return _activation("mean", x, name)


def accuracy(input, label, k=1, correct=None, total=None):
    """Top-k accuracy of a batch (op `accuracy`): the fraction of examples
    whose label is among the k highest scores of input, shape [1].

    input: float scores [N, D] (logits or probabilities); label: int64
    class ids [N, 1]; k: how many of the best scores count as a hit
    (default 1); correct, total: int64 Variables [1] that, when given,
    receive the number of hits and of examples. No gradient.

        >>> logits = fluid.layers.fc(fluid.layers.data("x", [8]), 10)
        >>> label = fluid.layers.data("label", [1], dtype="int64")
        >>> acc = fluid.layers.accuracy(logits, label, k=1)   # [1]
    """
    return _layer("accuracy", input=_name(input), label=_name(label), k=k,
                  correct=None if correct is None
                  else _name(correct, "accuracy", "correct"),
                  total=None if total is None
                  else _name(total, "accuracy", "total"))


def reshape(x, shape, actual_shape=None, act=None, inplace=False,
            name=None):
    """0 in shape copies x's dim there, one -1 is inferred. actual_shape (a
    shape given at run time) is not supported (NotImplementedError): pass
    the shape with 0 and -1 instead.

    x: a Variable; shape: a list of ints; act: an activation name or None.

        >>> x = fluid.layers.data("x", [3, 8, 8])          # [-1, 3, 8, 8]
        >>> y = fluid.layers.reshape(x, [0, -1])            # [-1, 192]
    """
    if actual_shape is not None:
        actual_shape = _name(actual_shape, "reshape", "actual_shape")
    return _layer("reshape", x=_name(x, "reshape", "x"), shape=list(shape),
                  actual_shape=actual_shape, act=act, inplace=inplace,
                  name=name)


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None,
          name=None):
    """scale * x + bias (bias_after_scale, the default) or scale * (x + bias),
    elementwise (op `scale`), then act.

    x: a Variable of any shape; scale, bias: Python numbers; act: an
    activation name or None; name: prefix of the output's name. The output
    has x's shape and dtype.

        >>> x = fluid.layers.data("x", [16])
        >>> y = fluid.layers.scale(x, scale=2.0, bias=1.0)   # 2x + 1
    """
    return _layer("scale", x=_name(x, "scale", "x"), scale=scale,
                  bias=bias, bias_after_scale=bias_after_scale,
                  act=act, name=name)


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    """A tensor of `shape` and `dtype` with every element `value` (op
    `fill_constant`), refilled on every run; no gradient flows to it.

    shape: a list of ints (no -1: the shape is fixed; for a batch-sized
    constant use fill_constant_batch_size_like); dtype: "float32",
    "float64", "int32" or "int64", or the NumPy dtype (np.float32); value:
    a number; out: an existing Variable to fill (and return) instead of a
    new one. force_cpu is accepted for Fluid's signature: a var lives
    where the executor runs, either value computes the same.

        >>> one = fluid.layers.fill_constant([1], "float32", 1.0)   # [1]
        >>> fluid.layers.fill_constant([1], np.int64, 5, out=counter)
    """
    if isinstance(value, bool):
        value = float(value)
    return _layer("fill_constant", shape=_shape(shape, "fill_constant"),
                  dtype=_dtype_name(dtype, "fill_constant"), value=value,
                  force_cpu=force_cpu,
                  out=None if out is None
                  else _name(out, "fill_constant", "out"))


def _elementwise(type, x, y, axis, act, name):
    return _layer(type, x=_name(x, type, "x"), y=_name(y, type, "y"),
                  axis=axis, act=act, name=name)


def elementwise_add(x, y, axis=-1, act=None, name=None):
    """x + y elementwise (op `elementwise_add`), then act.

    x: a Variable; y: a Variable whose shape matches a run of x's dims and
    is broadcast over the others: from dim `axis` of x on, or with axis=-1
    (the default) aligned with x's last dims. act: an activation name or
    None; name: prefix of the output's name. The output has x's shape.

        >>> x = fluid.layers.data("x", [3, 8, 8])          # [-1, 3, 8, 8]
        >>> b = fluid.layers.create_parameter([3], "float32")
        >>> y = fluid.layers.elementwise_add(x, b, axis=1)  # per channel
    """
    return _elementwise("elementwise_add", x, y, axis, act, name)


def elementwise_sub(x, y, axis=-1, act=None, name=None):
    """x - y elementwise (op `elementwise_sub`), then act.

    x: a Variable; y: a Variable whose shape matches a run of x's dims and
    is broadcast over the others (from dim `axis` of x on; axis=-1: aligned
    with x's last dims). act: an activation name or None; name: prefix of
    the output's name. The output has x's shape.

        >>> x = fluid.layers.data("x", [16])
        >>> m = fluid.layers.data("m", [16])
        >>> d = fluid.layers.elementwise_sub(x, m)          # [-1, 16]
    """
    return _elementwise("elementwise_sub", x, y, axis, act, name)


def elementwise_mul(x, y, axis=-1, act=None, name=None):
    """x * y elementwise (op `elementwise_mul`), then act.

    x: a Variable; y: a Variable whose shape matches a run of x's dims and
    is broadcast over the others (from dim `axis` of x on; axis=-1: aligned
    with x's last dims). act: an activation name or None; name: prefix of
    the output's name. The output has x's shape.

        >>> x = fluid.layers.data("x", [4, 16])            # [-1, 4, 16]
        >>> gate = fluid.layers.data("gate", [4, 16])
        >>> y = fluid.layers.elementwise_mul(x, gate)       # [-1, 4, 16]
    """
    return _elementwise("elementwise_mul", x, y, axis, act, name)


def elementwise_div(x, y, axis=-1, act=None, name=None):
    """x / y elementwise (op `elementwise_div`), then act.

    x: a Variable; y: a Variable whose shape matches a run of x's dims and
    is broadcast over the others (from dim `axis` of x on; axis=-1: aligned
    with x's last dims). act: an activation name or None; name: prefix of
    the output's name. The output has x's shape.

        >>> x = fluid.layers.data("x", [16])
        >>> n = fluid.layers.data("n", [1])
        >>> y = fluid.layers.elementwise_div(x, n, axis=0)  # row by row
    """
    return _elementwise("elementwise_div", x, y, axis, act, name)


def elementwise_max(x, y, axis=-1, act=None, name=None):
    """max(x, y) elementwise (op `elementwise_max`), then act; the gradient
    goes to x where x > y, else to y.

    x: a Variable; y: a Variable whose shape matches a run of x's dims and
    is broadcast over the others (from dim `axis` of x on; axis=-1: aligned
    with x's last dims). act: an activation name or None; name: prefix of
    the output's name. The output has x's shape.

        >>> x = fluid.layers.data("x", [16])
        >>> floor = fluid.layers.fill_constant([1], "float32", 0.5)
        >>> y = fluid.layers.elementwise_max(x, floor)      # [-1, 16]
    """
    return _elementwise("elementwise_max", x, y, axis, act, name)


def elementwise_min(x, y, axis=-1, act=None, name=None):
    """min(x, y) elementwise (op `elementwise_min`), then act; the gradient
    goes to x where x < y, else to y.

    x: a Variable; y: a Variable whose shape matches a run of x's dims and
    is broadcast over the others (from dim `axis` of x on; axis=-1: aligned
    with x's last dims). act: an activation name or None; name: prefix of
    the output's name. The output has x's shape.

        >>> x = fluid.layers.data("x", [16])
        >>> cap = fluid.layers.fill_constant([1], "float32", 2.0)
        >>> y = fluid.layers.elementwise_min(x, cap)        # [-1, 16]
    """
    return _elementwise("elementwise_min", x, y, axis, act, name)


def elementwise_pow(x, y, axis=-1, act=None, name=None):
    """x ^ y elementwise (op `elementwise_pow`), then act.

    x: a float Variable; y: a Variable whose shape matches a run of x's dims
    and is broadcast over the others (from dim `axis` of x on; axis=-1:
    aligned with x's last dims). act: an activation name or None; name:
    prefix of the output's name. The output has x's shape.

        >>> x = fluid.layers.data("x", [16])
        >>> two = fluid.layers.fill_constant([1], "float32", 2.0)
        >>> y = fluid.layers.elementwise_pow(x, two)        # x^2
    """
    return _elementwise("elementwise_pow", x, y, axis, act, name)


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05,
               param_attr=None, bias_attr=None, data_layout="NCHW",
               in_place=False, name=None, moving_mean_name=None,
               moving_variance_name=None,
               do_model_average_for_mean_and_var=True, use_global_stats=False,
               fuse_with_relu=False, sync_stats=False):
    """Fluid's batch_norm over [N, C] or NCHW input. The moving mean and
    variance are persistable, not trainable; running = momentum * running +
    (1 - momentum) * batch, with the biased batch variance. in_place and
    do_model_average_for_mean_and_var are accepted for Fluid's signature
    and change nothing (nothing here averages parameters).
    fuse_with_relu (Fluid 1.5's argument, after 1.8's): relu in the
    batch_norm op itself. sync_stats (not in Fluid): batch statistics over
    all ranks' batches (MPIExecutor).

    Learns a scale and a shift per channel (batch_norm_N.w_0, .b_0); is_test
    (or a clone for test) normalises with the moving statistics instead.
    The output has input's shape.

        >>> h = fluid.layers.conv2d(fluid.layers.data("im", [3, 8, 8]), 4, 3)
        >>> h = fluid.layers.batch_norm(h, act="relu")      # [-1, 4, 6, 6]
    """
    layer = "batch_norm"
    return _layer(layer, input=_name(input, layer), act=act, is_test=is_test,
                  momentum=float(momentum), epsilon=float(epsilon),
                  param_attr=_attr(param_attr, layer, "param_attr"),
                  bias_attr=_attr(bias_attr, layer, "bias_attr"),
                  data_layout=data_layout, in_place=in_place, name=name,
                  moving_mean_name=moving_mean_name,
                  moving_variance_name=moving_variance_name,
                  do_model_average_for_mean_and_var=(
                      do_model_average_for_mean_and_var),
                  use_global_stats=use_global_stats,
                  fuse_with_relu=fuse_with_relu, sync_stats=sync_stats)


def dropout(x, dropout_prob, is_test=False, seed=None, name=None,
            dropout_implementation="downgrade_in_infer"):
    """Fluid's dropout. The mask depends on the seed (None: derived from the
    output's name), the rank and a per-op step counter saved with the
    persistables, so a rerun draws the same masks.

    dropout_prob: the probability of zeroing an element; is_test: pass x
    through (scaled by 1 - dropout_prob with "downgrade_in_infer", as is
    with "upscale_in_train", which divides kept values by 1 - dropout_prob
    in training). The output has x's shape.

        >>> h = fluid.layers.fc(fluid.layers.data("x", [32]), 64)
        >>> h = fluid.layers.dropout(h, dropout_prob=0.5)   # [-1, 64]
    """
    return _layer("dropout", x=_name(x, "dropout", "x"),
                  dropout_prob=dropout_prob, is_test=is_test,
                  seed=seed, name=name,
                  dropout_implementation=dropout_implementation)
# ---- variables declared directly: create_parameter, create_global_var ----

def create_parameter(shape, dtype, name=None, attr=None, is_bias=False,
                     default_initializer=None):
    """A parameter of `shape` and `dtype`, initialised by the startup
    program with attr's initializer, else `default_initializer` (a
    fluid.initializer object such as Normal(0.0, 0.02), or an initializer
    dict such as {"kind": "constant", "value": 0.5}), else zeros for a
    bias and Xavier for a weight. Named by attr's name, else `name`, else
    create_parameter_N.w_0 (.b_0 for a bias).

        >>> w = fluid.layers.create_parameter(
        ...     [16, 4], "float32",
        ...     default_initializer=fluid.initializer.Normal(0.0, 0.02))
    """
    from .initializer import Initializer
    fallback = None
    if isinstance(default_initializer, Initializer):
        fallback = {"initializer": default_initializer.to_dict()}
    elif default_initializer is not None:
        if not isinstance(default_initializer, dict):
            raise TypeError(
                "create_parameter(default_initializer=...): expected a "
                "fluid.initializer object or an initializer dict such as "
                "{'kind': 'xavier'}, got "
                f"{type(default_initializer).__name__}")
        fallback = {"initializer": dict(default_initializer)}
    return _layer("create_parameter", shape=_shape(shape, "create_parameter"),
                  dtype=_dtype_name(dtype, "create_parameter"), name=name,
                  attr=_attr(attr, "create_parameter", "attr"),
                  is_bias=bool(is_bias), default_initializer=fallback)


def create_global_var(shape, value, dtype, persistable=False,
                      force_cpu=False, name=None):
    """A var of `shape` and `dtype` filled with `value`. Persistable: filled
    once by the startup program and kept (and saved) across runs; otherwise
    refilled by the main program on every run. force_cpu is accepted for
    Fluid's signature: a var lives where the executor runs.

        >>> step = fluid.layers.create_global_var(
        ...     [1], 0.0, "float32", persistable=True, name="step")
    """
    return _layer("create_global_var",
                  shape=_shape(shape, "create_global_var"),
                  value=value, dtype=_dtype_name(dtype, "create_global_var"),
                  persistable=bool(persistable), force_cpu=bool(force_cpu),
                  name=name)


def create_tensor(dtype, name=None, persistable=False):
    """A Variable of `dtype` with no value yet, for a later layer to write:
    accuracy's `correct` and `total`, assign's `output`. Its shape is what
    the writer gives it. persistable=True is refused: a variable kept
    across runs needs a starting value, which create_global_var gives.

        >>> total = fluid.layers.create_tensor(dtype="int64")
        >>> acc = fluid.layers.accuracy(predict, label, total=total)
    """
    return _layer("create_tensor", dtype=_dtype_name(dtype, "create_tensor"),
                  name=name, persistable=bool(persistable))


def _shape(shape, layer):
    if isinstance(shape, int) and not isinstance(shape, bool):
        return [shape]
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{layer}(shape=...): expected a list of ints, got "
                        f"{type(shape).__name__}")
    return [int(d) for d in shape]
# ---- tensor layers: joining, cutting and rearranging tensors, products and
# sums (src/builder/tensor_layers.cc).


def _var_list(xs, layer, arg="input"):
    """The variable names of a list-of-Variables argument."""
    if not isinstance(xs, (list, tuple)):
        raise TypeError(f"{layer}({arg}=...): expected a list of Variables, "
                        f"got {type(xs).__name__}")
    return [_name(x, layer, arg) for x in xs]


def concat(input, axis=0, name=None):
    """The Variables of `input` joined along dim `axis` (op `concat`).

    input: a list of Variables of one dtype whose shapes agree except on
    `axis`; axis: the dim to join (negative counts from the end; default 0);
    name: prefix of the output's name. The output's `axis` dim is the sum of
    the inputs'.

        >>> a = fluid.layers.data("a", [3])
        >>> b = fluid.layers.data("b", [5])
        >>> ab = fluid.layers.concat([a, b], axis=1)        # [-1, 8]
    """
    return _layer("concat", input=_var_list(input, "concat"), axis=axis,
                  name=name)


def _equal_sections(input, num, dim):
    """Fluid's split(x, n): n equal pieces of x's dim `dim`, as sizes."""
    if isinstance(num, bool) or num <= 0:
        raise ValueError(f"split(num_or_sections={num}): the number of "
                         "pieces must be positive")
    _, program = current_builder()
    shape = program.var(_name(input, "split")).shape
    if not -len(shape) <= dim < len(shape):
        raise ValueError(f"split(dim={dim}): out of range for input of shape "
                         f"{list(shape)}")
    size = shape[dim]
    if size < 0 or size % num != 0:
        raise ValueError(f"split(num_or_sections={num}): dim {dim} of the "
                         f"input, of shape {list(shape)}, does not divide "
                         f"into {num} equal pieces")
    return [size // num] * num


def split(input, num_or_sections, dim=-1, name=None):
    """`input` cut along dim `dim` into pieces (op `split`); returns a list of
    Variables.

    num_or_sections: an int n (n equal pieces; the dim must be known and
    divisible by n) or a list of piece sizes (one of them may be -1, the
    rest); dim: the dim to cut (default -1, the last); name: prefix of the
    outputs' names.

        >>> x = fluid.layers.data("x", [8])                # [-1, 8]
        >>> a, b = fluid.layers.split(x, 2, dim=1)          # [-1, 4] each
        >>> c, d = fluid.layers.split(x, [2, -1], dim=1)    # [-1, 2], [-1, 6]
    """
    sections = num_or_sections
    if isinstance(sections, int):
        sections = _equal_sections(input, sections, dim)
    out = _layer("split", input=_name(input, "split"),
                 num_or_sections=list(sections), dim=dim, name=name)
    return list(out) if isinstance(out, tuple) else [out]


def transpose(x, perm, name=None):
    """x with its dims permuted (op `transpose`): output dim i is x's dim
    perm[i].

    x: a Variable; perm: a permutation of range(rank of x); name: prefix of
    the output's name.

        >>> x = fluid.layers.data("x", [3, 32, 32])        # NCHW
        >>> nhwc = fluid.layers.transpose(x, [0, 2, 3, 1])  # [-1, 32, 32, 3]
    """
    return _layer("transpose", x=_name(x, "transpose", "x"), perm=list(perm),
                  name=name)


def flatten(x, axis=1, name=None):
    """x as a 2-D tensor [prod(dims[:axis]), prod(dims[axis:])] (op `reshape`;
    the values are not moved).

    x: a Variable of rank >= axis; axis: where the second dim begins
    (default 1: keep the batch dim); name: prefix of the output's name.

        >>> x = fluid.layers.data("x", [3, 8, 8])          # [-1, 3, 8, 8]
        >>> f = fluid.layers.flatten(x)                     # [-1, 192]
    """
    return _layer("flatten", x=_name(x, "flatten", "x"), axis=axis,
                  name=name)


def sums(input, out=None):
    """The elementwise sum of the Variables of `input` (op `sum`), written to
    `out` when given.

    input: a list of Variables of one shape and dtype; out: an existing
    Variable of that shape to hold the sum (None: a new one).

        >>> a = fluid.layers.data("a", [16])
        >>> b = fluid.layers.data("b", [16])
        >>> c = fluid.layers.data("c", [16])
        >>> s = fluid.layers.sums([a, b, c])                # [-1, 16]
    """
    return _layer("sums", input=_var_list(input, "sums"),
                  out=None if out is None else _name(out, "sums", "out"))


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0,
           name=None):
    """alpha * op(x) @ op(y) (op `matmul`), op transposing the last two dims
    when transpose_x / transpose_y ask for it.

    x, y: float Variables of rank 2, or of a higher rank whose leading dims
    are batch dims (equal in both; a rank-2 operand is shared across the
    other's batch), e.g. attention heads [B, H, L, D]; alpha: a scale;
    name: prefix of the output's name. [M, K] @ [K, N] gives [M, N], batch
    dims kept.

        >>> q = fluid.layers.data("q", [4, 10, 16])         # [-1, 4, 10, 16]
        >>> k = fluid.layers.data("k", [4, 12, 16])
        >>> scores = fluid.layers.matmul(q, k, transpose_y=True,
        ...                              alpha=0.25)        # [-1, 4, 10, 12]
    """
    return _layer("matmul", x=_name(x, "matmul", "x"),
                  y=_name(y, "matmul", "y"), transpose_x=transpose_x,
                  transpose_y=transpose_y, alpha=alpha, name=name)


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    """The matrix product of x and y, each first viewed as 2-D (op `mul`, the
    product fc uses).

    x is viewed as [prod(x.dims[:x_num_col_dims]),
    prod(x.dims[x_num_col_dims:])] and y as [prod(y.dims[:y_num_col_dims]),
    prod(y.dims[y_num_col_dims:])]; the inner sizes must agree. The output
    has shape x.dims[:x_num_col_dims] + y.dims[y_num_col_dims:]. name:
    prefix of the output's name.

        >>> x = fluid.layers.data("x", [3, 4])              # [-1, 3, 4]
        >>> w = fluid.layers.create_parameter([12, 5], "float32")
        >>> y = fluid.layers.mul(x, w)                      # [-1, 5]
    """
    return _layer("mul", x=_name(x, "mul", "x"), y=_name(y, "mul", "y"),
                  x_num_col_dims=x_num_col_dims,
                  y_num_col_dims=y_num_col_dims, name=name)


def cast(x, dtype):
    """x converted to `dtype` (op `cast`): float32, float64, int32 or int64,
    either way; float to int rounds toward zero. The gradient is cast back
    to x's dtype.

    x: a Variable; dtype: a dtype name or a NumPy dtype. The output has x's
    shape.

        >>> ids = fluid.layers.data("ids", [1], dtype="int64")
        >>> f = fluid.layers.cast(ids, "float32")           # [-1, 1]
    """
    return _layer("cast", x=_name(x, "cast", "x"), dtype=_dtype_name(dtype))


def _dtype_name(dtype, layer="layer", arg="dtype"):
    """Fluid takes a dtype as a string or a NumPy dtype (np.float32,
    np.dtype("int64")); the builder checks the name."""
    if isinstance(dtype, str):
        return dtype
    import numpy as np
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"{layer}({arg}={dtype!r}): expected a dtype name "
                        "such as \"float32\" or a NumPy dtype such as "
                        "np.float32") from None


def assign(input, output=None):
    """A copy of `input` (op `assign`), or, for a NumPy array, a constant
    holding its values (op `assign_value`); written to `output` when given.

    input: a Variable, or a NumPy array of float32, int32 or int64 (its
    shape is the output's; a 0-d array gives [1]); output: an existing
    Variable to write into (None: a new one).

        >>> import numpy as np
        >>> table = fluid.layers.assign(np.arange(6, dtype="float32")
        ...                             .reshape(2, 3))      # [2, 3]
    """
    out = None if output is None else _name(output, "assign", "output")
    if hasattr(input, "name") or isinstance(input, str):
        return _layer("assign", input=_name(input, "assign"), output=out)
    import numpy as np
    if not isinstance(input, np.ndarray):
        raise TypeError("assign(input=...): expected a Variable or a NumPy "
                        f"array, got {type(input).__name__}")
    if input.dtype == np.float32:
        text = " ".join(repr(float(v)) for v in input.ravel())
    elif input.dtype in (np.int32, np.int64):
        text = " ".join(str(int(v)) for v in input.ravel())
    else:
        raise TypeError(f"assign(input=...): a NumPy array of {input.dtype} "
                        "is not supported; float32, int32 or int64 are "
                        "(e.g. input.astype('float32'))")
    return _assign_value(text, list(input.shape) or [1], input.dtype.name,
                         out)


def _assign_value(values, shape, dtype, output=None):
    """assign's NumPy path: a constant holding `values` (decimal text)."""
    return _layer("_assign_value", values=values, shape=list(shape),
                  dtype=dtype, output=output)


def one_hot(input, depth, allow_out_of_range=False):
    """One-hot rows of int64 ids (op `one_hot`): row i holds 1.0 at column
    input[i] and 0.0 elsewhere. No gradient.

    input: int64 ids [..., 1], each in [0, depth) (an id outside is an
    error at run time, or with allow_out_of_range a row of zeros); depth:
    the number of classes. The output is float32 [..., depth] (the last
    dim of 1 replaced).

        >>> label = fluid.layers.data("label", [1], dtype="int64")
        >>> target = fluid.layers.one_hot(label, depth=10)  # [-1, 10]
    """
    return _layer("one_hot", input=_name(input, "one_hot"), depth=depth,
                  allow_out_of_range=allow_out_of_range)


def argmax(x, axis=0):
    """The int64 index of the largest element along dim `axis` (op `arg_max`;
    the first among equal values), that dim removed. No gradient.

    x: a Variable; axis: the dim to reduce (default 0; negative counts from
    the end).

        >>> logits = fluid.layers.fc(fluid.layers.data("x", [8]), 10)
        >>> pred = fluid.layers.argmax(logits, axis=1)      # [-1], int64
    """
    return _layer("argmax", x=_name(x, "argmax", "x"), axis=axis)


def topk(input, k, name=None):
    """The k largest values of each row (the last dim) in descending order,
    and their int64 indices (op `top_k`; equal values in index order).
    Returns (values, indices); the gradient reaches input through values
    only.

    input: a float Variable [..., D]; k: an int in [1, D]; name: prefix of
    the outputs' names. Both outputs are [..., k].

        >>> probs = fluid.layers.softmax(fluid.layers.data("x", [10]))
        >>> values, indices = fluid.layers.topk(probs, k=3)  # [-1, 3] each
    """
    return _layer("topk", input=_name(input, "topk"), k=k, name=name)


def square_error_cost(input, label):
    """(input - label)^2 elementwise (ops `elementwise_sub`, `square`): the
    per-example squared error of a regression.

    input: the prediction, a float Variable [N, D]; label: the target, of
    the same shape. The output is [N, D] (reduce it with mean).

        >>> pred = fluid.layers.fc(fluid.layers.data("x", [13]), 1)
        >>> y = fluid.layers.data("y", [1])
        >>> loss = fluid.layers.mean(
        ...     fluid.layers.square_error_cost(pred, y))    # [1]
    """
    return _layer("square_error_cost", input=_name(input, "square_error_cost"),
                  label=_name(label, "square_error_cost", "label"))


def sigmoid_cross_entropy_with_logits(x, label, ignore_index=-100, name=None,
                                      normalize=False):
    """Elementwise cross entropy of sigmoid(x) against label, from the logits
    in a numerically stable form (op `sigmoid_cross_entropy_with_logits`):
    max(x, 0) - x * label + log(1 + exp(-|x|)).

    x: float logits of any shape; label: probabilities in [0, 1] of x's
    shape (multi-label targets); ignore_index: elements whose label equals
    it give 0; normalize: divide by the number of elements not ignored;
    name: prefix of the output's name. The output has x's shape.

        >>> logits = fluid.layers.fc(fluid.layers.data("x", [8]), 5)
        >>> tags = fluid.layers.data("tags", [5])
        >>> loss = fluid.layers.mean(
        ...     fluid.layers.sigmoid_cross_entropy_with_logits(logits, tags))
    """
    layer = "sigmoid_cross_entropy_with_logits"
    return _layer(layer, x=_name(x, layer, "x"),
                  label=_name(label, layer, "label"),
                  ignore_index=ignore_index, name=name, normalize=normalize)
# ---- training knobs: clip ----

def clip(x, min, max, name=None):
    """min(max(x, min), max) elementwise; the gradient is 0 outside.

    x: a float Variable; min, max: Python numbers; name: prefix of the
    output's name. The output has x's shape.

        >>> x = fluid.layers.data("x", [16])
        >>> y = fluid.layers.clip(x, min=-1.0, max=1.0)     # [-1, 16]
    """
    return _layer("clip", x=_name(x, "clip", "x"), min=min, max=max,
                  name=name)
# ---- attention and transformer layers (src/builder/attention_layers.cc) ----


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1,
               epsilon=1e-05, param_attr=None, bias_attr=None, act=None,
               name=None):
    """Each row of input's [rows, cols] view (cols: the dims from
    begin_norm_axis on) normalised to zero mean and unit (biased) variance,
    then times a [cols] scale (1 at first) and plus a [cols] shift (0 at
    first), then act.

    The output has input's shape.

        >>> x = fluid.layers.data("x", [10, 64])            # [-1, 10, 64]
        >>> y = fluid.layers.layer_norm(x, begin_norm_axis=2)
    """
    layer = "layer_norm"
    return _layer(layer, input=_name(input, layer), scale=bool(scale),
                  shift=bool(shift), begin_norm_axis=begin_norm_axis,
                  epsilon=float(epsilon),
                  param_attr=_attr(param_attr, layer, "param_attr"),
                  bias_attr=_attr(bias_attr, layer, "bias_attr"), act=act,
                  name=name)


def gelu(x, approximate=False):
    """x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))); approximate: the tanh
    form 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).

    x: a float Variable of any shape; the output has its shape.

        >>> h = fluid.layers.fc(fluid.layers.data("x", [64]), 256)
        >>> h = fluid.layers.gelu(h)                        # [-1, 256]
    """
    return _layer("gelu", x=_name(x, "gelu", "x"),
                  approximate=bool(approximate))


def fill_constant_batch_size_like(input, shape, dtype, value,
                                  input_dim_idx=0, output_dim_idx=0,
                                  force_cpu=False):
    """A constant of `shape` and `dtype` filled with `value`, its dim
    output_dim_idx set at run time to input's dim input_dim_idx (the batch
    size). force_cpu is accepted for Fluid's signature.

        >>> x = fluid.layers.data("x", [16])                # [-1, 16]
        >>> h0 = fluid.layers.fill_constant_batch_size_like(
        ...     x, [-1, 32], "float32", 0.0)                # [-1, 32]
    """
    layer = "fill_constant_batch_size_like"
    return _layer(layer, input=_name(input, layer), shape=_shape(shape, layer),
                  dtype=_dtype_name(dtype), value=float(value),
                  input_dim_idx=input_dim_idx, output_dim_idx=output_dim_idx,
                  force_cpu=bool(force_cpu))


def causal_attention_mask(seq_len, dtype="float32", masked_value=-1e9):
    """The additive causal mask [seq_len, seq_len] of self-attention (not a
    Fluid 1.x layer): 0 on and below the diagonal, `masked_value` above it
    (position i attends to positions j <= i). Added to attention scores
    [..., seq_len, seq_len] (elementwise_add broadcasts it), it makes
    softmax give exactly 0 to future positions. A constant: no
    gradient.

        >>> mask = fluid.layers.causal_attention_mask(8)    # [8, 8]
        >>> scores = fluid.layers.elementwise_add(scores, mask)
    """
    return _layer("causal_attention_mask", seq_len=seq_len,
                  dtype=_dtype_name(dtype), masked_value=float(masked_value))
# ---- sequences: level-1 LoD batches (src/builder/sequence_ops_layers.cc)


def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """One row per sequence of `input`: pool_type "sum", "average",
    "sqrt" (sum / sqrt(length)), "max", "last" or "first". An empty
    sequence gives pad_value.

    input: a LoD Variable (lod_level 1) [rows, D]; the output is
    [sequences, D].

        >>> words = fluid.layers.data("words", [16], lod_level=1)
        >>> sentence = fluid.layers.sequence_pool(words, "average")
    """
    if not isinstance(pool_type, str):
        raise TypeError(f"sequence_pool(pool_type={pool_type!r}): expected "
                        "a str")
    return _layer("sequence_pool", input=_name(input, "sequence_pool"),
                  pool_type=pool_type, is_test=is_test, pad_value=pad_value)


def sequence_first_step(input):
    """The first row of each sequence.

    input: a LoD Variable (lod_level 1) [rows, D]; the output is
    [sequences, D].

        >>> words = fluid.layers.data("words", [16], lod_level=1)
        >>> first = fluid.layers.sequence_first_step(words)
    """
    return _layer("sequence_first_step",
                  input=_name(input, "sequence_first_step"))


def sequence_last_step(input):
    """The last row of each sequence.

    input: a LoD Variable (lod_level 1) [rows, D]; the output is
    [sequences, D].

        >>> words = fluid.layers.data("words", [16], lod_level=1)
        >>> last = fluid.layers.sequence_last_step(words)
    """
    return _layer("sequence_last_step",
                  input=_name(input, "sequence_last_step"))


def sequence_softmax(input, use_cudnn=False, name=None):
    """Softmax within each sequence of `input` ([N, 1] or [N]).

    The output has input's shape and LoD.

        >>> scores = fluid.layers.data("scores", [1], lod_level=1)
        >>> weights = fluid.layers.sequence_softmax(scores)
    """
    return _layer("sequence_softmax", input=_name(input, "sequence_softmax"),
                  use_cudnn=use_cudnn, name=name)


def sequence_expand(x, y, ref_level=-1, name=None):
    """x's sequences (or rows, when x has no LoD) each repeated as many
    times as the matching sequence of y is long.

    ref_level: the level of y's LoD to follow (-1: the last).

        >>> topic = fluid.layers.data("topic", [8])         # one row each
        >>> words = fluid.layers.data("words", [16], lod_level=1)
        >>> per_word = fluid.layers.sequence_expand(topic, words)
    """
    return _layer("sequence_expand", x=_name(x, "sequence_expand", "x"),
                  y=_name(y, "sequence_expand", "y"), ref_level=ref_level,
                  name=name)


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """Lengths x (int32/int64) -> mask of shape x.shape + [maxlen], 1 where
    the position is within the length; maxlen None: the longest length.

        >>> length = fluid.layers.data("length", [1], dtype="int64")
        >>> mask = fluid.layers.sequence_mask(length, maxlen=20,
        ...                                   dtype="float32")
    """
    import numpy as _np
    return _layer("sequence_mask", x=_name(x, "sequence_mask", "x"),
                  maxlen=-1 if maxlen is None else maxlen,
                  dtype=_np.dtype(dtype).name, name=name)


def sequence_pad(x, pad_value, maxlen=None, name=None):
    """(out, length): x's sequences padded with pad_value (a Variable of one
    element, or one row) to maxlen rows (None: the longest), out [sequences,
    maxlen, ...], and each sequence's int64 length.

        >>> words = fluid.layers.data("words", [16], lod_level=1)
        >>> zero = fluid.layers.fill_constant([1], "float32", 0.0)
        >>> padded, length = fluid.layers.sequence_pad(words, zero)
    """
    return _layer("sequence_pad", x=_name(x, "sequence_pad", "x"),
                  pad_value=_name(pad_value, "sequence_pad", "pad_value"),
                  maxlen=-1 if maxlen is None else maxlen, name=name)


def sequence_unpad(x, length, name=None):
    """The sequences of each row of dense x [sequences, maxlen, ...] cut to
    their int64 length, as a LoD batch.

        >>> padded, length = fluid.layers.sequence_pad(words, zero)
        >>> words_again = fluid.layers.sequence_unpad(padded, length)
    """
    return _layer("sequence_unpad", x=_name(x, "sequence_unpad", "x"),
                  length=_name(length, "sequence_unpad", "length"),
                  name=name)


def sequence_conv(input, num_filters, filter_size=3, filter_stride=1,
                  padding=True, padding_start=None, bias_attr=None,
                  param_attr=None, act=None, name=None):
    """1-D convolution along each sequence: a window of filter_size rows
    starting padding_start rows from each row (None: -(filter_size // 2),
    centred), zero-padded at the sequence's ends, filter [filter_size * D,
    num_filters]; then the bias and act.

    input: a LoD Variable (lod_level 1) [rows, D]; the output is [rows,
    num_filters] with input's LoD.

        >>> words = fluid.layers.data("words", [16], lod_level=1)
        >>> h = fluid.layers.sequence_conv(words, num_filters=32,
        ...                                filter_size=3, act="tanh")
    """
    return _layer("sequence_conv", input=_name(input, "sequence_conv"),
                  num_filters=num_filters, filter_size=filter_size,
                  filter_stride=filter_stride, padding=padding,
                  padding_start=padding_start,
                  bias_attr=_attr(bias_attr, "sequence_conv", "bias_attr"),
                  param_attr=_attr(param_attr, "sequence_conv"), act=act,
                  name=name)

# ---- embeddings ----

def embedding(input, size, is_sparse=False, is_distributed=False,
              padding_idx=None, param_attr=None, dtype='float32'):
    """Rows of a [size[0], size[1]] table picked by the int64 ids `input`
    ([N, 1] or [..., 1]); returns [..., size[1]]. `padding_idx` (None: none;
    negative counts from the end, as in Fluid) reads as zeros and gets no
    gradient. With `is_sparse` the table's gradient is sparse rows, one per
    id, instead of a dense [size[0], size[1]] tensor. `is_distributed` is
    accepted for Fluid programs: every rank holds the whole table.

        >>> ids = fluid.layers.data("ids", [1], dtype="int64", lod_level=1)
        >>> emb = fluid.layers.embedding(ids, size=[10000, 64])  # [-1, 64]
    """
    if (not isinstance(size, (list, tuple)) or len(size) != 2
            or not all(isinstance(s, int) and not isinstance(s, bool)
                       for s in size)):
        raise TypeError(f"embedding(size={size!r}): expected two ints "
                        "[vocabulary, width]")
    if padding_idx is not None:
        if (not isinstance(padding_idx, int) or isinstance(padding_idx, bool)
                or not -size[0] <= padding_idx < size[0]):
            raise ValueError(f"embedding(padding_idx={padding_idx!r}): "
                             f"expected None or an int in [-{size[0]}, "
                             f"{size[0]})")
        if padding_idx < 0:
            padding_idx += size[0]
    return _layer("embedding", input=_name(input, "embedding"),
                  size=list(size), is_sparse=is_sparse,
                  is_distributed=is_distributed, padding_idx=padding_idx,
                  param_attr=_attr(param_attr, "embedding", "param_attr"),
                  dtype=_dtype_name(dtype, "embedding"))

# ---- recurrent layers over sequences ----

def _state(x, layer, arg):
    """An optional initial state: "" for None, else its variable name."""
    return "" if x is None else _name(x, layer, arg)


def dynamic_lstm(input, size, h_0=None, c_0=None, param_attr=None,
                 bias_attr=None, use_peepholes=True, is_reverse=False,
                 gate_activation='sigmoid', cell_activation='tanh',
                 candidate_activation='tanh', dtype='float32', name=None):
    """LSTM over each sequence of `input`, the projected gate input
    [rows, size] (size = 4 * D, e.g. an fc of the words) with level-1 LoD,
    Fluid's gate blocks {candidate, input, forget, output}. Weight [D, 4D],
    bias [1, 4D] ([1, 7D] with use_peepholes: W_ic, W_fc, W_oc). h_0, c_0:
    [sequences, D] initial states (None: zeros). Returns (hidden, cell),
    both [rows, D] with input's LoD.

        >>> words = fluid.layers.data("words", [32], lod_level=1)
        >>> gates = fluid.layers.fc(words, size=4 * 64)
        >>> hidden, cell = fluid.layers.dynamic_lstm(gates, size=4 * 64)
    """
    return _layer("dynamic_lstm", input=_name(input, "dynamic_lstm"),
                  size=size, h_0=_state(h_0, "dynamic_lstm", "h_0"),
                  c_0=_state(c_0, "dynamic_lstm", "c_0"),
                  param_attr=_attr(param_attr, "dynamic_lstm"),
                  bias_attr=_attr(bias_attr, "dynamic_lstm", "bias_attr"),
                  use_peepholes=use_peepholes, is_reverse=is_reverse,
                  gate_activation=gate_activation,
                  cell_activation=cell_activation,
                  candidate_activation=candidate_activation,
                  dtype=_dtype_name(dtype, "dynamic_lstm"), name=name)


def dynamic_gru(input, size, param_attr=None, bias_attr=None,
                is_reverse=False, gate_activation='sigmoid',
                candidate_activation='tanh', h_0=None, origin_mode=False):
    """GRU over each sequence of `input`, the projected gate input
    [rows, 3 * size] with level-1 LoD, Fluid's gate blocks {update, reset,
    candidate}. Weight [size, 3 * size] (in memory: W_ur [D, 2D], then
    W_c [D, D]), bias [1, 3 * size] (bias_attr=False: none). The reset gate
    applies before the product: c = act(x_c + (r * h_prev) W_c);
    h = (1 - u) * h_prev + u * c, or u * h_prev + (1 - u) * c with
    origin_mode. h_0: [sequences, size] (None: zeros). Returns hidden
    [rows, size] with input's LoD.

        >>> words = fluid.layers.data("words", [32], lod_level=1)
        >>> gates = fluid.layers.fc(words, size=3 * 64)
        >>> hidden = fluid.layers.dynamic_gru(gates, size=64)   # [-1, 64]
    """
    return _layer("dynamic_gru", input=_name(input, "dynamic_gru"),
                  size=size, param_attr=_attr(param_attr, "dynamic_gru"),
                  bias_attr=_attr(bias_attr, "dynamic_gru", "bias_attr"),
                  is_reverse=is_reverse, gate_activation=gate_activation,
                  candidate_activation=candidate_activation,
                  h_0=_state(h_0, "dynamic_gru", "h_0"),
                  origin_mode=origin_mode)


def lstm_unit(x_t, hidden_t_prev, cell_t_prev, forget_bias=0.0,
              param_attr=None, bias_attr=None, name=None):
    """One LSTM step: fc([x_t, hidden_t_prev], 4 * D) as the gate
    pre-activations {i, f, o, j} (D = cell_t_prev's width), forget_bias
    added to f; c = f * c_prev + i * tanh(j), h = o * tanh(c). Returns
    (hidden, cell), [N, D].

        >>> x_t = fluid.layers.data("x_t", [32])
        >>> h_prev = fluid.layers.data("h_prev", [64])
        >>> c_prev = fluid.layers.data("c_prev", [64])
        >>> h, c = fluid.layers.lstm_unit(x_t, h_prev, c_prev)  # [-1, 64]
    """
    return _layer("lstm_unit", x_t=_name(x_t, "lstm_unit", "x_t"),
                  hidden_t_prev=_name(hidden_t_prev, "lstm_unit",
                                      "hidden_t_prev"),
                  cell_t_prev=_name(cell_t_prev, "lstm_unit", "cell_t_prev"),
                  forget_bias=float(forget_bias),
                  param_attr=_attr(param_attr, "lstm_unit"),
                  bias_attr=_attr(bias_attr, "lstm_unit", "bias_attr"),
                  name=name)


def gru_unit(input, hidden, size, param_attr=None, bias_attr=None,
             activation='tanh', gate_activation='sigmoid', origin_mode=False):
    """One GRU step of the projected gate input [N, size] (size = 3 * D)
    from hidden [N, D], as dynamic_gru computes each step. Returns
    (updated_hidden, reset_hidden_pre, gate).

        >>> x_t = fluid.layers.fc(fluid.layers.data("x", [32]), 3 * 64)
        >>> h_prev = fluid.layers.data("h_prev", [64])
        >>> h, _, _ = fluid.layers.gru_unit(x_t, h_prev, size=3 * 64)
    """
    return _layer("gru_unit", input=_name(input, "gru_unit"),
                  hidden=_name(hidden, "gru_unit", "hidden"), size=size,
                  param_attr=_attr(param_attr, "gru_unit"),
                  bias_attr=_attr(bias_attr, "gru_unit", "bias_attr"),
                  activation=activation, gate_activation=gate_activation,
                  origin_mode=origin_mode)


from .layers_io import (create_py_reader_by_data, double_buffer,  # noqa: E402,F401
                        py_reader, read_file)
from .layers_nn import (  # noqa: E402,F401
    cos_sim, diag, eye, gaussian_random, gaussian_random_batch_size_like,
    group_norm, has_inf, has_nan, isfinite, l2_normalize, linspace, ones,
    ones_like, prelu, range, smooth_l1, uniform_random,
    uniform_random_batch_size_like, zeros, zeros_like)
from .layers_loss import hsigmoid, nce  # noqa: E402,F401
from .layers_image import (  # noqa: E402,F401
    conv2d_transpose, image_resize, image_resize_short, resize_bilinear,
    resize_nearest)
from .layers_crf import (chunk_eval, crf_decoding,  # noqa: E402,F401
                         edit_distance, linear_chain_crf)
from .layers_control import (  # noqa: E402,F401
    array_length, array_read, array_write, create_array, equal,
    greater_equal, greater_than, increment, is_empty, less_equal, less_than,
    logical_and, logical_not, logical_or, logical_xor, not_equal)
from .layers_while import While, while_loop  # noqa: E402,F401
from .layers_rnn import StaticRNN  # noqa: E402,F401
from .layers_lod import (  # noqa: E402,F401
    _lod_append_var, array_to_lod_tensor, lod_append, lod_rank_table,
    lod_reset, lod_tensor_to_array, max_sequence_len,
    reorder_lod_tensor_by_rank, shrink_memory)
from .layers_drnn import DynamicRNN  # noqa: E402,F401
from .layers_cond import IfElse, Switch, cond  # noqa: E402,F401
from .layers_decode import (  # noqa: E402,F401
    beam_search, beam_search_decode)
from .layers_tensor import (  # noqa: E402,F401
    expand, gather, reduce_max, reduce_mean, reduce_min, reduce_prod,
    reduce_sum, shape, slice, squeeze, stack, unsqueeze, unstack)


def auc(input, label, curve='ROC', num_thresholds=2**12 - 1, topk=1,
        slide_steps=1):
    """Area under the ROC curve of a binary classifier, over many batches.

    `input` holds class probabilities, [N, 2] (a softmax's; column 1 is the
    probability of class 1) or [N, 1] (that probability alone), every
    value in [0, 1]; `label` is int64 [N, 1], 0 or 1. Each prediction
    falls in one of `num_thresholds` + 1 buckets (floor(p *
    num_thresholds)), counted per label in persistable int64 histograms
    that the startup program zeroes and every run of the program updates.

    Returns (auc_out, batch_auc_out, [batch_stat_pos, batch_stat_neg,
    stat_pos, stat_neg]), as Fluid does: auc_out (float64 [1]) is the area
    over every batch since the histograms were zeroed (stat_pos and
    stat_neg, [1, num_thresholds + 1]); batch_auc_out over the last
    `slide_steps` batches (batch_stat_pos and batch_stat_neg,
    [slide_steps, num_thresholds + 1], one row per batch, oldest first;
    slide_steps=0: every batch). Zero the four states (e.g.
    `scope.find_var(v.name).get_tensor().set(np.zeros(...), place)`) to
    start a new epoch or an evaluation. Under fluid.MPIExecutor each rank
    counts its own batches; fluid.metrics.global_auc(stat_pos, stat_neg)
    sums the histograms over the ranks.

    Only curve='ROC' is supported ('PR' raises NotImplementedError);
    `topk` is accepted and unused, as in Fluid.

        >>> probs = fluid.layers.fc(fluid.layers.data("x", [8]), 2,
        ...                         act="softmax")
        >>> label = fluid.layers.data("label", [1], dtype="int64")
        >>> auc_out, batch_auc_out, states = fluid.layers.auc(probs, label)
    """
    out = _layer("auc", input=_name(input, "auc"),
                 label=_name(label, "auc", "label"), curve=curve,
                 num_thresholds=num_thresholds, topk=topk,
                 slide_steps=slide_steps)
    return out[0], out[1], list(out[2:])
