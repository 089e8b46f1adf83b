"""Data feeding: the reader decorators of fluid.io, fluid.DataFeeder, the
sample-level Fashion-MNIST readers, and a training loop built from them."""
import threading
import time

import numpy as np
import pytest

import fluid

L = fluid.layers
io = fluid.io

_SCOPES = []  # kept alive for the session (see test_executor.py)


def from_list(items):
    return lambda: iter(list(items))


def consume(reader):
    return list(reader())


def reader_threads(timeout=5.0):
    """The helper threads of fluid.io still alive after waiting up to
    `timeout` seconds for them to end."""
    deadline = time.time() + timeout
    while True:
        alive = [t.name for t in threading.enumerate()
                 if t.name.startswith("fluid.io.")]
        if not alive or time.time() > deadline:
            return alive
        time.sleep(0.01)


# ---- batch ----

def test_batch_groups_and_keeps_the_short_last_batch():
    r = io.batch(from_list(range(7)), 3)
    assert consume(r) == [[0, 1, 2], [3, 4, 5], [6]]
    assert consume(r) == [[0, 1, 2], [3, 4, 5], [6]]  # a new pass


def test_batch_drop_last():
    assert consume(io.batch(from_list(range(7)), 3, drop_last=True)) == \
        [[0, 1, 2], [3, 4, 5]]
    assert consume(io.batch(from_list(range(6)), 3, drop_last=True)) == \
        [[0, 1, 2], [3, 4, 5]]
    assert consume(io.batch(from_list([]), 3)) == []


@pytest.mark.parametrize("size", [0, -1, 2.5, True])
def test_batch_size_must_be_positive_int(size):
    with pytest.raises(ValueError, match="batch_size"):
        io.batch(from_list(range(3)), size)


# ---- shuffle ----

def test_shuffle_permutes_within_windows():
    out = consume(io.shuffle(from_list(range(8)), 3, seed=1))
    assert sorted(out[0:3]) == [0, 1, 2]
    assert sorted(out[3:6]) == [3, 4, 5]
    assert sorted(out[6:]) == [6, 7]


def test_shuffle_is_deterministic_given_a_seed():
    data = list(range(50))
    a = io.shuffle(from_list(data), 100, seed=7)
    b = io.shuffle(from_list(data), 100, seed=7)
    a1, a2 = consume(a), consume(a)
    assert sorted(a1) == data and sorted(a2) == data
    assert a1 != data
    assert a1 != a2  # each pass its own order
    assert consume(b) == a1 and consume(b) == a2  # ... reproducibly
    assert consume(io.shuffle(from_list(data), 100, seed=8)) != a1


def test_shuffle_seed_defaults_to_the_main_program_seed():
    data = list(range(30))
    main = fluid.Program()
    main.random_seed = 5
    with fluid.program_guard(main):
        r = io.shuffle(from_list(data), 100)
    assert consume(r) == consume(io.shuffle(from_list(data), 100, seed=5))


# ---- buffered ----

def test_buffered_yields_the_same_samples():
    assert consume(io.buffered(from_list(range(100)), 7)) == list(range(100))


def test_buffered_reraises_the_reader_error():
    def bad():
        yield 1
        raise RuntimeError("disk gone")
    with pytest.raises(RuntimeError, match="disk gone"):
        consume(io.buffered(bad, 2))


def test_buffered_stops_its_thread_when_the_consumer_stops():
    r = io.buffered(from_list(range(1000)), 2)
    for i, _ in enumerate(r()):
        if i == 3:
            assert reader_threads(0) == ["fluid.io.buffered"]
            break
    assert reader_threads() == []


# ---- compose, chain, firstn, map_readers ----

def test_compose_concatenates_samples():
    a = from_list([1, 2, 3])
    b = from_list([(10, 11), (20, 21), (30, 31)])
    assert consume(io.compose(a, b)) == [(1, 10, 11), (2, 20, 21),
                                         (3, 30, 31)]


def test_compose_checks_alignment():
    a, b = from_list([1, 2, 3]), from_list([4, 5])
    with pytest.raises(io.ComposeNotAligned, match="ended after 2"):
        consume(io.compose(a, b))
    assert issubclass(io.ComposeNotAligned, ValueError)
    assert consume(io.compose(a, b, check_alignment=False)) == [(1, 4),
                                                                 (2, 5)]


def test_chain():
    assert consume(io.chain(from_list([0, 1, 2]), from_list([]),
                            from_list([10, 11]))) == [0, 1, 2, 10, 11]


def test_firstn():
    assert consume(io.firstn(from_list(range(10)), 3)) == [0, 1, 2]
    assert consume(io.firstn(from_list(range(2)), 5)) == [0, 1]
    assert consume(io.firstn(from_list(range(2)), 0)) == []
    with pytest.raises(ValueError, match="firstn"):
        io.firstn(from_list(range(2)), -1)


def test_map_readers():
    r = io.map_readers(lambda x, y: x * 10 + y, from_list([1, 2, 3]),
                       from_list([4, 5]))
    assert consume(r) == [14, 25]
    assert consume(io.map_readers(str, from_list([1, 2]))) == ["1", "2"]


