"""Writes a tiny MNIST-shaped data set (IDX files, random 28x28 images and
labels 0-9) for the trainer's shell tests.

    make_idx.py DIR TRAIN TEST [--train-labels-from I:V]
                              [--test-labels-from I:V]

TRAIN and TEST are sample counts; --*-labels-from I:V sets labels I.. to V
(e.g. a label beyond the model's classes, met by whoever reads sample I).
"""
import argparse
import os
import random
import struct


def labels_from(spec):
    index, value = spec.split(":")
    return int(index), int(value)


def write(path_prefix, n, rng, override):
    with open(path_prefix + "-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28))
        f.write(bytes(rng.randrange(256) for _ in range(n * 784)))
    labels = [rng.randrange(10) for _ in range(n)]
    if override is not None:
        start, value = override
        labels[start:] = [value] * (n - start)
    with open(path_prefix + "-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n))
        f.write(bytes(labels))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("train", type=int)
    p.add_argument("test", type=int)
    p.add_argument("--train-labels-from", type=labels_from)
    p.add_argument("--test-labels-from", type=labels_from)
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    rng = random.Random(1)
    write(os.path.join(a.dir, "train"), a.train, rng, a.train_labels_from)
    write(os.path.join(a.dir, "t10k"), a.test, rng, a.test_labels_from)


if __name__ == "__main__":
    main()
