"""fluid.metrics and fluid.layers.auc, with Fluid 1.x's names, arguments and
returns, against references written here: NumPy (or plain Python) counts
for the metrics, and for every AUC the fraction of (positive, negative)
pairs ranked right, counted pair by pair (a pair in one bucket counts one
half, which is what a trapezoid under the thresholded ROC curve gives).

The book's loop (train with `auc_var, batch_auc_var, auc_states =
fluid.layers.auc(...)`, zero the states between epochs, evaluate a
`clone(for_test=True)` program) runs in one process; mpi_metrics.py runs
at np 1 and np 2 and the metrics summed over the ranks are compared with
one process's on the union of the ranks' batches.
"""
import numpy as np
import pytest

import fluid
import mpi_metrics
from fluid1x_common import mpirun

L = fluid.layers
M = fluid.metrics
_SCOPES = []  # scopes outlive the executors bound to them


def new_scope():
    s = fluid.Scope()
    _SCOPES.append(s)
    return s


def pair_auc(score, label):
    """The fraction of (positive, negative) pairs whose positive scores
    higher, a tie counting one half; 0.0 without both classes."""
    score = np.ravel(score)
    label = np.ravel(label)
    right = pairs = 0.0
    for s_pos in score[label == 1]:
        for s_neg in score[label == 0]:
            pairs += 1
            right += 1.0 if s_pos > s_neg else 0.5 if s_pos == s_neg else 0.0
    return right / pairs if pairs else 0.0


def buckets(p, num_thresholds=4095):
    """The bucket of each probability, the product in p's own type."""
    p = np.asarray(p)
    return (p * p.dtype.type(num_thresholds)).astype(np.int64)


def distinct_batch(rng, n, dtype=np.float64):
    """[n, 2] predictions whose probabilities of class 1 sit in the middle
    of distinct buckets (no pair ties), and random labels [n, 1]."""
    b = rng.permutation(4095)[:n]
    p = (b + 0.5) / 4095
    preds = np.stack([1 - p, p], axis=1).astype(dtype)
    assert np.array_equal(buckets(preds[:, 1]), b)
    return preds, rng.randint(0, 2, (n, 1)).astype(np.int64)


# ---- fluid.metrics ----

def test_accuracy_is_the_mean_weighted_by_batch_size():
    rng = np.random.RandomState(0)
    acc = M.Accuracy()
    values, weights = rng.rand(5), rng.randint(1, 50, 5)
    for v, w in zip(values, weights):
        # As fetched: a one-element array, and the batch size.
        acc.update(value=np.array([v], dtype=np.float32), weight=int(w))
    want = np.sum(values.astype(np.float32) * weights) / weights.sum()
    assert acc.eval() == pytest.approx(want, rel=1e-12)
    acc.reset()
    assert (acc.value, acc.weight) == (0.0, 0.0)
    with pytest.raises(ValueError, match=r"Accuracy.eval\(\): no data"):
        acc.eval()
    with pytest.raises(ValueError, match=r"Accuracy.update\(value='a'\)"):
        acc.update("a", 3)
    with pytest.raises(ValueError, match=r"Accuracy.update\(weight=-1\): "
                       r"expected a non-negative number"):
        acc.update(0.5, -1)


def test_precision_and_recall_count_like_a_loop():
    rng = np.random.RandomState(1)
    precision, recall = M.Precision(), M.Recall()
    tp = fp = fn = 0
    for _ in range(4):
        preds = rng.rand(30, 1)
        labels = rng.randint(0, 2, (30, 1))
        precision.update(preds, labels)
        recall.update(preds, labels)
        for p, y in zip(preds.ravel(), labels.ravel()):
            predicted = 1 if p >= 0.5 else 0
            tp += predicted == 1 and y == 1
            fp += predicted == 1 and y == 0
            fn += predicted == 0 and y == 1
    assert (precision.tp, precision.fp, recall.fn) == (tp, fp, fn)
    assert precision.eval() == tp / (tp + fp)
    assert recall.eval() == tp / (tp + fn)
    assert M.Precision().eval() == 0.0 and M.Recall().eval() == 0.0
    with pytest.raises(ValueError, match=r"Precision\(preds=...\): expected "
                       r"a numpy ndarray, got list"):
        precision.update([0.5], np.array([1]))
    with pytest.raises(ValueError, match=r"preds has 2 values and labels 3"):
        recall.update(np.zeros((2, 1)), np.zeros((3, 1)))