# ---- xmap_readers ----

def slow_square(x):
    time.sleep(0.001 * ((x * 7) % 5))  # finishes out of order
    return x * x


def test_xmap_readers_in_order():
    r = io.xmap_readers(slow_square, from_list(range(40)), 4, 3, order=True)
    assert consume(r) == [x * x for x in range(40)]


def test_xmap_readers_unordered_gives_every_result_once():
    r = io.xmap_readers(slow_square, from_list(range(40)), 4, 3)
    assert sorted(consume(r)) == [x * x for x in range(40)]


def test_xmap_readers_reraises_mapper_and_reader_errors():
    def mapper(x):
        if x == 5:
            raise KeyError("sample 5")
        return x
    with pytest.raises(KeyError, match="sample 5"):
        consume(io.xmap_readers(mapper, from_list(range(20)), 2, 2))

    def bad():
        yield 1
        raise OSError("truncated")
    with pytest.raises(OSError, match="truncated"):
        consume(io.xmap_readers(lambda x: x, bad, 2, 2, order=True))


def test_xmap_readers_stops_its_threads_when_the_consumer_stops():
    r = io.firstn(io.xmap_readers(lambda x: x, from_list(range(1000)), 3, 2,
                                  order=True), 5)
    assert consume(r) == [0, 1, 2, 3, 4]
    assert reader_threads() == []


# ---- shard ----

def test_shard_hand_computed():
    parts = [consume(io.shard(from_list(range(10)), r, 3)) for r in range(3)]
    assert parts == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]  # 9 dropped


