"""fluid.metrics: Fluid 1.x's evaluation metrics, accumulated in Python.

Each metric keeps sums (counts, totals, histograms) that `update` adds the
fetched values of a batch to, and `eval` turns into the metric; `reset`
zeroes them (call it between epochs, or before evaluating):

    acc = fluid.metrics.Accuracy()
    for batch in reader():
        a, = exe.run(test_program, feed=batch, fetch_list=[acc_var])
        acc.update(value=a, weight=len(batch))
    print(acc.eval())

Every state is a sum over batches, so the state of a job's ranks summed is
the state of one process that saw every rank's batches.
`metric.sum_over_ranks()` (collective: every rank calls it, with the same
metrics) does that sum, and `global_auc(stat_pos, stat_neg)` does it for
the histograms of `fluid.layers.auc`. DetectionMAP is not provided (it
needs a detection_map op, which this product does not have).
"""
import copy

import numpy as np

from . import _core

__all__ = [
    "MetricBase", "CompositeMetric", "Precision", "Recall", "Accuracy",
    "ChunkEvaluator", "EditDistance", "DetectionMAP", "Auc",
    "sum_over_ranks", "global_auc",
]


def _is_number(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and \
        not isinstance(x, bool)


def _array(x, what, arg):
    """`x` as an ndarray, or a ValueError naming the argument."""
    if not isinstance(x, np.ndarray):
        raise ValueError(f"{what}({arg}=...): expected a numpy ndarray, got "
                         f"{type(x).__name__}")
    return x


def _count(x, what, arg):
    """An int count from a number or a one-element integer array."""
    if isinstance(x, np.ndarray) and x.size == 1:
        x = x.reshape(()).item()
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    if not isinstance(x, (int, np.integer)) or isinstance(x, bool) or x < 0:
        raise ValueError(f"{what}({arg}={x!r}): expected a non-negative int "
                         "(or a one-element array holding one)")
    return int(x)


class MetricBase:
    """The base of every metric: a name and states that are sums over the
    batches seen (the metric's public attributes, unless it says
    otherwise). Subclasses define update() and eval()."""

    def __init__(self, name):
        self._name = str(name) if name is not None else \
            self.__class__.__name__

    def __str__(self):
        return self._name

    def _state_names(self):
        """The attributes that hold the metric's state."""
        return sorted(a for a in self.__dict__ if not a.startswith("_"))

    def reset(self):
        """Zeroes every state: ints to 0, floats to 0.0, arrays to zeros."""
        for attr in self._state_names():
            value = getattr(self, attr)
            if isinstance(value, np.ndarray):
                setattr(self, attr, np.zeros_like(value))
            elif isinstance(value, (float, np.floating)):
                setattr(self, attr, 0.0)
            elif isinstance(value, (int, np.integer)):
                setattr(self, attr, 0)
            else:
                setattr(self, attr, None)

    def get_config(self):
        """{"name": name, "states": a copy of every state}."""
        states = {a: copy.deepcopy(getattr(self, a))
                  for a in self._state_names()}
        return {"name": self._name, "states": states}

    def update(self, preds, labels):
        """Adds a batch to the state; each metric defines it."""
        raise NotImplementedError(
            f"{type(self).__name__} does not define update()")

    def eval(self):
        """The metric over every batch added since the last reset."""
        raise NotImplementedError(
            f"{type(self).__name__} does not define eval()")

    def _state_values(self):
        return [getattr(self, a) for a in self._state_names()]

    def _set_state_values(self, values):
        for attr, value in zip(self._state_names(), values):
            setattr(self, attr, value)

    def sum_over_ranks(self):
        """Replaces this rank's state by the sum of every rank's (an
        extension of Fluid's API). Collective: every rank of the job calls
        it, on metrics of the same kinds in the same order. Afterwards
        eval() gives, on every rank, the metric of one process that saw
        all the ranks' batches. Returns self. Without mpirun (one rank) it
        changes nothing."""
        self._set_state_values(sum_over_ranks(self._state_values()))
        return self


class CompositeMetric(MetricBase):
    """Several metrics updated with the same (preds, labels); eval() is the
    list of their evals."""

    def __init__(self, name=None):
        super().__init__(name)
        self._metrics = []

    def add_metric(self, metric):
        """Adds a MetricBase to the composite."""
        if not isinstance(metric, MetricBase):
            raise ValueError("CompositeMetric.add_metric(metric=...): "
                             "expected a fluid.metrics.MetricBase, got "
                             f"{type(metric).__name__}")
        self._metrics.append(metric)

    def update(self, preds, labels):
        """Updates every metric with (preds, labels)."""
        for m in self._metrics:
            m.update(preds, labels)

    def eval(self):
        """[m.eval() for each metric added]."""
        return [m.eval() for m in self._metrics]

    def reset(self):
        """Resets every metric added."""
        for m in self._metrics:
            m.reset()

    def get_config(self):
        """The name, and the configs of the metrics added."""
        return {"name": self._name,
                "metrics": [m.get_config() for m in self._metrics]}

    def _state_values(self):
        return [m._state_values() for m in self._metrics]

    def _set_state_values(self, values):
        for m, v in zip(self._metrics, values):
            m._set_state_values(v)


def _binary(preds, labels, what):
    """(predicted, labels): preds rounded to 0/1, both flat, same length."""
    preds = _array(preds, what, "preds")
    labels = _array(labels, what, "labels")
    if preds.size != labels.size:
        raise ValueError(f"{what}.update: preds has {preds.size} values and "
                         f"labels {labels.size}; give one per sample")
    return np.rint(preds).reshape(-1).astype(np.int64), \
        labels.reshape(-1)


class Precision(MetricBase):
    """Binary precision tp / (tp + fp): preds are probabilities of class 1
    (rounded: >= 0.5 predicts 1), labels 0 or 1; 0.0 before any positive
    prediction."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fp = 0

    def update(self, preds, labels):
        """Counts a batch: preds [N, 1] probabilities, labels [N, 1]."""
        p, y = _binary(preds, labels, "Precision")
        self.tp += int(np.sum((p == 1) & (y == 1)))
        self.fp += int(np.sum((p == 1) & (y != 1)))

    def eval(self):
        """tp / (tp + fp), or 0.0 with no positive prediction."""
        ap = self.tp + self.fp
        return float(self.tp) / ap if ap != 0 else 0.0


class Recall(MetricBase):
    """Binary recall tp / (tp + fn): preds are probabilities of class 1
    (rounded), labels 0 or 1; 0.0 before any positive label."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fn = 0

    def update(self, preds, labels):
        """Counts a batch: preds [N, 1] probabilities, labels [N, 1]."""
        p, y = _binary(preds, labels, "Recall")
        self.tp += int(np.sum((p == 1) & (y == 1)))
        self.fn += int(np.sum((p != 1) & (y == 1)))

    def eval(self):
        """tp / (tp + fn), or 0.0 with no positive label."""
        recall = self.tp + self.fn
        return float(self.tp) / recall if recall != 0 else 0.0


class Accuracy(MetricBase):
    """The accuracy over batches: the mean of the batches' accuracies (what
    fluid.layers.accuracy fetches), each weighted by its sample count."""

    def __init__(self, name=None):
        super().__init__(name)
        self.value = 0.0
        self.weight = 0.0

    def update(self, value, weight):
        """Adds a batch: `value` its accuracy (a number or a one-element
        array, as fetched), `weight` its sample count."""
        if isinstance(value, np.ndarray) and value.size == 1:
            value = value.reshape(()).item()
        if not _is_number(value) or not np.isfinite(value):
            raise ValueError(f"Accuracy.update(value={value!r}): expected a "
                             "finite number or a one-element array")
        if not _is_number(weight) or not weight >= 0 or \
                not np.isfinite(weight):
            raise ValueError(f"Accuracy.update(weight={weight!r}): expected "
                             "a non-negative number (the batch's sample "
                             "count)")
        self.value += float(value) * float(weight)
        self.weight += float(weight)

    def eval(self):
        """The weighted mean accuracy; ValueError before any update."""
        if self.weight == 0:
            raise ValueError("Accuracy.eval(): no data; call update(value, "
                             "weight) with each batch's fetched accuracy "
                             "and sample count first")
        return self.value / self.weight


class ChunkEvaluator(MetricBase):
    """Precision, recall and F1 of chunk detection (sequence labelling) from
    the per-batch chunk counts: inferred, labelled and correct."""

    def __init__(self, name=None):
        super().__init__(name)
        self.num_infer_chunks = 0
        self.num_label_chunks = 0
        self.num_correct_chunks = 0

    def update(self, num_infer_chunks, num_label_chunks, num_correct_chunks):
        """Adds a batch's counts (ints, or one-element arrays)."""
        self.num_infer_chunks += _count(num_infer_chunks, "ChunkEvaluator",
                                        "num_infer_chunks")
        self.num_label_chunks += _count(num_label_chunks, "ChunkEvaluator",
                                        "num_label_chunks")
        self.num_correct_chunks += _count(
            num_correct_chunks, "ChunkEvaluator", "num_correct_chunks")

    def eval(self):
        """(precision, recall, f1), each 0.0 where undefined."""
        correct = float(self.num_correct_chunks)
        precision = correct / self.num_infer_chunks \
            if self.num_infer_chunks else 0.0
        recall = correct / self.num_label_chunks \
            if self.num_label_chunks else 0.0
        f1 = 2 * precision * recall / (precision + recall) \
            if self.num_correct_chunks else 0.0
        return precision, recall, f1


class EditDistance(MetricBase):
    """The mean edit distance of sequences and the fraction of sequences
    with a distance other than 0, from each batch's distances."""

    def __init__(self, name):
        super().__init__(name)
        self.total_distance = 0.0
        self.seq_num = 0
        self.instance_error = 0

    def update(self, distances, seq_num):
        """Adds a batch: `distances` an array of one distance per sequence
        ([seq_num, 1]), `seq_num` how many sequences."""
        distances = _array(distances, "EditDistance", "distances")
        seq_num = _count(seq_num, "EditDistance", "seq_num")
        if distances.size != seq_num:
            raise ValueError(f"EditDistance.update: {distances.size} "
                             f"distances for seq_num {seq_num}")
        self.total_distance += float(np.sum(distances))
        self.seq_num += seq_num
        self.instance_error += seq_num - int(np.sum(distances == 0))

    def eval(self):
        """(average distance, fraction of sequences in error); ValueError
        before any update."""
        if self.seq_num == 0:
            raise ValueError("EditDistance.eval(): no data; call "
                             "update(distances, seq_num) first")
        return (self.total_distance / self.seq_num,
                self.instance_error / float(self.seq_num))


class DetectionMAP(MetricBase):
    """Fluid's detection mAP metric, not provided: it is built on the
    detection_map op, which this product does not have."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "fluid.metrics.DetectionMAP is not available: it needs the "
            "detection_map op, which this product does not have")


def _auc_area(stat_pos, stat_neg):
    """The area under the ROC curve of the histograms (the auc op's rule,
    ops/auc_op.h): thresholds from the top bucket down, a trapezoid per
    bucket, divided by positives * negatives; 0.0 without both."""
    pos = np.asarray(stat_pos, dtype=np.float64).reshape(
        -1, np.shape(stat_pos)[-1]).sum(axis=0)[::-1]
    neg = np.asarray(stat_neg, dtype=np.float64).reshape(
        -1, np.shape(stat_neg)[-1]).sum(axis=0)[::-1]
    tp = np.cumsum(pos)
    tp_before = tp - pos
    # Every term is a multiple of 1/2 and every partial sum an integer
    # multiple of it below 2^52: exact, whatever the order of the sum.
    area = float(np.sum(neg * (tp_before + tp) / 2.0))
    total_pos, total_neg = float(tp[-1]), float(np.sum(neg))
    if total_pos > 0 and total_neg > 0:
        return area / total_pos / total_neg
    return 0.0


class Auc(MetricBase):
    """The area under the ROC curve of a binary classifier over batches,
    from histograms of its predictions in num_thresholds + 1 buckets, as
    fluid.layers.auc computes it."""

    def __init__(self, name, curve='ROC', num_thresholds=4095):
        super().__init__(name)
        if curve == 'PR':
            raise NotImplementedError("Auc(curve='PR'): the area under the "
                                      "precision-recall curve is not "
                                      "supported; only 'ROC'")
        if curve != 'ROC':
            raise ValueError(f"Auc(curve={curve!r}): expected 'ROC'")
        if not isinstance(num_thresholds, (int, np.integer)) or \
                isinstance(num_thresholds, bool) or \
                not 1 <= num_thresholds <= 1 << 24:
            raise ValueError(f"Auc(num_thresholds={num_thresholds!r}): "
                             "expected an int in [1, 2^24]")
        self._curve = curve
        self._num_thresholds = int(num_thresholds)
        self._num_pred_buckets = self._num_thresholds + 1
        self._stat_pos = np.zeros(self._num_pred_buckets, dtype=np.int64)
        self._stat_neg = np.zeros(self._num_pred_buckets, dtype=np.int64)

    def _state_names(self):
        return ["_stat_pos", "_stat_neg"]

    def update(self, preds, labels):
        """Counts a batch: preds [N, 2] class probabilities (column 1: class
        1) or [N, 1] (class 1), in [0, 1]; labels [N, 1], 0 or 1."""
        preds = _array(preds, "Auc", "preds")
        labels = _array(labels, "Auc", "labels").reshape(-1)
        if preds.ndim != 2 or preds.shape[1] not in (1, 2) or \
                preds.shape[0] != labels.size:
            raise ValueError(f"Auc.update: preds has shape {preds.shape} and "
                             f"labels {labels.size} values; expected preds "
                             "[N, 2] or [N, 1] and N labels")
        p = preds[:, -1]
        if p.dtype.kind != "f":
            p = p.astype(np.float64)
        bad = ~((p >= 0) & (p <= 1))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"Auc.update: preds holds {p[i]!r} at row {i} "
                             "as the probability of class 1, outside [0, 1]")
        bad = (labels != 0) & (labels != 1)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"Auc.update: labels holds {labels[i]!r} at row "
                             f"{i}; labels must be 0 or 1")
        # The product in the predictions' own type, as the auc op takes it.
        bucket = np.minimum(
            (p * p.dtype.type(self._num_thresholds)).astype(np.int64),
            self._num_thresholds)
        self._stat_pos += np.bincount(bucket[labels == 1],
                                      minlength=self._num_pred_buckets)
        self._stat_neg += np.bincount(bucket[labels == 0],
                                      minlength=self._num_pred_buckets)

    def eval(self):
        """The area under the ROC curve; 0.0 without both classes."""
        return _auc_area(self._stat_pos, self._stat_neg)


# ---- sums over the ranks of a job ----

def _leaves(values, out):
    """Appends the numbers and arrays of a nested list to `out`."""
    if isinstance(values, (list, tuple)):
        for v in values:
            _leaves(v, out)
    elif isinstance(values, np.ndarray) or _is_number(values):
        out.append(values)
    else:
        raise ValueError("sum_over_ranks: expected numbers, numpy arrays or "
                         f"lists of them, got {type(values).__name__}")


def _is_integer(v):
    return isinstance(v, (int, np.integer)) or (
        isinstance(v, np.ndarray) and v.dtype.kind in "iub")


def _rebuild(values, ints, floats, at):
    """`values`' structure filled from the summed `ints` and `floats`
    (at: the next index of each)."""
    if isinstance(values, (list, tuple)):
        out = [_rebuild(v, ints, floats, at) for v in values]
        return tuple(out) if isinstance(values, tuple) else out
    n = int(np.size(values))
    which = 0 if _is_integer(values) else 1
    part = (ints, floats)[which][at[which]:at[which] + n]
    at[which] += n
    if isinstance(values, np.ndarray):
        return part.astype(values.dtype).reshape(values.shape)
    return int(part[0]) if which == 0 else float(part[0])


def sum_over_ranks(values):
    """The sum over the job's ranks of `values` (a number, a numpy array, or
    a list or tuple of them, nested freely), in the same structure, types
    and shapes (an extension of Fluid's API). Collective: every rank calls
    it with values of the same shapes. Integers add exactly (in int64);
    floats add in float64. Without mpirun (one rank) it returns the values
    as they are."""
    leaves = []
    _leaves(values, leaves)
    ints = [np.asarray(v, dtype=np.int64).reshape(-1) for v in leaves
            if _is_integer(v)]
    floats = [np.asarray(v, dtype=np.float64).reshape(-1) for v in leaves
              if not _is_integer(v)]
    ints = np.concatenate(ints + [np.zeros(0, np.int64)])
    floats = np.concatenate(floats + [np.zeros(0)])
    if not np.all(np.isfinite(floats)):
        raise ValueError("sum_over_ranks: the values hold NaN or Inf")
    if _core.launcher_world_size() <= 1:
        return values
    # Every rank holds values of the same shapes: the same collectives.
    if ints.size:
        ints = _core.allreduce(ints, "sum")
    if floats.size:
        floats = _core.allreduce(floats, "sum")
    return _rebuild(values, ints, floats, [0, 0])


def _stat_array(stat, scope, arg):
    """The histogram `stat`: an array, or a Variable or name read from
    `scope`."""
    if isinstance(stat, np.ndarray):
        return stat
    name = stat.name if hasattr(stat, "name") else stat
    if not isinstance(name, str):
        raise ValueError(f"global_auc({arg}=...): expected a Variable, a "
                         f"name or an array, got {type(stat).__name__}")
    if scope is None:
        from .executor import global_scope
        scope = global_scope()
    var = scope.find_var(name)
    if var is None:
        raise KeyError(f"global_auc({arg}={name!r}): no such variable in the "
                       "scope; run the program holding the auc layer first")
    return np.array(var.get_tensor())


def global_auc(stat_pos, stat_neg, scope=None):
    """The AUC over every rank's batches (an extension of Fluid's API):
    the histograms of fluid.layers.auc (`stat_pos`, `stat_neg`: its
    Variables, their names, or arrays; read from `scope`, by default the
    global scope) summed over the job's ranks, then the same area the auc
    op computes. Collective: every rank calls it. The variables are left as
    they are (each rank's own counts). Without mpirun, the AUC of this
    process's histograms."""
    pos = _stat_array(stat_pos, scope, "stat_pos")
    neg = _stat_array(stat_neg, scope, "stat_neg")
    if pos.shape != neg.shape or pos.ndim == 0:
        raise ValueError(f"global_auc: stat_pos has shape {pos.shape} and "
                         f"stat_neg {neg.shape}; expected the two histograms "
                         "of one auc layer")
    pos, neg = sum_over_ranks([pos, neg])
    return _auc_area(pos, neg)
