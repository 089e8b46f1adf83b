"""Data sets as NumPy arrays, and a batch reader that shards by rank; or
as sample-level reader creators for the fluid.io decorators."""
import numpy as np

from . import _core

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


class fashion_mnist:
    """Fashion-MNIST from Debian's dataset-fashion-mnist (IDX, gzip):
    images float32 [N, 1, 28, 28] in [0, 1], labels int64 [N, 1].

    train() / test() return the arrays; train_reader() / test_reader()
    return reader creators over the same data, one (image, label) sample at
    a time: image a read-only float32 [1, 28, 28] array, label an int."""

    @staticmethod
    def train(data_dir=FASHION_MNIST):
        return _core.load_mnist_family(data_dir, True)

    @staticmethod
    def test(data_dir=FASHION_MNIST):
        return _core.load_mnist_family(data_dir, False)

    @staticmethod
    def train_reader(data_dir=FASHION_MNIST):
        return _sample_reader(data_dir, True)

    @staticmethod
    def test_reader(data_dir=FASHION_MNIST):
        return _sample_reader(data_dir, False)


def _sample_reader(data_dir, train):
    """A reader creator over the (image, label) samples of one split. The
    files are read on the first pass and kept for the next ones."""
    arrays = []

    def sample_reader():
        if not arrays:
            images, labels = _core.load_mnist_family(data_dir, train)
            images.flags.writeable = False
            arrays.extend((images, labels[:, 0].tolist()))
        images, labels = arrays
        for i, label in enumerate(labels):
            yield images[i], label

    return sample_reader


def reader(arrays, batch_size, rank=0, world_size=1, shuffle=True, seed=0,
           epoch=0):
    """Yields tuples of batches of `arrays` (same first dim) for this rank.
    The permutation comes from (seed, epoch) and is the same on every rank;
    it is padded by repeating its start so that every rank gets the same
    number of samples and batches (as torch's DistributedSampler)."""
    n = len(arrays[0])
    order = (np.random.RandomState((seed * 1000003 + epoch) % 2**32)
             .permutation(n) if shuffle else np.arange(n))
    per_rank = -(-n // world_size)
    order = np.resize(order, per_rank * world_size)[rank::world_size]
    for start in range(0, per_rank, batch_size):
        idx = order[start:start + batch_size]
        yield tuple(np.ascontiguousarray(a[idx]) for a in arrays)
