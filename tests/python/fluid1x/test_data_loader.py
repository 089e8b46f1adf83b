"""Fluid 1.x's data loaders: fluid.io.DataLoader.from_generator,
fluid.io.PyReader, fluid.layers.py_reader / read_file / double_buffer /
create_py_reader_by_data, and fluid.core.EOFException.

Every form trains a small mlp to the parameters that feed= dicts of the
same batches give (bitwise: the same arrays reach the same ops), with the
double buffer on and off; iterable and non-iterable passes over two
epochs; drop_last; a generator that raises; early stops leave no thread;
sequences (lod_level=1); bad input. mpi_data_loader.py runs under
`mpirun -np 2` for the sharding across ranks."""
import os
import shutil
import subprocess
import sys
import threading
import traceback

import numpy as np
import pytest

import fluid

L = fluid.layers
HERE = os.path.dirname(os.path.abspath(__file__))
N, B, DIM, CLASSES = 40, 8, 6, 4

# Scopes outlive the executors bound to them (see test_executor.py).
_SCOPES = []

rng = np.random.RandomState(7)
X = rng.rand(N, DIM).astype("float32")
Y = rng.randint(0, CLASSES, (N, 1)).astype("int64")


def samples():
    for i in range(N):
        yield X[i], int(Y[i, 0])