def test_composite_metric_updates_and_resets_each():
    composite = M.CompositeMetric()
    composite.add_metric(M.Precision())
    composite.add_metric(M.Recall())
    preds = np.array([[0.9], [0.8], [0.2], [0.7]])
    labels = np.array([[1], [0], [1], [1]])
    composite.update(preds, labels)
    assert composite.eval() == [2 / 3, 2 / 3]
    composite.reset()
    assert composite.eval() == [0.0, 0.0]
    with pytest.raises(ValueError, match="expected a fluid.metrics."
                       "MetricBase, got int"):
        composite.add_metric(3)


def test_chunk_evaluator_and_edit_distance():
    chunk = M.ChunkEvaluator()
    chunk.update(np.array([10]), 8, 6)
    chunk.update(4, np.array([6]), 3)
    precision, recall, f1 = chunk.eval()
    assert (precision, recall) == (9 / 14, 9 / 14)
    assert f1 == pytest.approx(2 * precision * recall / (precision + recall))
    assert M.ChunkEvaluator().eval() == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match=r"num_infer_chunks=-1"):
        chunk.update(-1, 1, 1)

    edit = M.EditDistance("edit")
    d1 = np.array([[0], [2], [1], [0]], dtype=np.float32)
    d2 = np.array([[3], [0]], dtype=np.float32)
    edit.update(d1, 4)
    edit.update(d2, np.array([2]))
    assert edit.eval() == (6 / 6, 3 / 6)
    with pytest.raises(ValueError, match="3 distances for seq_num 2"):
        edit.update(np.zeros(3), 2)
    edit.reset()
    with pytest.raises(ValueError, match=r"EditDistance.eval\(\): no data"):
        edit.eval()


def test_metric_base_resets_and_reports_its_states():
    class Counts(M.MetricBase):
        def __init__(self):
            super().__init__("counts")
            self.n = 3
            self.total = 2.5
            self.hist = np.arange(4)
            self._hidden = 7

    m = Counts()
    assert str(m) == "counts"
    config = m.get_config()
    assert config["name"] == "counts"
    assert sorted(config["states"]) == ["hist", "n", "total"]
    m.reset()
    assert (m.n, m.total, m._hidden) == (0, 0.0, 7)
    assert np.array_equal(m.hist, np.zeros(4)) and m.hist.dtype == int
    with pytest.raises(NotImplementedError, match="does not define update"):
        m.update(None, None)
    with pytest.raises(NotImplementedError, match="does not define eval"):
        m.eval()


def test_auc_metric_is_the_pair_count():
    rng = np.random.RandomState(2)
    auc = M.Auc("auc")
    preds, labels = distinct_batch(rng, 300)
    auc.update(preds, labels)
    assert auc.eval() == pytest.approx(pair_auc(preds[:, 1], labels),
                                       abs=1e-12)
    # A second batch may share buckets with the first: ties count half.
    more, more_labels = distinct_batch(rng, 200, np.float32)
    auc.update(more, more_labels)
    score = np.concatenate([buckets(preds[:, 1]), buckets(more[:, 1])])
    assert auc.eval() == pytest.approx(
        pair_auc(score, np.concatenate([labels, more_labels])), abs=1e-12)
    auc.reset()
    assert auc.eval() == 0.0 and not auc._stat_pos.any()
    # One column: the probability of class 1.
    auc.update(np.array([[0.9], [0.1], [0.4]]), np.array([[1], [0], [1]]))
    assert auc.eval() == 1.0


def test_auc_metric_refuses_what_it_cannot_count():
    with pytest.raises(NotImplementedError, match="'PR'"):
        M.Auc("a", curve="PR")
    with pytest.raises(ValueError, match=r"num_thresholds=0"):
        M.Auc("a", num_thresholds=0)
    auc = M.Auc("a", num_thresholds=10)
    with pytest.raises(ValueError, match="holds 1.5 at row 1 as the "
                       r"probability of class 1, outside \[0, 1\]"):
        auc.update(np.array([[0.5, 0.5], [-0.5, 1.5]]), np.array([[1], [0]]))
    with pytest.raises(ValueError, match="labels holds 2 at row 0"):
        auc.update(np.array([[0.5, 0.5]]), np.array([[2]]))
    with pytest.raises(ValueError, match=r"preds has shape \(2, 3\)"):
        auc.update(np.zeros((2, 3)), np.zeros((2, 1)))
    assert auc.eval() == 0.0 and not auc._stat_neg.any()


def test_detection_map_is_not_available():
    with pytest.raises(NotImplementedError, match="detection_map op"):
        M.DetectionMAP()


