#!/usr/bin/env python3
"""The book's fit_a_line chapter: linear regression (fc of size 1,
square_error_cost, SGD) on a regression target made from Fashion-MNIST.
The 14 features are the mean intensities of the image's upper 14 rows; the
target is the mean intensity of its lower 14 rows. The test cost (mean
squared error) is printed at the end.

    PYTHONPATH=build/python /usr/bin/python3 examples/fit_a_line.py
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 examples/fit_a_line.py
    ... --samples 512        # a quick run on the first 512 samples
"""
import numpy as np

import fluid

from book_common import parse_args, train_and_test


def upper_rows_to_lower_mean(sample):
    """(image, label) -> (x: 14 upper row means, y: lower half's mean)."""
    image, _ = sample
    rows = image[0].mean(axis=1)
    return (rows[:14].astype(np.float32),
            np.array([rows[14:].mean()], dtype=np.float32))


def main():
    a = parse_args(__doc__, lr=0.1, batch_size=20)
    main_p, startup = fluid.Program(), fluid.Program()
    main_p.random_seed = a.seed
    with fluid.program_guard(main_p, startup):
        x = fluid.layers.data(name="x", shape=[14], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        y_predict = fluid.layers.fc(input=x, size=1, act=None)
        cost = fluid.layers.square_error_cost(input=y_predict, label=y)
        avg_cost = fluid.layers.mean(cost)
        test_p = main_p.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=a.lr).minimize(avg_cost)
    train_and_test(a, (main_p, startup, test_p), [x, y], [avg_cost],
                   ["cost"], mapper=upper_rows_to_lower_mean)


if __name__ == "__main__":
    main()