def sample_lists():
    for b in range(N // B):
        yield [(X[i], int(Y[i, 0])) for i in range(b * B, (b + 1) * B)]


def batches():
    for b in range(N // B):
        yield X[b * B:(b + 1) * B], Y[b * B:(b + 1) * B]


def reference_feeds(names):
    return [dict(zip(names, batch)) for batch in batches()]


def mlp(data=None):
    """The program pair, its data variables and loss. data(main) declares
    the data variables (default: two layers.data)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x, y = data() if data else (L.data("x", [DIM]),
                                    L.data("y", [1], dtype="int64"))
        h = L.fc(x, 16, act="relu")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, CLASSES), y))
        fluid.optimizer.Momentum(0.1, 0.9).minimize(loss)
    return main, startup, x, y, loss


class Trainer:
    """A fresh scope and executor for one program pair."""

    def __init__(self, main, startup, loss):
        self.main, self.loss = main, loss
        self.scope = fluid.Scope()
        _SCOPES.append(self.scope)
        self.exe = fluid.Executor(fluid.CPUPlace())
        self.exe.run(startup, scope=self.scope)
        self.losses = []

    def step(self, feed=None, program=None):
        (l,) = self.exe.run(program or self.main, feed=feed,
                            fetch_list=[self.loss], scope=self.scope)
        self.losses.append(float(l[0]))

    def params(self):
        return {p.name: self.scope.get(p.name)
                for p in self.main.all_parameters()}

    def run_pass(self, loader):
        """One non-iterable pass: start, steps until EOFException, reset.
        Returns the steps run."""
        loader.start()
        steps = 0
        try:
            while True:
                self.step()
                steps += 1
        except fluid.core.EOFException:
            loader.reset()
        return steps


def fed_params(epochs=2, data=None):
    """Parameters and losses of the same batches fed as dicts."""
    main, startup, x, y, loss = mlp(data)
    t = Trainer(main, startup, loss)
    for _ in range(epochs):
        for feed in reference_feeds([x.name, y.name]):
            t.step(feed)
    return t.params(), t.losses


def assert_same_params(got, want):
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def set_source(loader, kind):
    if kind == "sample":
        loader.set_sample_generator(samples, batch_size=B)
    elif kind == "sample_list":
        loader.set_sample_list_generator(sample_lists)
    else:
        loader.set_batch_generator(batches)


# ---- what an iteration yields


@pytest.mark.parametrize("kind", ["sample", "sample_list", "batch"])
def test_iterable_yields_a_list_of_one_dict_per_place(kind):
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2)
    set_source(loader, kind)
    got = list(loader())
    assert len(got) == N // B
    for b, data in enumerate(got):
        assert isinstance(data, list) and len(data) == 1
        assert sorted(data[0]) == ["x", "y"]
        assert all(isinstance(v, fluid.LoDTensor) for v in data[0].values())
        np.testing.assert_array_equal(np.array(data[0]["x"]),
                                      X[b * B:(b + 1) * B])
        np.testing.assert_array_equal(np.array(data[0]["y"]),
                                      Y[b * B:(b + 1) * B])
        assert np.array(data[0]["x"]).dtype == np.float32
        assert data[0]["x"].lod() == []


def test_return_list_yields_one_list_per_place_in_feed_order():
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(
        feed_list=[y, x], capacity=2, return_list=True)
    loader.set_batch_generator(lambda: ((b[1], b[0]) for b in batches()))
    got = list(loader())
    assert len(got) == N // B
    (first,) = got[0]
    assert isinstance(first, list) and len(first) == 2
    np.testing.assert_array_equal(np.array(first[0]), Y[:B])
    np.testing.assert_array_equal(np.array(first[1]), X[:B])


def test_iterating_the_loader_itself_and_places_of_one():
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=3)
    loader.set_sample_list_generator(sample_lists, places=[fluid.CPUPlace()])
    assert loader.iterable
    assert len(list(loader)) == N // B
    loader.set_batch_generator(batches, places=fluid.CPUPlace())
    assert len(list(loader())) == N // B


# ---- training: every form gives the parameters of feed= dicts


@pytest.mark.parametrize("double_buffer", [True, False])
@pytest.mark.parametrize("kind", ["sample", "sample_list", "batch"])
def test_iterable_trains_like_feed_dicts(kind, double_buffer):
    want, want_losses = fed_params()
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(
        feed_list=[x, y], capacity=4, use_double_buffer=double_buffer)
    set_source(loader, kind)
    t = Trainer(main, startup, loss)
    for _ in range(2):
        for data in loader():
            t.step(data)
    assert t.losses == want_losses
    assert_same_params(t.params(), want)


@pytest.mark.parametrize("double_buffer", [True, False])
@pytest.mark.parametrize("kind", ["sample", "sample_list", "batch"])
def test_non_iterable_two_epochs_with_eof_and_reset(kind, double_buffer):
    want, want_losses = fed_params()
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(
        feed_list=[x, y], capacity=2, use_double_buffer=double_buffer,
        iterable=False)
    set_source(loader, kind)
    assert not loader.iterable
    t = Trainer(main, startup, loss)
    assert [t.run_pass(loader), t.run_pass(loader)] == [N // B, N // B]
    assert t.losses == want_losses
    assert_same_params(t.params(), want)


def test_double_buffer_on_and_off_give_identical_losses():
    losses = []
    for double_buffer in (True, False):
        main, startup, x, y, loss = mlp()
        loader = fluid.io.DataLoader.from_generator(
            feed_list=[x, y], capacity=1, use_double_buffer=double_buffer)
        loader.set_sample_generator(samples, batch_size=B)
        t = Trainer(main, startup, loss)
        for _ in range(3):
            for data in loader():
                t.step(data)
        losses.append(t.losses)
    assert len(losses[0]) == 3 * N // B
    assert losses[0] == losses[1]


@pytest.mark.parametrize("iterable", [True, False])
def test_pyreader_trains_like_feed_dicts(iterable):
    want, want_losses = fed_params()
    main, startup, x, y, loss = mlp()
    reader = fluid.io.PyReader(feed_list=[x, y], capacity=4,
                               iterable=iterable)
    reader.decorate_sample_generator(samples, batch_size=B)
    t = Trainer(main, startup, loss)
    for _ in range(2):
        if iterable:
            for data in reader():
                t.step(data)
        else:
            assert t.run_pass(reader) == N // B
    assert_same_params(t.params(), want)
    reader.decorate_sample_list_generator(sample_lists)
    reader.decorate_batch_generator(batches)


def test_pyreader_defaults_are_fluids():
    main, startup, x, y, loss = mlp()
    reader = fluid.io.PyReader(feed_list=[x], capacity=2)
    assert reader.iterable
    reader.decorate_batch_generator(lambda: (X[i:i + 4] for i in (0, 4)))
    (data,) = next(iter(reader()))
    np.testing.assert_array_equal(np.array(data["x"]), X[:4])


# ---- py_reader, read_file, double_buffer, create_py_reader_by_data


def py_reader_data():
    reader = L.py_reader(capacity=16, shapes=[(-1, DIM), (-1, 1)],
                         dtypes=["float32", "int64"])
    x, y = L.read_file(reader)
    py_reader_data.reader = reader
    return x, y


def test_py_reader_book_form():
    """The 1.x form of the book chapters: py_reader + read_file, the
    network on the variables it reads, decorate_paddle_reader over
    fluid.io.batch, and a loop over exe.run with no feed, on the default
    programs."""
    want, _ = fed_params(data=py_reader_data)
    fluid.reset_default_programs()
    fluid.default_main_program().random_seed = 3
    with fluid.unique_name.guard():
        train_reader = fluid.layers.py_reader(
            capacity=64, shapes=[(-1, DIM), (-1, 1)],
            dtypes=["float32", "int64"])
        x, y = fluid.layers.read_file(train_reader)
        h = L.fc(x, 16, act="relu")
        avg_loss = L.mean(L.softmax_with_cross_entropy(
            L.fc(h, CLASSES), y))
        fluid.optimizer.Momentum(0.1, 0.9).minimize(avg_loss)
    assert x.shape == (-1, DIM) and y.dtype == "int64"
    train_reader.decorate_paddle_reader(fluid.io.batch(samples, B))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    with fluid.scope_guard(scope):
        exe.run(fluid.default_startup_program())
        steps = []
        for epoch in range(2):
            train_reader.start()
            n = 0
            try:
                while True:
                    exe.run(fetch_list=[avg_loss])
                    n += 1
            except fluid.core.EOFException:
                train_reader.reset()
            steps.append(n)
    assert steps == [N // B, N // B]
    got = {p.name: scope.get(p.name)
           for p in fluid.default_main_program().all_parameters()}
    assert_same_params(got, want)
    fluid.reset_default_programs()


@pytest.mark.parametrize("double_buffer", [True, False])
def test_py_reader_tensor_provider_and_double_buffer(double_buffer):
    want, _ = fed_params(data=py_reader_data)

    def data():
        reader = L.py_reader(capacity=2, shapes=[(-1, DIM), (-1, 1)],
                             dtypes=["float32", "int64"],
                             use_double_buffer=False)
        if double_buffer:
            reader = L.double_buffer(reader)
        data.reader = reader
        return L.read_file(reader)

    main, startup, x, y, loss = mlp(data)
    reader = data.reader
    assert x.name == "py_reader_0.data_0" and reader.name == "py_reader_0"
    reader.decorate_tensor_provider(batches)
    t = Trainer(main, startup, loss)
    assert [t.run_pass(reader), t.run_pass(reader)] == [N // B, N // B]
    assert_same_params(t.params(), want)
    reader.decorate_batch_generator(batches)
    reader.decorate_sample_list_generator(sample_lists)


def test_create_py_reader_by_data_reads_the_given_variables():
    want, _ = fed_params()
    holder = {}

    def data():
        x, y = L.data("x", [DIM]), L.data("y", [1], dtype="int64")
        holder["reader"] = L.create_py_reader_by_data(capacity=4,
                                                      feed_list=[x, y])
        xs, ys = L.read_file(holder["reader"])
        assert (xs.name, ys.name) == ("x", "y")
        return xs, ys

    main, startup, x, y, loss = mlp(data)
    holder["reader"].decorate_paddle_reader(sample_lists)
    t = Trainer(main, startup, loss)
    assert [t.run_pass(holder["reader"]) for _ in range(2)] == [5, 5]
    assert_same_params(t.params(), want)


def test_read_file_of_one_variable_is_that_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        reader = L.py_reader(capacity=2, shapes=[[-1, 3]],
                             dtypes=["float32"], name="r")
        v = L.read_file(reader)
    assert isinstance(v, fluid.Variable) and v.name == "r.data_0"


def test_a_clone_reads_from_the_started_reader():
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2,
                                                iterable=False)
    loader.set_batch_generator(batches)
    t = Trainer(main, startup, loss)
    test_program = main.clone(for_test=True)
    loader.start()
    t.step()                            # batch 0, training
    t.step(program=test_program)        # batch 1, evaluation
    (l,) = t.exe.run(test_program, feed=reference_feeds(["x", "y"])[2],
                     fetch_list=[loss], scope=t.scope)   # fed: not read
    t.step()                            # batch 2
    loader.reset()
    assert len(t.losses) == 3


def test_a_feed_of_other_variables_is_merged_with_the_batch():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [DIM])
        w = L.data("w", [DIM])
        out = L.elementwise_add(x, w)
    loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2,
                                                iterable=False)
    loader.set_batch_generator(lambda: ((X[:2],) for _ in range(1)))
    exe = fluid.Executor()
    scope = fluid.Scope()
    _SCOPES.append(scope)
    loader.start()
    (got,) = exe.run(main, feed={"w": np.ones((2, DIM), "float32")},
                     fetch_list=[out], scope=scope)
    np.testing.assert_array_equal(got, X[:2] + 1)
    with pytest.raises(fluid.core.EOFException):
        exe.run(main, feed={"w": np.ones((2, DIM), "float32")},
                fetch_list=[out], scope=scope)
    loader.reset()


# ---- drop_last, EOF


@pytest.mark.parametrize("drop_last,sizes", [(True, [8, 8, 8, 8]),
                                             (False, [8, 8, 8, 8, 4])])
def test_sample_generator_drop_last(drop_last, sizes):
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2)
    loader.set_sample_generator(lambda: (s for s in list(samples())[:36]),
                                batch_size=B, drop_last=drop_last)
    got = [np.array(d[0]["x"]).shape[0] for d in loader()]
    assert got == sizes


def test_eof_repeats_until_reset_and_start_needs_reset():
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2,
                                                iterable=False)
    loader.set_batch_generator(lambda: iter(list(batches())[:1]))
    t = Trainer(main, startup, loss)
    loader.start()
    t.step()
    for _ in range(2):
        with pytest.raises(fluid.core.EOFException, match="reset()"):
            t.step()
    with pytest.raises(ValueError, match=r"start\(\) called again before "
                                         r"reset\(\)"):
        loader.start()
    loader.reset()
    loader.reset()                    # harmless when not started
    loader.start()
    t.step()
    loader.reset()


# ---- a generator that raises


class Broken(RuntimeError):
    pass


def broken_batches():
    yield from list(batches())[:2]
    raise Broken("the data file is corrupt")


@pytest.mark.parametrize("double_buffer", [True, False])
def test_iterable_reraises_the_generators_error_with_its_traceback(
        double_buffer):
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(
        feed_list=[x, y], capacity=4, use_double_buffer=double_buffer)
    loader.set_batch_generator(broken_batches)
    baseline = threading.active_count()
    seen = []
    with pytest.raises(Broken, match="corrupt") as info:
        for data in loader():
            seen.append(data)
    assert len(seen) == 2              # the batches before the error first
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "broken_batches" in frames
    del info
    assert threading.active_count() == baseline


@pytest.mark.parametrize("double_buffer", [True, False])
def test_non_iterable_reraises_then_eof_until_reset(double_buffer):
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(
        feed_list=[x, y], capacity=4, use_double_buffer=double_buffer,
        iterable=False)
    loader.set_batch_generator(broken_batches)
    t = Trainer(main, startup, loss)
    loader.start()
    t.step()
    t.step()
    with pytest.raises(Broken) as info:
        t.step()
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "broken_batches" in frames
    with pytest.raises(fluid.core.EOFException):
        t.step()
    loader.reset()


def test_a_bad_sample_names_the_slot():
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2)
    loader.set_sample_generator(lambda: iter([(X[0], "cat")] * B), B)
    with pytest.raises(ValueError, match="slot 'y'"):
        list(loader())
    loader.set_batch_generator(lambda: iter([(X[:2],)]))
    with pytest.raises(ValueError, match=r"one value per feed variable "
                                         r"\(2: x, y\), got 1 entries"):
        list(loader())


# ---- threads: stopping early leaves none behind


@pytest.mark.parametrize("capacity", [1, 3])
def test_early_break_leaves_no_thread(capacity):
    main, startup, x, y, loss = mlp()
    closed = []

    def endless():
        try:
            while True:
                yield X[:B], Y[:B]
        finally:
            closed.append(True)

    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y],
                                                capacity=capacity)
    loader.set_batch_generator(endless)
    baseline = threading.active_count()
    for _ in range(2):
        for i, data in enumerate(loader()):
            assert threading.active_count() == baseline + 1
            if i == 4:
                break
        assert threading.active_count() == baseline
    assert closed == [True, True]       # the generator was closed too


def test_reset_mid_pass_and_an_unstarted_iteration_leave_no_thread():
    main, startup, x, y, loss = mlp()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2,
                                                iterable=False)
    loader.set_batch_generator(lambda: iter(lambda: (X[:B], Y[:B]), None))
    t = Trainer(main, startup, loss)
    baseline = threading.active_count()
    loader.start()
    t.step()
    assert threading.active_count() == baseline + 1
    loader.reset()
    assert threading.active_count() == baseline
    it = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2)
    it.set_batch_generator(batches)
    pending = it()                      # never iterated: no thread yet
    assert threading.active_count() == baseline
    del pending


def test_no_thread_is_left_at_exit(tmp_path):
    """A started loader never reset, over an endless generator: the
    process still exits, 0, and the generator is closed."""
    script = tmp_path / "left_started.py"
    script.write_text(
        "import numpy as np, fluid\n"
        "x = fluid.layers.data('x', [2])\n"
        "loader = fluid.io.DataLoader.from_generator(\n"
        "    feed_list=[x], capacity=2, iterable=False)\n"
        "def endless():\n"
        "    try:\n"
        "        while True:\n"
        "            yield (np.ones((3, 2), 'float32'),)\n"
        "    finally:\n"
        "        print('generator closed', flush=True)\n"
        "loader.set_batch_generator(endless)\n"
        "loader.start()\n"
        "exe = fluid.Executor()\n"
        "print(exe.run(fetch_list=[x])[0].shape, flush=True)\n"
        "it = iter(fluid.io.DataLoader.from_generator(\n"
        "    feed_list=[x], capacity=2).set_batch_generator(endless)())\n"
        "next(it)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(3, 2)" in r.stdout
    assert r.stdout.count("generator closed") == 2, r.stdout + r.stderr


# ---- sequences (lod_level=1)


WORDS = [[1, 2, 3], [4], [5, 6], [7, 8, 9, 10], [2, 2], [3], [1, 5, 7],
         [9, 9], [4, 3, 2, 1], [6]]
LABELS = [0, 1, 0, 1, 1, 0, 0, 1, 1, 0]


def text_net():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 2
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        words = L.data("words", [1], dtype="int64", lod_level=1)
        label = L.data("label", [1], dtype="int64")
        emb = L.embedding(words, size=[12, 8])
        pooled = L.sequence_pool(emb, "sum")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(pooled, 2), label))
        fluid.optimizer.SGD(0.2).minimize(loss)
    return main, startup, words, label, loss


def text_samples():
    for w, l in zip(WORDS, LABELS):
        yield w, l


def test_sequences_through_loaders_train_like_data_feeder():
    main, startup, words, label, loss = text_net()
    feeder = fluid.DataFeeder([words, label], fluid.CPUPlace())
    want = Trainer(main, startup, loss)
    for _ in range(2):
        for minibatch in fluid.io.batch(text_samples, 4, drop_last=True)():
            want.step(feeder.feed(minibatch))

    def lod_batches():       # the same batches as LoDTensors and pairs
        for b in range(2):
            ws, ls = WORDS[4 * b:4 * b + 4], LABELS[4 * b:4 * b + 4]
            ids = np.array([i for w in ws for i in w], "int64").reshape(-1, 1)
            lengths = [len(w) for w in ws]
            seq = fluid.create_lod_tensor(ids, [lengths]) if b == 0 \
                else (ids, lengths)
            yield seq, np.array(ls, "int64").reshape(-1, 1)

    for kind in ("sample", "batch"):
        main, startup, words, label, loss = text_net()
        loader = fluid.io.DataLoader.from_generator(
            feed_list=[words, label], capacity=2, iterable=False)
        if kind == "sample":
            loader.set_sample_generator(text_samples, batch_size=4)
        else:
            loader.set_batch_generator(lod_batches)
        got = Trainer(main, startup, loss)
        assert [got.run_pass(loader), got.run_pass(loader)] == [2, 2]
        assert got.losses == want.losses, kind
        assert_same_params(got.params(), want.params())
    it = fluid.io.DataLoader.from_generator(feed_list=[words, label],
                                            capacity=2)
    it.set_sample_generator(text_samples, batch_size=4)
    first = next(iter(it()))[0]["words"]
    assert first.recursive_sequence_lengths() == [[3, 1, 2, 4]]


def test_py_reader_with_lod_levels():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        reader = L.py_reader(capacity=2, shapes=[[-1, 1], [-1, 1]],
                             dtypes=["float32", "int64"], lod_levels=[1, 0])
        words, label = L.read_file(reader)
        pooled = L.sequence_pool(words, "sum")
    assert words.lod_level == 1 and label.lod_level == 0
    reader.decorate_paddle_reader(fluid.io.batch(text_samples, 5))
    exe = fluid.Executor()
    scope = fluid.Scope()
    _SCOPES.append(scope)
    reader.start()
    (got,) = exe.run(main, fetch_list=[pooled], scope=scope)
    np.testing.assert_array_equal(got.ravel(), [6, 4, 11, 34, 4])
    reader.reset()


# ---- bad input


def test_bad_arguments_are_named():
    main, startup, x, y, loss = mlp()
    from_generator = fluid.io.DataLoader.from_generator
    cases = [
        (lambda: from_generator(feed_list=[x]), ValueError,
         "capacity .* must be a positive int, got None"),
        (lambda: from_generator(capacity=2), ValueError,
         "feed_list is required"),
        (lambda: from_generator(feed_list=["x"], capacity=2), ValueError,
         "feed_list takes Variables"),
        (lambda: from_generator(feed_list=[x, x], capacity=2), ValueError,
         "names a variable twice"),
        (lambda: from_generator(feed_list=[x], capacity=2, iterable="yes"),
         ValueError, "iterable must be True or False"),
        (lambda: fluid.io.DataLoader.from_dataset(None, None),
         NotImplementedError, "from_generator"),
        (lambda: fluid.io.PyReader(feed_list=[x], capacity=0), ValueError,
         "capacity .* got 0"),
        (lambda: L.py_reader(0, [[-1, 2]], ["float32"]), ValueError,
         "py_reader: capacity"),
        (lambda: L.py_reader(2, [[-1, 0]], ["float32"]), ValueError,
         r"shapes\[0\]"),
        (lambda: L.py_reader(2, [[-1, 2]], ["float16"]), ValueError,
         r"dtypes\[0\] = 'float16'"),
        (lambda: L.py_reader(2, [[-1, 2]], ["float32"], lod_levels=[2]),
         ValueError, "lod_levels"),
        (lambda: L.read_file(x), ValueError, "read_file: reader must be"),
        (lambda: L.double_buffer("r"), ValueError, "double_buffer"),
        (lambda: L.create_py_reader_by_data(2, ["x"]), ValueError,
         "feed_list must be a non-empty list of data Variables"),
    ]
    for make, error, match in cases:
        with pytest.raises(error, match=match):
            make()


def test_misuse_of_a_loader_is_named():
    main, startup, x, y, loss = mlp()
    it = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2)
    non = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2,
                                             iterable=False)
    with pytest.raises(ValueError, match="no data source"):
        it()
    with pytest.raises(ValueError, match="pass the function"):
        it.set_batch_generator(batches())
    with pytest.raises(ValueError, match="batch_size must be a positive"):
        it.set_sample_generator(samples, batch_size=0)
    with pytest.raises(ValueError, match="a process runs one place"):
        it.set_batch_generator(batches, places=[fluid.CPUPlace()] * 2)
    with pytest.raises(ValueError, match="places must be"):
        it.set_batch_generator(batches, places="cpu")
    with pytest.raises(ValueError, match=r"start\(\) is for loaders"):
        it.start()
    with pytest.raises(ValueError, match="iterable=False: call start"):
        non()
    with pytest.raises(ValueError, match="no data source"):
        non.start()
    non.set_batch_generator(batches)
    t = Trainer(main, startup, loss)
    with pytest.raises(ValueError, match="not started: call its start"):
        t.step()
    non.start()
    with pytest.raises(ValueError, match="the loader is started"):
        non.set_batch_generator(batches)
    non.reset()


def test_feed_lists_of_places():
    main, startup, x, y, loss = mlp()
    t = Trainer(main, startup, loss)
    feed = reference_feeds(["x", "y"])[0]
    t.step([feed])                      # a list of one dict: the dict
    with pytest.raises(ValueError, match="one per place"):
        t.step([feed, feed])
    with pytest.raises(ValueError, match="return_list=True yields values"):
        t.step([[feed["x"], feed["y"]]])


# ---- data parallel


def test_mpi_data_loader_script():
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = dict(os.environ)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
           "-x", "PYTHONPATH", sys.executable,
           os.path.join(HERE, "mpi_data_loader.py")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "FAIL" not in r.stdout, out
    assert "all 6 checks passed on 2 rank(s)" in r.stdout, out