def test_sums_over_ranks_of_one_process_are_the_values():
    acc = M.Accuracy()
    acc.update(0.5, 10)
    assert acc.sum_over_ranks() is acc and acc.eval() == 0.5
    values = [3, np.arange(4), (0.5,)]
    assert M.sum_over_ranks(values) is values
    with pytest.raises(ValueError, match="expected numbers, numpy arrays"):
        M.sum_over_ranks(["a"])
    with pytest.raises(ValueError, match="NaN or Inf"):
        M.sum_over_ranks([np.nan])


# ---- fluid.layers.auc ----

def auc_program(slide_steps=1, dtype="float64", **kwargs):
    """A program feeding predictions and labels to fluid.layers.auc."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        pred = L.data("pred", [2], dtype=dtype)
        label = L.data("label", [1], dtype="int64")
        out = L.auc(input=pred, label=label, slide_steps=slide_steps,
                    **kwargs)
    return main, startup, out


def test_layer_returns_fluids_triple_of_persistable_states():
    main, startup, (auc_var, batch_auc_var, states) = auc_program(
        slide_steps=3, num_thresholds=200)
    assert isinstance(states, list) and len(states) == 4
    assert (auc_var.dtype, batch_auc_var.dtype) == ("float64", "float64")
    assert list(auc_var.shape) == [1]
    batch_pos, batch_neg, pos, neg = states
    for v, shape in [(batch_pos, [3, 201]), (batch_neg, [3, 201]),
                     (pos, [1, 201]), (neg, [1, 201])]:
        assert (list(v.shape), v.dtype, v.persistable) == \
            (shape, "int64", True)
    assert main.op_types().count("auc") == 2
    # The startup program zeroes them.
    scope = new_scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    for v in states:
        assert not np.array(scope.find_var(v.name).get_tensor()).any()


def run_batches(main, startup, auc_var, batch_auc_var, batches):
    """Runs `main` once per (preds, labels); returns [(auc, batch_auc)]."""
    scope = new_scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    out = []
    for preds, labels in batches:
        a, b = exe.run(main, feed={"pred": preds, "label": labels},
                       fetch_list=[auc_var, batch_auc_var], scope=scope)
        out.append((float(a[0]), float(b[0])))
    return out, scope


def test_layer_is_the_pair_count_over_every_batch_and_this_batch():
    rng = np.random.RandomState(3)
    batches = [distinct_batch(rng, 150) for _ in range(4)]
    main, startup, (auc_var, batch_auc_var, _) = auc_program()
    results, _ = run_batches(main, startup, auc_var, batch_auc_var, batches)
    for k, (auc, batch_auc) in enumerate(results):
        preds, labels = batches[k]
        assert batch_auc == pytest.approx(pair_auc(preds[:, 1], labels),
                                          abs=1e-12)
        seen = batches[:k + 1]
        score = np.concatenate([buckets(p[:, 1]) for p, _ in seen])
        label = np.concatenate([y for _, y in seen])
        assert auc == pytest.approx(pair_auc(score, label), abs=1e-12)
    assert 0.3 < results[-1][0] < 0.7  # random labels: not degenerate


def test_layer_slide_steps_keep_a_window_of_batches():
    rng = np.random.RandomState(4)
    batches = [distinct_batch(rng, 100) for _ in range(5)]
    main, startup, (auc_var, batch_auc_var, states) = auc_program(
        slide_steps=3)
    results, scope = run_batches(main, startup, auc_var, batch_auc_var,
                                 batches)
    for k, (_, batch_auc) in enumerate(results):
        window = batches[max(0, k - 2):k + 1]
        score = np.concatenate([buckets(p[:, 1]) for p, _ in window])
        label = np.concatenate([y for _, y in window])
        assert batch_auc == pytest.approx(pair_auc(score, label), abs=1e-12)
    # The window's rows: the last three batches, oldest first.
    batch_pos = np.array(scope.find_var(states[0].name).get_tensor())
    for row, (preds, labels) in enumerate(batches[2:]):
        want = np.bincount(buckets(preds[:, 1])[labels.ravel() == 1],
                           minlength=4096)
        assert np.array_equal(batch_pos[row], want), row


def test_layer_slide_steps_zero_counts_every_batch():
    rng = np.random.RandomState(5)
    batches = [distinct_batch(rng, 80) for _ in range(3)]
    main, startup, (auc_var, batch_auc_var, _) = auc_program(slide_steps=0)
    results, _ = run_batches(main, startup, auc_var, batch_auc_var, batches)
    assert all(a == b for a, b in results)


def test_layer_and_metric_count_float32_alike():
    rng = np.random.RandomState(6)
    batches = [(rng.rand(200, 1).astype(np.float32),
                rng.randint(0, 2, (200, 1)).astype(np.int64))
               for _ in range(3)]
    batches = [(np.concatenate([1 - p, p], axis=1), y) for p, y in batches]
    main, startup, (auc_var, batch_auc_var, _) = auc_program(
        dtype="float32")
    results, _ = run_batches(main, startup, auc_var, batch_auc_var, batches)
    metric = M.Auc("auc")
    for preds, labels in batches:
        metric.update(preds, labels)
    assert metric.eval() == results[-1][0]


def test_layer_refuses_bad_arguments_and_bad_rows():
    for kwargs, error, match in [
            (dict(curve="PR"), NotImplementedError, "'PR'.*not supported"),
            (dict(curve="roc"), ValueError, "must be 'ROC'"),
            (dict(num_thresholds=0), ValueError,
             r"'num_thresholds' must be in \[1, 2\^24\]"),
            (dict(topk=0), ValueError, "'topk' must be positive"),
            (dict(slide_steps=-1), ValueError, "'slide_steps' must be 0")]:
        with pytest.raises(error, match=match):
            auc_program(**kwargs)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), \
            pytest.raises(ValueError, match=r"Predict 'scores' has shape "
                          r"\[-1, 3\]"):
        L.auc(L.data("scores", [3]), L.data("y", [1], dtype="int64"))
    main, startup, (auc_var, batch_auc_var, _) = auc_program()
    preds = np.array([[0.5, 0.5], [0.2, 0.8], [-1.0, 2.0]])
    with pytest.raises(ValueError, match=r"Predict 'pred' holds 2 at row 2 "
                       r"as the probability of class 1, outside \[0, 1\]"):
        run_batches(main, startup, auc_var, batch_auc_var,
                    [(preds, np.array([[1], [0], [1]]))])
    with pytest.raises(ValueError, match="Label 'label' holds -1 at row 1; "
                       "labels must be 0 or 1"):
        run_batches(main, startup, auc_var, batch_auc_var,
                    [(preds[:2], np.array([[1], [-1]]))])


def test_global_auc_of_one_process_is_the_layers():
    rng = np.random.RandomState(7)
    main, startup, (auc_var, batch_auc_var, states) = auc_program()
    results, scope = run_batches(main, startup, auc_var, batch_auc_var,
                                 [distinct_batch(rng, 60) for _ in range(2)])
    assert M.global_auc(states[2], states[3], scope=scope) == results[-1][0]
    assert M.global_auc(states[2].name, states[3].name, scope=scope) == \
        results[-1][0]
    with pytest.raises(KeyError, match="no such variable"):
        M.global_auc("nope", states[3].name, scope=scope)


# ---- the book's loop ----

def reset_states(scope, states):
    """Zeroes the auc layer's states, as Fluid 1.x scripts did between
    epochs."""
    for v in states:
        tensor = scope.find_var(v.name).get_tensor()
        tensor.set(np.zeros(np.array(tensor).shape, dtype=np.int64),
                   fluid.CPUPlace())


def click_data(rng, n):
    """Features and a label that a linear model can learn, noisily."""
    x = rng.randn(n, 8).astype(np.float32)
    w = np.linspace(-1, 1, 8).astype(np.float32)
    y = (x @ w + 0.8 * rng.randn(n) > 0).astype(np.int64).reshape(-1, 1)
    return x, y


def test_book_loop_trains_evaluates_and_resets_between_epochs():
    rng = np.random.RandomState(8)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 3
    with fluid.program_guard(main, startup):
        x = L.data("x", [8])
        label = L.data("label", [1], dtype="int64")
        predict = L.fc(L.fc(x, 16, act="relu"), 2, act="softmax")
        cost = L.mean(L.cross_entropy(input=predict, label=label))
        auc_var, batch_auc_var, auc_states = L.auc(input=predict,
                                                   label=label)
        test_program = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=0.01).minimize(cost)
    assert "auc" in test_program.op_types()
    scope = new_scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    train = [click_data(rng, 64) for _ in range(6)]
    epoch_aucs = []
    for epoch in range(3):
        reset_states(scope, auc_states)
        seen_p, seen_y = [], []
        for bx, by in train:
            p, a, b = exe.run(main, feed={"x": bx, "label": by},
                              fetch_list=[predict, auc_var, batch_auc_var],
                              scope=scope)
            seen_p.append(buckets(p[:, 1]))
            seen_y.append(by)
            assert float(b[0]) == pytest.approx(
                pair_auc(seen_p[-1], by), abs=1e-12)
        # This epoch's batches only: the states were zeroed before it.
        assert float(a[0]) == pytest.approx(
            pair_auc(np.concatenate(seen_p), np.concatenate(seen_y)),
            abs=1e-12)
        epoch_aucs.append(float(a[0]))
    assert epoch_aucs[-1] > max(0.75, epoch_aucs[0])  # it learns
    # Evaluation: the test clone counts into the same states; zero them.
    reset_states(scope, auc_states)
    tx, ty = click_data(rng, 256)
    p, a = exe.run(test_program, feed={"x": tx, "label": ty},
                   fetch_list=[predict, auc_var], scope=scope)
    assert float(a[0]) == pytest.approx(pair_auc(buckets(p[:, 1]), ty),
                                        abs=1e-12)


# ---- np 2 against np 1 ----

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{np: [per rank: the arrays mpi_metrics.py saved]} for np 1 and 2."""
    out = {}
    for np_ in (1, 2):
        d = tmp_path_factory.mktemp(f"metrics_np{np_}")
        r = mpirun("mpi_metrics.py", np_, d)
        assert r.returncode == 0, r.stdout + r.stderr
        out[np_] = []
        for rank in range(np_):
            with np.load(d / f"metrics.rank{rank}.npz") as z:
                out[np_].append({k: z[k] for k in z.files})
    return out


