"""Fluid 1.x's sampled and tree-structured losses of word2vec-style
models: fluid.layers.nce (noise-contrastive estimation) and hsigmoid (the
hierarchical sigmoid).

    words = fluid.layers.data("words", [1], dtype="int64")
    target = fluid.layers.data("target", [1], dtype="int64")
    emb = fluid.layers.embedding(words, size=[dict_size, 32],
                                 is_sparse=True)
    emb = fluid.layers.reshape(emb, [-1, 32])
    cost = fluid.layers.nce(emb, target, num_total_classes=dict_size,
                            num_neg_samples=5, is_sparse=True)
    loss = fluid.layers.mean(cost)

Both create a weight table (and a bias) over the classes; with
is_sparse=True the gradients of those tables are sparse rows (the classes
or tree nodes the batch touched), which the optimizers apply row by row
and fluid.MPIExecutor gathers across ranks instead of allreducing every
row.
"""
import numbers

from . import layers as _layers

__all__ = ["hsigmoid", "nce"]


def _optional(x, layer, arg):
    """The name of an optional Variable argument, or None."""
    return None if x is None else _layers._name(x, layer, arg)


def _int(value, layer, arg):
    """An int argument (a bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{layer}({arg}={value!r}): expected an int")
    return int(value)


def _custom_dist(custom_dist, num_total_classes):
    """custom_dist as the text of its probabilities, checked."""
    import numpy as np
    p = np.asarray(custom_dist, dtype="float64").ravel()
    if p.size != num_total_classes:
        raise ValueError(
            f"nce(custom_dist=...): {p.size} probabilities, but "
            f"num_total_classes is {num_total_classes}; give one per class")
    if (p < 0).any() or abs(p.sum() - 1.0) > 1e-3:
        raise ValueError("nce(custom_dist=...): must be a distribution "
                         "(probabilities >= 0 that sum to 1), sums to "
                         f"{p.sum()!r}")
    return " ".join(repr(float(v)) for v in p)


def nce(input, label, num_total_classes, sample_weight=None,
        param_attr=None, bias_attr=None, num_neg_samples=None, name=None,
        sampler="uniform", custom_dist=None, seed=0, is_sparse=False):
    """Noise-contrastive estimation: the cost [N, 1] of each row of
    `input` [N, D] against its true classes `label` (int64 [N, num_true])
    and num_neg_samples (default 10) classes drawn from a noise
    distribution P, as Fluid's nce layer returns it: with o =
    sigmoid(input . w_c + b_c) and q = num_neg_samples * P(c),

        (sum over true c of -log(o / (o + q))
         + sum over drawn c of -log(q / (o + q))) / (num_neg_samples + 1),

    times sample_weight ([N] or [N, 1]) when given. The layer creates the
    weight [num_total_classes, D] (param_attr, Xavier at first) and the
    bias [num_total_classes, 1] (bias_attr, zeros; bias_attr=False: none).

    sampler: "uniform" (P(c) = 1 / num_total_classes), "log_uniform"
    (P(c) = log((c + 2) / (c + 1)) / log(num_total_classes), for classes
    sorted by decreasing frequency) or "custom_dist" (P = custom_dist, a
    list of num_total_classes probabilities). The draws are a function of
    (seed, step, row): a counter the layer creates advances at every run
    of the program, so each step draws new classes, the same on every
    rank of fluid.MPIExecutor, and a rerun draws them again. seed=0
    derives a seed from the layer's output name (Fluid draws
    unreproducible classes then). is_sparse=True: the weight's and the
    bias's gradients are sparse rows.

        >>> cost = fluid.layers.nce(emb, target, num_total_classes=10000,
        ...                         num_neg_samples=5, sampler="log_uniform")
        >>> loss = fluid.layers.mean(cost)
    """
    layer = "nce"
    num_total_classes = _int(num_total_classes, layer, "num_total_classes")
    num_neg_samples = 10 if num_neg_samples is None else _int(
        num_neg_samples, layer, "num_neg_samples")
    if sampler not in ("uniform", "log_uniform", "custom_dist"):
        raise ValueError(f"nce(sampler={sampler!r}): expected 'uniform', "
                         "'log_uniform' or 'custom_dist'")
    dist = None
    if sampler == "custom_dist":
        if custom_dist is None:
            raise ValueError("nce(sampler='custom_dist'): give the "
                             "distribution as custom_dist, one probability "
                             "per class")
        dist = _custom_dist(custom_dist, num_total_classes)
    return _layers._layer(
        "nce", input=_layers._name(input, layer),
        label=_layers._name(label, layer, "label"),
        num_total_classes=num_total_classes,
        sample_weight=_optional(sample_weight, layer, "sample_weight"),
        param_attr=_layers._attr(param_attr, layer),
        bias_attr=_layers._attr(bias_attr, layer, "bias_attr"),
        num_neg_samples=num_neg_samples, name=name, sampler=sampler,
        custom_dist=dist, seed=_int(seed, layer, "seed"),
        is_sparse=bool(is_sparse))


def hsigmoid(input, label, num_classes, param_attr=None, bias_attr=None,
             name=None, path_table=None, path_code=None, is_custom=False,
             is_sparse=False):
    """The hierarchical sigmoid loss [N, 1] of each row of `input` [N, D]
    against its class `label` (int64 [N, 1]): the sum, over the nodes on
    the class's path from the root of a binary tree, of the binary
    cross-entropy of sigmoid(input . w_n + b_n) against the path's code
    bit at that node.

    The default tree is Fluid's complete binary tree over num_classes
    leaves (num_classes >= 2) with num_classes - 1 inner nodes: class k
    sits at heap position k + num_classes, and its path climbs to the
    root through nodes (position >> (j + 1)) - 1, each with the code bit
    (position >> j) & 1. With is_custom=True each row gives its own path:
    path_table (int64 [N, L], the inner nodes, ending at the first
    negative entry) and path_code (int64 [N, L], bits 0 or 1), and
    num_classes counts the tree's inner nodes.

    The layer creates the weight [num_classes - 1, D] ([num_classes, D]
    for a custom tree; param_attr) and the bias of the same rows
    (bias_attr; False: none). is_sparse=True makes the weight's gradient
    sparse rows (the nodes the batch's paths visit); Fluid 1.x turns it
    off for the default tree, here it works with either tree.

    Fluid's op adds log(2) to the loss for every step a path is shorter
    than the longest one (a constant without gradient); the value here is
    the sum over the path alone.

        >>> cost = fluid.layers.hsigmoid(hidden, label, num_classes=10000)
        >>> loss = fluid.layers.mean(cost)
    """
    layer = "hsigmoid"
    if not is_custom:
        if num_classes is None or _int(num_classes, layer,
                                       "num_classes") < 2:
            raise ValueError(f"hsigmoid(num_classes={num_classes!r}): must "
                             "be at least 2 with the default tree")
        if path_table is not None or path_code is not None:
            raise ValueError("hsigmoid(path_table=..., path_code=...): only "
                             "num_classes is given without a custom tree; "
                             "pass is_custom=True to use them")
    else:
        if path_table is None or path_code is None:
            raise ValueError("hsigmoid(is_custom=True): needs both "
                             "path_table and path_code")
        if num_classes is None:
            raise ValueError("hsigmoid(is_custom=True): num_classes (the "
                             "custom tree's inner nodes) must be given")
    return _layers._layer(
        "hsigmoid", input=_layers._name(input, layer),
        label=_layers._name(label, layer, "label"),
        num_classes=_int(num_classes, layer, "num_classes"),
        param_attr=_layers._attr(param_attr, layer),
        bias_attr=_layers._attr(bias_attr, layer, "bias_attr"), name=name,
        path_table=_optional(path_table, layer, "path_table"),
        path_code=_optional(path_code, layer, "path_code"),
        is_custom=bool(is_custom), is_sparse=bool(is_sparse))
