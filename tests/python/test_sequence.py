"""Variable-length sequences (level-1 LoD) from Python: feeding (DataFeeder,
fluid.create_lod_tensor, a (values, lengths) pair), fetching (values, or a
LoDTensor with return_numpy=False), the errors that name the slot, the
sequence layers against NumPy and PyTorch references, and data-parallel
training on ragged batches under mpirun."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import fluid

L = fluid.layers
HERE = os.path.dirname(os.path.abspath(__file__))
_SCOPES = []  # scopes outlive the executors bound to them


def run(build, feed, params=None, return_numpy=True):
    """Builds with `build()` (returning the fetch vars) in fresh programs and
    runs them once on the CPU, with the parameters in `params` (name ->
    array) set after the startup program."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build()
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for name, value in (params or {}).items():
        scope.set(name, value)
    return exe.run(main, feed=feed, fetch_list=list(fetch), scope=scope,
                   return_numpy=return_numpy)


def ragged(lengths, width=3, seed=0):
    rng = np.random.RandomState(seed)
    return [rng.uniform(-1, 1, (n, width)).astype(np.float32)
            for n in lengths]


# ---- feeding and fetching

def test_data_feeder_packs_ragged_samples_into_a_lod_tensor():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        words = L.data("words", [1], dtype="int64", lod_level=1)
        label = L.data("label", [1], dtype="int64")
    assert words.lod_level == 1 and label.lod_level == 0
    feeder = fluid.DataFeeder([words, label], fluid.CPUPlace(), program=main)
    feed = feeder.feed([([3, 1, 4], 0), ([], 1), ([1, 5], 2)])
    t = feed["words"]
    assert isinstance(t, fluid.LoDTensor)
    assert t.recursive_sequence_lengths() == [[3, 0, 2]]
    assert t.lod() == [[0, 3, 3, 5]]
    np.testing.assert_array_equal(np.array(t), [[3], [1], [4], [1], [5]])
    np.testing.assert_array_equal(feed["label"], [[0], [1], [2]])


def test_data_feeder_sequence_slot_refuses_a_scalar_naming_the_slot():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = L.data("tokens", [4], lod_level=1)
    feeder = fluid.DataFeeder([x], fluid.CPUPlace(), program=main)
    with pytest.raises(ValueError, match="'tokens'.*sequence"):
        feeder.feed([(3.0,)])
    with pytest.raises(ValueError, match="'tokens'.*whole number of rows"):
        feeder.feed([(np.zeros(6),)])


def test_three_feed_forms_and_the_fetch_of_a_sequence_batch():
    seqs = ragged([2, 3])
    values = np.concatenate(seqs)

    def build():
        x = L.data("x", [3], lod_level=1)
        return [L.scale(x, 2.0)]

    forms = [fluid.create_lod_tensor(values, [[2, 3]], fluid.CPUPlace()),
             (values, [2, 3])]
    for feed in forms:
        (out,) = run(build, {"x": feed})
        np.testing.assert_allclose(out, 2 * values)
    (t,) = run(build, {"x": (values, [2, 3])}, return_numpy=False)
    assert t.recursive_sequence_lengths() == [[2, 3]]
    assert t.lod() == [[0, 2, 5]]
    np.testing.assert_allclose(np.array(t), 2 * values)


def test_a_dense_array_for_a_sequence_slot_is_an_error_naming_it():
    def build():
        x = L.data("seq_in", [3], lod_level=1)
        return [L.scale(x, 2.0)]

    with pytest.raises(Exception, match="seq_in.*lod_level"):
        run(build, {"seq_in": np.zeros((4, 3), np.float32)})


def test_lengths_that_do_not_match_the_data_are_errors():
    values = np.zeros((5, 3), np.float32)
    with pytest.raises(ValueError, match="sum to 4 but the data has 5 rows"):
        fluid.create_lod_tensor(values, [[1, 3]], fluid.CPUPlace())
    with pytest.raises(ValueError, match="'x'.*sum to 6"):
        run(lambda: [L.data("x", [3], lod_level=1)], {"x": (values, [2, 4])})
    with pytest.raises(ValueError, match="length -1"):
        fluid.create_lod_tensor(values, [[6, -1]], fluid.CPUPlace())


