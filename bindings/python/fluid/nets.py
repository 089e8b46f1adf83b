"""Composite networks built from fluid.layers, as Fluid's fluid.nets."""
from . import layers

__all__ = ["simple_img_conv_pool", "img_conv_group", "glu",
           "sequence_conv_pool"]


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


def sequence_conv_pool(input, num_filters, filter_size, param_attr=None,
                       act="sigmoid", pool_type="max", bias_attr=None):
    """sequence_conv (then act), then sequence_pool: one row per
    sequence."""
    conv = layers.sequence_conv(input, num_filters=num_filters,
                                filter_size=filter_size,
                                param_attr=param_attr, bias_attr=bias_attr,
                                act=act)
    return layers.sequence_pool(conv, pool_type=pool_type)
