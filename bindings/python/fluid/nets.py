"""Composite networks built from fluid.layers, as Fluid's fluid.nets."""
from . import layers

__all__ = ["simple_img_conv_pool", "img_conv_group", "glu",
           "scaled_dot_product_attention", "sequence_conv_pool"]


def simple_img_conv_pool(input, num_filters, filter_size, pool_size,
                         pool_stride, pool_padding=0, pool_type="max",
                         global_pooling=False, conv_stride=1, conv_padding=0,
                         conv_dilation=1, conv_groups=1, param_attr=None,
                         bias_attr=None, act=None, use_cudnn=True):
    """conv2d (then act), then pool2d."""
    conv = layers.conv2d(input, num_filters=num_filters,
                         filter_size=filter_size, stride=conv_stride,
                         padding=conv_padding, dilation=conv_dilation,
                         groups=conv_groups, param_attr=param_attr,
                         bias_attr=bias_attr, act=act, use_cudnn=use_cudnn)
    return layers.pool2d(conv, pool_size=pool_size, pool_type=pool_type,
                         pool_stride=pool_stride, pool_padding=pool_padding,
                         global_pooling=global_pooling, use_cudnn=use_cudnn)


def _per_conv(value, count, arg):
    """`value` for each of `count` convs: a list of that length, or one
    value repeated."""
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise ValueError(f"img_conv_group({arg}=...): {len(value)} "
                             f"values for {count} convs (conv_num_filter)")
        return list(value)
    return [value] * count


def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1,
                   conv_filter_size=3, conv_act=None, param_attr=None,
                   conv_with_batchnorm=False, conv_batchnorm_drop_rate=0.0,
                   pool_stride=1, pool_type="max", use_cudnn=True):
    """A stack of conv2d layers (one per entry of conv_num_filter), each
    optionally followed by batch_norm (and dropout), then one pool2d.
    Per-conv arguments take one value or a list of one per conv."""
    if not isinstance(conv_num_filter, (list, tuple)) or not conv_num_filter:
        raise TypeError("img_conv_group(conv_num_filter=...): expected a "
                        "non-empty list of filter counts")
    n = len(conv_num_filter)
    padding = _per_conv(conv_padding, n, "conv_padding")
    size = _per_conv(conv_filter_size, n, "conv_filter_size")
    attrs = _per_conv(param_attr, n, "param_attr")
    with_bn = _per_conv(conv_with_batchnorm, n, "conv_with_batchnorm")
    drop = _per_conv(conv_batchnorm_drop_rate, n, "conv_batchnorm_drop_rate")
    h = input
    for i in range(n):
        # With batch norm the activation comes after it, as in Fluid.
        h = layers.conv2d(h, num_filters=conv_num_filter[i],
                          filter_size=size[i], padding=padding[i],
                          param_attr=attrs[i],
                          act=None if with_bn[i] else conv_act,
                          use_cudnn=use_cudnn)
        if with_bn[i]:
            h = layers.batch_norm(input=h, act=conv_act)
            if abs(drop[i]) > 1e-5:
                h = layers.dropout(x=h, dropout_prob=drop[i])
    return layers.pool2d(h, pool_size=pool_size, pool_type=pool_type,
                         pool_stride=pool_stride, use_cudnn=use_cudnn)


def glu(input, dim=-1):
    """Gated linear unit: a * sigmoid(b), a and b the two halves of `input`
    along `dim`."""
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(a, layers.sigmoid(b))


# ---- attention ----

def _split_heads(x, num_heads):
    """[B, L, D] -> [B, num_heads, L, D / num_heads]."""
    if num_heads == 1:
        return x
    per_head = x.shape[-1] // num_heads
    return layers.transpose(
        layers.reshape(x, shape=[0, 0, num_heads, per_head]),
        perm=[0, 2, 1, 3])


def _combine_heads(x, num_heads):
    """[B, num_heads, L, d] -> [B, L, num_heads * d]."""
    if num_heads == 1:
        return x
    t = layers.transpose(x, perm=[0, 2, 1, 3])
    return layers.reshape(t, shape=[0, 0, num_heads * x.shape[-1]])


def _check_attention_inputs(queries, keys, values, num_heads):
    name = "scaled_dot_product_attention"
    if not len(queries.shape) == len(keys.shape) == len(values.shape) == 3:
        raise ValueError(f"{name}: queries, keys and values must be 3-D "
                         f"[batch, length, hidden], got {list(queries.shape)}"
                         f", {list(keys.shape)}, {list(values.shape)}")
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"{name}: queries {list(queries.shape)} and keys "
                         f"{list(keys.shape)} must have the same hidden size")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"{name}: keys {list(keys.shape)} and values "
                         f"{list(values.shape)} must have the same length")
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or \
            num_heads <= 0:
        raise ValueError(f"{name}(num_heads={num_heads!r}): expected a "
                         "positive int")
    for arg, v in (("keys", keys), ("values", values)):
        if v.shape[-1] % num_heads != 0:
            raise ValueError(f"{name}: the hidden size of {arg} "
                             f"{list(v.shape)} does not divide into "
                             f"num_heads={num_heads}")


def scaled_dot_product_attention(queries, keys, values, num_heads=1,
                                 dropout_rate=0., additive_mask=None):
    """Fluid's multi-head scaled dot-product attention, projecting nothing:
    queries [B, Lq, D], keys [B, Lk, D] and values [B, Lk, Dv] are split
    into num_heads heads along their last dim, each head computes
    softmax(q k^T / sqrt(D / num_heads)) v (the weights through dropout
    when dropout_rate is not 0), and the heads are joined back: [B, Lq, Dv].

    additive_mask (an extension, not in Fluid 1.x): a Variable added to the
    scores [B, num_heads, Lq, Lk] before the softmax, e.g. [Lq, Lk] from
    fluid.layers.causal_attention_mask (shared by every batch and head) or
    a full [B, num_heads, Lq, Lk]; -1e9 where a position is masked gives it
    a weight of exactly 0.

    The scale 1 / sqrt(D / num_heads) is the scale op's float32 attribute,
    as in Fluid: exact when D / num_heads is a power of 4, otherwise
    rounded to float32 (about 1e-8 relative in a float64 program)."""
    _check_attention_inputs(queries, keys, values, num_heads)
    q = _split_heads(queries, num_heads)
    k = _split_heads(keys, num_heads)
    v = _split_heads(values, num_heads)
    key_dim_per_head = keys.shape[-1] // num_heads
    scaled_q = layers.scale(q, scale=key_dim_per_head ** -0.5)
    product = layers.matmul(scaled_q, k, transpose_y=True)
    if additive_mask is not None:
        product = layers.elementwise_add(product, additive_mask)
    weights = layers.softmax(product)
    if dropout_rate:
        weights = layers.dropout(weights, dropout_prob=dropout_rate,
                                 is_test=False)
    return _combine_heads(layers.matmul(weights, v), num_heads)
def sequence_conv_pool(input, num_filters, filter_size, param_attr=None,
                       act="sigmoid", pool_type="max", bias_attr=None):
    """sequence_conv (then act), then sequence_pool: one row per
    sequence."""
    conv = layers.sequence_conv(input, num_filters=num_filters,
                                filter_size=filter_size,
                                param_attr=param_attr, bias_attr=bias_attr,
                                act=act)
    return layers.sequence_pool(conv, pool_type=pool_type)