def test_metrics_summed_over_two_ranks_are_one_process_on_the_union(runs):
    (one,), two = runs[1], runs[2]
    assert np.array_equal(one["summed"], one["local"])
    for r, rank in enumerate(two):
        # Each rank's own batches give another value...
        assert not np.allclose(rank["local"], one["local"]), r
        # ...and the sum of the ranks' states the union's. Counts are
        # exact; Accuracy's weighted values are float sums in another
        # order.
        np.testing.assert_allclose(rank["summed"], one["summed"], rtol=1e-12,
                                   atol=0, err_msg=f"rank {r}")
    assert np.array_equal(two[0]["summed"], two[1]["summed"])


def test_sum_over_ranks_keeps_structure_and_types(runs):
    for rank in runs[2]:
        assert int(rank["nested_int"]) == 3
        assert np.array_equal(rank["nested_array"], np.ones((2, 3)))
        assert float(rank["nested_float"]) == 0.25
        assert np.array_equal(rank["nested_tuple"], [0.0, 3.0, 6.0])
        assert list(rank["nested_types"]) == ["int", "int32", "float",
                                              "tuple"]


def test_layer_auc_states_are_per_rank_and_their_sum_is_global(runs):
    (one,), two = runs[1], runs[2]
    rounds = [mpi_metrics.global_batch(s) for s in range(mpi_metrics.STEPS)]
    # One process: the layer's AUC is over every row of every step.
    score = np.concatenate([buckets(b["preds"][:, 1]) for b in rounds])
    label = np.concatenate([b["labels"] for b in rounds])
    assert float(one["auc"][0]) == pytest.approx(pair_auc(score, label),
                                                 abs=1e-12)
    assert float(one["global_auc"]) == float(one["auc"][0])
    for r, rank in enumerate(two):
        # Each rank's layer counts its own share only (as Fluid's).
        parts = [mpi_metrics.share(b, r, 2) for b in rounds]
        own = np.concatenate([buckets(p["preds"][:, 1]) for p in parts])
        own_label = np.concatenate([p["labels"] for p in parts])
        assert float(rank["auc"][0]) == pytest.approx(
            pair_auc(own, own_label), abs=1e-12)
        assert float(rank["batch_auc"][0]) == pytest.approx(
            pair_auc(buckets(parts[-1]["preds"][:, 1]),
                     parts[-1]["labels"]), abs=1e-12)
        # global_auc sums the histograms over the ranks: one process's AUC
        # over all N * B rows, bitwise; the scope keeps its own counts.
        assert float(rank["global_auc"]) == float(one["auc"][0]), r
        assert np.array_equal(rank["stat_pos_after"], rank["stat_pos"])
    assert np.array_equal(two[0]["stat_pos"] + two[1]["stat_pos"],
                          one["stat_pos"])
    assert np.array_equal(two[0]["stat_neg"] + two[1]["stat_neg"],
                          one["stat_neg"])