def test_create_lod_tensor_from_lists_of_ids():
    t = fluid.create_lod_tensor([[1, 2], [3]], [[2, 1]], fluid.CPUPlace())
    assert np.array(t).dtype == np.int64
    assert np.array(t).shape == (3, 1)
    assert t.recursive_sequence_lengths() == [[2, 1]]


# ---- layers against references

@pytest.mark.parametrize("pool_type", ["sum", "average", "sqrt", "max",
                                       "last", "first"])
def test_sequence_pool_matches_numpy_with_an_empty_sequence(pool_type):
    seqs = ragged([3, 0, 1, 4], seed=1)
    ref = {"sum": lambda s: s.sum(0), "average": lambda s: s.mean(0),
           "sqrt": lambda s: s.sum(0) / np.sqrt(len(s)),
           "max": lambda s: s.max(0), "last": lambda s: s[-1],
           "first": lambda s: s[0]}[pool_type]
    want = np.stack([ref(s) if len(s) else np.full(3, -1.0) for s in seqs])

    def build():
        x = L.data("x", [3], lod_level=1)
        return [L.sequence_pool(x, pool_type, pad_value=-1.0)]

    (out,) = run(build, {"x": (np.concatenate(seqs), [3, 0, 1, 4])})
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_first_and_last_step():
    seqs = ragged([2, 3], seed=2)

    def build():
        x = L.data("x", [3], lod_level=1)
        return [L.sequence_first_step(x), L.sequence_last_step(x)]

    first, last = run(build, {"x": (np.concatenate(seqs), [2, 3])})
    np.testing.assert_allclose(first, [s[0] for s in seqs])
    np.testing.assert_allclose(last, [s[-1] for s in seqs])


def test_sequence_softmax_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(3)
    lengths = [4, 1, 3]
    values = rng.uniform(-3, 3, (8, 1)).astype(np.float32)

    def build():
        x = L.data("x", [1], lod_level=1)
        return [L.sequence_softmax(x)]

    (out,) = run(build, {"x": (values, lengths)})
    want, at = [], 0
    for n in lengths:
        want.append(torch.softmax(torch.from_numpy(values[at:at + n, 0]),
                                  0).numpy())
        at += n
    np.testing.assert_allclose(out[:, 0], np.concatenate(want), rtol=1e-5)


def test_sequence_pool_refuses_an_unknown_type_naming_the_argument():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data("x", [3], lod_level=1)
        with pytest.raises(Exception, match="pool_type.*median"):
            L.sequence_pool(x, "median")


def test_fc_keeps_the_lod_of_its_rows():
    seqs = ragged([2, 0, 3], seed=4)

    def build():
        x = L.data("x", [3], lod_level=1)
        return [L.fc(x, 4, act="relu")]

    (t,) = run(build, {"x": (np.concatenate(seqs), [2, 0, 3])},
               return_numpy=False)
    assert t.recursive_sequence_lengths() == [[2, 0, 3]]
    assert np.array(t).shape == (5, 4)


def test_fc_of_several_inputs_and_sums_keep_the_lod():
    # The stacked LSTM's fc(input=[fc, lstm]) sums its projections.
    seqs = ragged([2, 0, 3], seed=6)

    def build():
        x = L.data("x", [3], lod_level=1)
        h = L.fc(x, 4)
        return [L.fc([x, h], 4), L.sums([x, x])]

    fc, total = run(build, {"x": (np.concatenate(seqs), [2, 0, 3])},
                    return_numpy=False)
    for t in (fc, total):
        assert t.recursive_sequence_lengths() == [[2, 0, 3]]
    np.testing.assert_allclose(np.array(total), 2 * np.concatenate(seqs))


