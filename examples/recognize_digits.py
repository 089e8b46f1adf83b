#!/usr/bin/env python3
"""The book's recognize_digits chapter, convolutional network, on
Fashion-MNIST: two fluid.nets.simple_img_conv_pool blocks (the first
followed by batch_norm) and a softmax classifier.

    PYTHONPATH=build/python /usr/bin/python3 examples/recognize_digits.py
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 examples/recognize_digits.py
    ... --samples 512        # a quick run on the first 512 samples
"""
import fluid

from book_common import parse_args, train_and_test


def convolutional_neural_network(img):
    conv_pool_1 = fluid.nets.simple_img_conv_pool(
        input=img, filter_size=5, num_filters=20, pool_size=2,
        pool_stride=2, act="relu")
    conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
    conv_pool_2 = fluid.nets.simple_img_conv_pool(
        input=conv_pool_1, filter_size=5, num_filters=50, pool_size=2,
        pool_stride=2, act="relu")
    return fluid.layers.fc(input=conv_pool_2, size=10, act="softmax")


def main():
    a = parse_args(__doc__, lr=0.001)
    main_p, startup = fluid.Program(), fluid.Program()
    main_p.random_seed = a.seed  # the same initial parameters on every rank
    with fluid.program_guard(main_p, startup):
        img = fluid.layers.data(name="img", shape=[1, 28, 28],
                                dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        prediction = convolutional_neural_network(img)
        loss = fluid.layers.cross_entropy(input=prediction, label=label)
        avg_loss = fluid.layers.mean(loss)
        acc = fluid.layers.accuracy(input=prediction, label=label)
        test_p = main_p.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=a.lr).minimize(avg_loss)
    train_and_test(a, (main_p, startup, test_p), [img, label],
                   [avg_loss, acc], ["loss", "accuracy"])


if __name__ == "__main__":
    main()
