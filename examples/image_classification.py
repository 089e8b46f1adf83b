#!/usr/bin/env python3
"""The book's image_classification chapter, ResNet, on Fashion-MNIST: a
conv_bn_layer helper, basic residual blocks in three stages (16, 32 and 64
channels; stages 2 and 3 halve the size and project the shortcut with a
1x1 conv), global average pooling and a softmax classifier. The network
is the built-in `trainer --model resnet` written with fluid.layers.

    PYTHONPATH=build/python /usr/bin/python3 examples/image_classification.py
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 \\
        examples/image_classification.py
    ... --samples 512 --depth 8   # a quick run: one block per stage
"""
import fluid

from book_common import parse_args, train_and_test


def conv_bn_layer(input, ch_out, filter_size, stride, padding, act="relu"):
    tmp = fluid.layers.conv2d(input=input, filter_size=filter_size,
                              num_filters=ch_out, stride=stride,
                              padding=padding, act=None, bias_attr=False)
    return fluid.layers.batch_norm(input=tmp, act=act)


def shortcut(input, ch_in, ch_out, stride):
    if ch_in != ch_out or stride != 1:
        return conv_bn_layer(input, ch_out, 1, stride, 0, None)
    return input


def basicblock(input, ch_in, ch_out, stride):
    tmp = conv_bn_layer(input, ch_out, 3, stride, 1)
    tmp = conv_bn_layer(tmp, ch_out, 3, 1, 1, act=None)
    short = shortcut(input, ch_in, ch_out, stride)
    return fluid.layers.elementwise_add(x=tmp, y=short, act="relu")


def layer_warp(block_func, input, ch_in, ch_out, count, stride):
    tmp = block_func(input, ch_in, ch_out, stride)
    for _ in range(1, count):
        tmp = block_func(tmp, ch_out, ch_out, 1)
    return tmp


def resnet_fashion_mnist(ipt, depth=14):
    # depth = 6 n + 2: n basic blocks in each of the three stages.
    assert (depth - 2) % 6 == 0, "depth must be 6 n + 2"
    n = (depth - 2) // 6
    conv1 = conv_bn_layer(ipt, ch_out=16, filter_size=3, stride=1, padding=1)
    res1 = layer_warp(basicblock, conv1, 16, 16, n, 1)
    res2 = layer_warp(basicblock, res1, 16, 32, n, 2)
    res3 = layer_warp(basicblock, res2, 32, 64, n, 2)
    pool = fluid.layers.pool2d(input=res3, pool_type="avg",
                               global_pooling=True)
    return fluid.layers.fc(input=pool, size=10, act="softmax")


def main():
    a = parse_args(__doc__, lr=0.05, batch_size=32, extra=lambda ap: (
        ap.add_argument("--depth", type=int, default=14,
                        help="6 n + 2: n basic blocks per stage")))
    main_p, startup = fluid.Program(), fluid.Program()
    main_p.random_seed = a.seed  # the same initial parameters on every rank
    with fluid.program_guard(main_p, startup):
        images = fluid.layers.data(name="pixel", shape=[1, 28, 28],
                                   dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        predict = resnet_fashion_mnist(images, a.depth)
        cost = fluid.layers.cross_entropy(input=predict, label=label)
        avg_cost = fluid.layers.mean(cost)
        acc = fluid.layers.accuracy(input=predict, label=label)
        test_p = main_p.clone(for_test=True)
        fluid.optimizer.Momentum(learning_rate=a.lr,
                                 momentum=0.9).minimize(avg_cost)
    train_and_test(a, (main_p, startup, test_p), [images, label],
                   [avg_cost, acc], ["loss", "accuracy"])


if __name__ == "__main__":
    main()