@pytest.mark.parametrize("is_sparse", [False, True])
def test_embedding_keeps_the_lod_of_its_ids(is_sparse):
    # The book's text models: embedding of a lod_level=1 slot, then
    # sequence ops over it.
    table = np.random.RandomState(5).uniform(-1, 1, (7, 3)).astype(np.float32)
    ids = np.array([[1], [6], [2], [2], [0]], np.int64)

    def build():
        words = L.data("words", [1], dtype="int64", lod_level=1)
        emb = L.embedding(words, size=[7, 3], is_sparse=is_sparse,
                          param_attr="table")
        return [emb, L.sequence_pool(emb, "sum")]

    emb, pooled = run(build, {"words": (ids, [2, 0, 3])}, {"table": table},
                      return_numpy=False)
    assert emb.recursive_sequence_lengths() == [[2, 0, 3]]
    np.testing.assert_allclose(np.array(emb), table[ids[:, 0]])
    want = [table[[1, 6]].sum(0), np.zeros(3), table[[2, 2, 0]].sum(0)]
    np.testing.assert_allclose(np.array(pooled), want, rtol=1e-6)


def test_sequence_expand_repeats_rows_and_sequences():
    y_vals = np.zeros((5, 1), np.float32)
    x_rows = np.arange(6, dtype=np.float32).reshape(3, 2)

    def build_dense():
        x = L.data("x", [2])
        y = L.data("y", [1], lod_level=1)
        return [L.sequence_expand(x, y)]

    (t,) = run(build_dense, {"x": x_rows, "y": (y_vals, [2, 0, 3])},
               return_numpy=False)
    np.testing.assert_array_equal(np.array(t), x_rows[[0, 0, 2, 2, 2]])
    assert t.recursive_sequence_lengths() == [[2, 0, 3]]

    def build_lod():
        x = L.data("x", [2], lod_level=1)
        y = L.data("y", [1], lod_level=1)
        return [L.sequence_expand(x, y)]

    (t,) = run(build_lod, {"x": (x_rows, [1, 2]),
                           "y": (np.zeros((3, 1), np.float32), [2, 1])},
               return_numpy=False)
    np.testing.assert_array_equal(np.array(t), x_rows[[0, 0, 1, 2]])
    assert t.recursive_sequence_lengths() == [[1, 1, 2]]


def test_sequence_mask_matches_torch():
    torch = pytest.importorskip("torch")
    lengths = np.array([3, 0, 5, 1], np.int64)

    def build():
        x = L.data("len", [], dtype="int64")
        return [L.sequence_mask(x), L.sequence_mask(x, maxlen=6,
                                                    dtype="float32")]

    m, f = run(build, {"len": lengths})
    want = (torch.arange(5)[None, :] < torch.from_numpy(lengths)[:, None])
    np.testing.assert_array_equal(m, want.numpy().astype(np.int64))
    assert f.dtype == np.float32 and f.shape == (4, 6)
    np.testing.assert_array_equal(f[:, :5], want.numpy())


def test_sequence_pad_and_unpad_round_trip():
    seqs = ragged([2, 0, 3], seed=5)

    def build():
        x = L.data("x", [3], lod_level=1)
        pad = L.assign(np.array([-1.0], np.float32))
        out, length = L.sequence_pad(x, pad, maxlen=4)
        return [out, length, L.sequence_unpad(out, length)]

    out, length, back = run(build, {"x": (np.concatenate(seqs), [2, 0, 3])},
                            return_numpy=False)
    out = np.array(out)
    assert out.shape == (3, 4, 3)
    np.testing.assert_array_equal(np.array(length), [2, 0, 3])
    for i, s in enumerate(seqs):
        np.testing.assert_array_equal(out[i, :len(s)], s)
        assert (out[i, len(s):] == -1).all()
    np.testing.assert_array_equal(np.array(back), np.concatenate(seqs))
    assert back.recursive_sequence_lengths() == [[2, 0, 3]]


