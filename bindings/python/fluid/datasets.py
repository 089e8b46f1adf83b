"""Data sets as NumPy arrays, and a batch reader that shards by rank."""
import numpy as np

from . import _core

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


class fashion_mnist:
    """Fashion-MNIST from Debian's dataset-fashion-mnist (IDX, gzip):
    images float32 [N, 1, 28, 28] in [0, 1], labels int64 [N, 1]."""

    @staticmethod
    def train(data_dir=FASHION_MNIST):
        return _core.load_mnist_family(data_dir, True)

    @staticmethod
    def test(data_dir=FASHION_MNIST):
        return _core.load_mnist_family(data_dir, False)


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