@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("n", [0, 1, 6, 13, 28, 29])
def test_shard_gives_every_rank_the_same_count(world_size, n):
    parts = [consume(io.shard(from_list(range(n)), r, world_size))
             for r in range(world_size)]
    assert [len(p) for p in parts] == [n // world_size] * world_size
    taken = sorted(x for p in parts for x in p)
    assert taken == list(range(n // world_size * world_size))


def test_shard_of_batches_gives_equal_batch_counts():
    batches = io.batch(from_list(range(23)), 4)  # 6 batches, the last of 3
    parts = [consume(io.shard(batches, r, 4)) for r in range(4)]
    assert [len(p) for p in parts] == [1, 1, 1, 1]
    assert parts[1] == [[4, 5, 6, 7]]
    parts = [consume(io.shard(batches, r, 3)) for r in range(3)]
    assert [len(p) for p in parts] == [2, 2, 2]
    assert parts[2] == [[8, 9, 10, 11], [20, 21, 22]]


def test_shard_after_a_seeded_shuffle_partitions_the_data():
    data = list(range(40))
    parts = [consume(io.shard(io.shuffle(from_list(data), 64, seed=3), r, 4))
             for r in range(4)]
    assert sorted(x for p in parts for x in p) == data
    assert parts[0] != data[0::4]


def test_shard_defaults_to_the_launcher_rank(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "2")
    assert consume(io.shard(from_list(range(10)))) == [2, 6]
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE")
    monkeypatch.delenv("OMPI_COMM_WORLD_RANK")
    monkeypatch.delenv("PMI_SIZE", raising=False)
    monkeypatch.delenv("PMI_RANK", raising=False)
    monkeypatch.delenv("PMIX_RANK", raising=False)
    assert consume(io.shard(from_list(range(3)))) == [0, 1, 2]


@pytest.mark.parametrize("rank,world_size", [(3, 3), (-1, 2), (0, 0)])
def test_shard_rejects_bad_ranks(rank, world_size):
    with pytest.raises(ValueError, match="shard"):
        io.shard(from_list(range(3)), rank, world_size)


# ---- DataFeeder ----

def mnist_slots():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
    return main, startup, image, label


def test_feeder_converts_dtypes_and_shapes():
    main, _, image, label = mnist_slots()
    feeder = fluid.DataFeeder(feed_list=[image, label],
                              place=fluid.CPUPlace())
    rng = np.random.RandomState(0)
    flat = [rng.rand(784) for _ in range(3)]  # float64, flat
    out = feeder.feed([(flat[0], 3), (flat[1], 0), (flat[2].tolist(), 9)])
    assert set(out) == {"image", "label"}
    assert out["image"].dtype == np.float32
    assert out["image"].shape == (3, 1, 28, 28)
    np.testing.assert_array_equal(out["image"][1, 0],
                                  flat[1].reshape(28, 28).astype(np.float32))
    assert out["label"].dtype == np.int64
    np.testing.assert_array_equal(out["label"], [[3], [0], [9]])

    cube = rng.rand(2, 1, 28, 28).astype(np.float32)
    out = feeder.feed([[cube[0], np.int32(1)], [cube[1], [2]]])
    np.testing.assert_array_equal(out["image"], cube)
    np.testing.assert_array_equal(out["label"], [[1], [2]])


def test_feeder_takes_names_looked_up_in_the_program():
    main, _, _, _ = mnist_slots()
    feeder = fluid.DataFeeder(["label", "image"], fluid.CPUPlace(), main)
    out = feeder.feed([(1, np.zeros(784))])
    assert out["label"].shape == (1, 1) and out["image"].shape == \
        (1, 1, 28, 28)
    with fluid.program_guard(main):
        assert fluid.DataFeeder(["image"], None).feed_names == ["image"]
    with pytest.raises(KeyError, match="nope"):
        fluid.DataFeeder(["image", "nope"], fluid.CPUPlace(), main)


def test_feeder_errors_name_the_slot_and_the_sample():
    main, _, image, label = mnist_slots()
    feeder = fluid.DataFeeder([image, label], fluid.CPUPlace())
    good = (np.zeros(784), 1)
    with pytest.raises(ValueError, match=r"sample 2 has 1 entry.*2 slots"):
        feeder.feed([good, good, (np.zeros(784),)])
    with pytest.raises(ValueError,
                       match=r"'image', sample 1: 780 element.*784"):
        feeder.feed([good, (np.zeros(780), 1)])
    with pytest.raises(ValueError, match=r"'label'.*sample 0: 2 element"):
        feeder.feed([(np.zeros(784), [1, 2])])
    with pytest.raises(ValueError, match=r"'label' \(int64\), sample 1: "
                                         r"got str 'cat'.*integers"):
        feeder.feed([good, (np.zeros(784), "cat")])
    with pytest.raises(ValueError, match=r"'label' \(int64\), sample 0: "
                                         r"got float 1.5"):
        feeder.feed([(np.zeros(784), 1.5)])
    with pytest.raises(ValueError, match=r"'image' \(float32\), sample 0: "
                                         r"got NoneType"):
        feeder.feed([(None, 1)])
    with pytest.raises(ValueError, match=r"sample 0: got int, expected a tuple"):
        feeder.feed([5])
    with pytest.raises(ValueError, match="no samples"):
        feeder.feed([])
    with pytest.raises(TypeError, match="feed_list"):
        fluid.DataFeeder([image, 3], fluid.CPUPlace())


def test_feeder_checks_integer_range():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        idx = L.data("idx", [2], dtype="int32")
    feeder = fluid.DataFeeder([idx], fluid.CPUPlace())
    out = feeder.feed([([1, 2],), ([3, 4],)])
    assert out["idx"].dtype == np.int32 and out["idx"].shape == (2, 2)
    with pytest.raises(ValueError, match=r"'idx' \(int32\), sample 1: a "
                                         r"value does not fit int32"):
        feeder.feed([([1, 2],), ([3, 2 ** 40],)])


def test_feeder_output_goes_into_executor_run():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        y = L.data("y", [1], dtype="int64")
        logits = L.fc(x, 3)
        loss = L.mean(L.softmax_with_cross_entropy(logits, y))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    feeder = fluid.DataFeeder([x, y], fluid.CPUPlace())
    minibatch = [([0.1, 0.2, 0.3, 0.4], 2), (np.arange(4.0), 0)]
    (l1,) = exe.run(main, feed=feeder.feed(minibatch), fetch_list=[loss],
                    scope=scope)
    (l2,) = exe.run(main, feed={"x": np.array([[.1, .2, .3, .4], [0, 1, 2, 3]],
                                              np.float32),
                                "y": np.array([[2], [0]], np.int64)},
                    fetch_list=[loss], scope=scope)
    assert l1.shape == (1,) and np.isfinite(l1).all()
    np.testing.assert_array_equal(l1, l2)
    fed = feeder.decorate_reader(io.batch(from_list(minibatch), 2))
    (batch_feed,) = list(fed())
    np.testing.assert_array_equal(batch_feed["x"], feeder.feed(minibatch)["x"])


# ---- Fashion-MNIST sample readers ----

def test_fashion_mnist_sample_readers_match_the_arrays():
    x, y = fluid.datasets.fashion_mnist.test()
    samples = consume(fluid.datasets.fashion_mnist.test_reader())
    assert len(samples) == len(x) == 10000
    image, label = samples[17]
    assert image.dtype == np.float32 and image.shape == (1, 28, 28)
    assert type(label) is int and label == int(y[17, 0])
    np.testing.assert_array_equal(image, x[17])
    assert not image.flags.writeable
    first = next(iter(fluid.datasets.fashion_mnist.train_reader()()))
    np.testing.assert_array_equal(first[0],
                                  fluid.datasets.fashion_mnist.train()[0][0])


def test_mlp_trains_on_the_reader_through_batch_feeder_executor():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(image, 64, act="relu")
        logits = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Momentum(0.05, 0.9).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    feeder = fluid.DataFeeder(feed_list=[image, label],
                              place=fluid.CPUPlace(), program=main)
    train = io.batch(io.firstn(io.shuffle(
        fluid.datasets.fashion_mnist.train_reader(), 2000, seed=1), 1280),
        32, drop_last=True)
    losses = []
    for minibatch in train():
        (l,) = exe.run(main, feed=feeder.feed(minibatch), fetch_list=[loss],
                       scope=scope)
        losses.append(float(l[0]))
    assert len(losses) == 40
    assert np.isfinite(losses).all()
    assert np.mean(losses[-5:]) < 0.75 * losses[0], losses