def test_sequence_conv_matches_torch_conv1d_per_sequence():
    torch = pytest.importorskip("torch")
    seqs = ragged([4, 1, 3], width=2, seed=6)
    w = np.random.RandomState(7).uniform(-1, 1, (3 * 2, 5)).astype(np.float32)

    def build():
        x = L.data("x", [2], lod_level=1)
        return [L.sequence_conv(x, 5, filter_size=3, bias_attr=False,
                                param_attr=fluid.ParamAttr(name="conv_w"))]

    (out,) = run(build, {"x": (np.concatenate(seqs), [4, 1, 3])},
                 params={"conv_w": w})
    # Filter [k * D, M] row j * D + d is torch's weight [M, D, k] at [:, d, j].
    weight = torch.from_numpy(w.reshape(3, 2, 5).transpose(2, 1, 0).copy())
    want = [torch.nn.functional.conv1d(
        torch.from_numpy(s.T[None].copy()), weight, padding=1)[0].T.numpy()
        for s in seqs]
    np.testing.assert_allclose(out, np.concatenate(want), rtol=1e-5,
                               atol=1e-6)


def test_sequence_conv_pool_trains():
    rng = np.random.RandomState(8)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        main.random_seed = 3
        x = L.data("x", [4], lod_level=1)
        label = L.data("label", [1], dtype="int64")
        h = fluid.nets.sequence_conv_pool(x, num_filters=8, filter_size=3,
                                          act="tanh", pool_type="max")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 2), label))
        fluid.optimizer.SGD(0.5).minimize(loss)
    feeder = fluid.DataFeeder([x, label], fluid.CPUPlace(), program=main)
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(30):
        batch = []
        for _ in range(8):
            y = int(rng.randint(2))
            seq = rng.rand(int(rng.randint(1, 6)), 4).astype(np.float32)
            seq[:, 0] += 2.0 * y
            batch.append((seq, [y]))
        (l,) = exe.run(main, feed=feeder.feed(batch), fetch_list=[loss],
                       scope=scope)
        losses.append(float(l))
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5]), losses


# ---- data parallel

def test_ragged_batches_train_the_same_under_mpirun(tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = dict(os.environ)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
           "-x", "PYTHONPATH", sys.executable,
           os.path.join(HERE, "mpi_sequence.py"), str(tmp_path)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "PASS on 2 rank(s)" in r.stdout, out
    for pool in ("sum", "average", "max"):
        a = np.load(tmp_path / f"rank0_{pool}.npz")
        b = np.load(tmp_path / f"rank1_{pool}.npz")
        assert sorted(a.files) == sorted(b.files)
        for n in a.files:
            assert a[n].tobytes() == b[n].tobytes(), (pool, n)


def test_concat_along_features_and_cross_entropy_keep_the_sequences():
    """concat on a later axis and cross_entropy keep their rows, so they
    keep the batch's LoD (as Fluid's): a per-token cost sums per sequence."""
    seqs = ragged([2, 3])
    values = np.concatenate(seqs)
    label = np.array([[0], [1], [2], [0], [1]], dtype=np.int64)

    def build():
        x = L.data("x", [3], lod_level=1)
        y = L.data("y", [1], dtype="int64", lod_level=1)
        both = L.concat([x, L.scale(x, 2.0)], axis=1)
        cost = L.cross_entropy(L.softmax(x), y)
        return [both, L.sequence_pool(cost, "sum")]

    both, pooled = run(build, {"x": (values, [2, 3]), "y": (label, [2, 3])},
                       return_numpy=False)
    assert both.lod() == [[0, 2, 5]]
    p = np.exp(values) / np.exp(values).sum(1, keepdims=True)
    token = -np.log(p[np.arange(5), label[:, 0]])
    np.testing.assert_allclose(np.array(pooled)[:, 0],
                               [token[:2].sum(), token[2:].sum()], rtol=1e-5)
