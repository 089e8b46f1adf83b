"""linear_chain_crf against the CRF's forward algorithm written in PyTorch
ops (float64): the cost of each sequence and, through autograd, the
gradients of the emissions and of the transition parameter, in LoD and
padded mode. Then crf_decoding and edit_distance through fluid.Executor
on small hand-checked batches, and the layers' argument errors."""
import itertools

import numpy as np
import pytest

import fluid

torch = pytest.importorskip("torch")
L = fluid.layers
D = 4
LENGTHS = [3, 1, 5, 2, 4]


def _torch_nll(x, w, labels, lengths):
    """-log P(label | x) of each sequence: log Z by the forward algorithm
    (logsumexp), less the labelled path's score."""
    out, r = [], 0
    for n in lengths:
        e, y = x[r:r + n], labels[r:r + n]
        alpha = w[0] + e[0]
        for t in range(1, n):
            alpha = torch.logsumexp(alpha[:, None] + w[2:], dim=0) + e[t]
        log_z = torch.logsumexp(alpha + w[1], dim=0)
        score = w[0, y[0]] + w[1, y[-1]] + e[torch.arange(n), y].sum()
        for t in range(1, n):
            score = score + w[2 + y[t - 1], y[t]]
        out.append(log_z - score)
        r += n
    return torch.stack(out)


def _fluid_crf(xv, wv, labels, weights, padded):
    """(cost, d loss / d emission, d loss / d transition) of loss =
    sum(cost * weights) through fluid.Executor (computed as the mean,
    scaled back)."""
    main, startup = fluid.Program(), fluid.Program()
    n, s = len(LENGTHS), max(LENGTHS)
    with fluid.program_guard(main, startup):
        if padded:
            x = L.data("x", [s, D], dtype="float64")
            label = L.data("label", [s], dtype="int64")
            length = L.data("length", [], dtype="int64")
        else:
            x = L.data("x", [D], dtype="float64", lod_level=1)
            label = L.data("label", [1], dtype="int64", lod_level=1)
            length = None
        # An identity fc, so that the emissions get a gradient.
        flat = L.reshape(x, [-1, D]) if padded else x
        emission = L.fc(flat, D, param_attr="eye", bias_attr=False)
        if padded:
            emission = L.reshape(emission, [-1, s, D])
        cost = L.linear_chain_crf(emission, label, param_attr="crfw",
                                  length=length)
        r = L.data("r", [1], dtype="float64")
        # mean over the n sequences: the gradients are 1/n of sum's.
        fluid.optimizer.SGD(0.1).minimize(L.mean(L.elementwise_mul(cost, r)))
    scale = 1.0 / n
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    scope.set("eye", np.eye(D))
    scope.set("crfw", wv)
    if padded:
        px = np.zeros((n, s, D))
        pl = np.zeros((n, s), np.int64)
        offsets = np.cumsum([0] + LENGTHS)
        for i, k in enumerate(LENGTHS):
            px[i, :k] = xv[offsets[i]:offsets[i + 1]]
            pl[i, :k] = labels[offsets[i]:offsets[i + 1]]
        feed = {"x": px, "label": pl, "length": np.array(LENGTHS, np.int64)}
    else:
        feed = {"x": fluid.create_lod_tensor(xv, [LENGTHS], fluid.CPUPlace()),
                "label": fluid.create_lod_tensor(labels.reshape(-1, 1),
                                                 [LENGTHS], fluid.CPUPlace())}
    feed["r"] = weights.reshape(-1, 1)
    got = exe.run(main, feed=feed, scope=scope,
                  fetch_list=[cost, emission.name + "@GRAD", "crfw@GRAD"])
    dx = got[1]
    if padded:  # back to the packed rows
        dx = np.concatenate([dx[i, :k] for i, k in enumerate(LENGTHS)])
    return got[0], dx / scale, got[2] / scale


@pytest.mark.parametrize("padded", [False, True])
def test_linear_chain_crf_matches_torch(padded):
    rng = np.random.RandomState(3)
    rows = sum(LENGTHS)
    xv = rng.uniform(-2, 2, (rows, D))
    wv = rng.uniform(-1, 1, (D + 2, D))
    labels = rng.randint(0, D, rows).astype(np.int64)
    weights = rng.uniform(0.5, 1.5, len(LENGTHS))
    cost, dx, dw = _fluid_crf(xv, wv, labels, weights, padded)
    tx = torch.tensor(xv, requires_grad=True)
    tw = torch.tensor(wv, requires_grad=True)
    nll = _torch_nll(tx, tw, torch.tensor(labels), LENGTHS)
    (nll * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(cost.ravel(), nll.detach().numpy(),
                               rtol=1e-12, atol=1e-12)
    assert (cost > 0).all()  # a negative log-likelihood
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_crf_decoding_and_label_marks():
    """The decoded path is the best of all paths; with label, 1 where it
    agrees."""
    rng = np.random.RandomState(4)
    lengths = [3, 2]
    xv = rng.uniform(-2, 2, (5, 3))
    wv = rng.uniform(-2, 2, (5, 3))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3], dtype="float64", lod_level=1)
        label = L.data("label", [1], dtype="int64", lod_level=1)
        L.linear_chain_crf(x, label, param_attr=fluid.ParamAttr(name="crfw"))
        path = L.crf_decoding(x, param_attr=fluid.ParamAttr(name="crfw"))
        marks = L.crf_decoding(x, param_attr="crfw", label=label)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    scope.set("crfw", wv)
    want = []
    for start, n in ((0, 3), (3, 2)):
        best = max(itertools.product(range(3), repeat=n), key=lambda p: (
            wv[0, p[0]] + wv[1, p[-1]] +
            sum(xv[start + t, p[t]] for t in range(n)) +
            sum(wv[2 + p[t - 1], p[t]] for t in range(1, n))))
        want += list(best)
    lab = np.array(want, np.int64).reshape(-1, 1)
    lab[1] = (lab[1] + 1) % 3
    got = exe.run(main, scope=scope, fetch_list=[path, marks], feed={
        "x": fluid.create_lod_tensor(xv, [lengths], fluid.CPUPlace()),
        "label": fluid.create_lod_tensor(lab, [lengths], fluid.CPUPlace())},
        return_numpy=False)
    assert np.asarray(got[0]).ravel().tolist() == want
    assert np.asarray(got[1]).ravel().tolist() == [1, 0, 1, 1, 1]


def test_edit_distance_with_ignored_tokens():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        hyp = L.data("hyp", [1], dtype="int64", lod_level=1)
        ref = L.data("ref", [1], dtype="int64", lod_level=1)
        dist, num = L.edit_distance(hyp, ref, normalized=False,
                                    ignored_tokens=[0])
        ndist, _ = L.edit_distance(hyp, ref)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    hyps = [[1, 0, 2, 3], [4, 5], [0, 6]]
    refs = [[1, 2, 4], [4, 5], [7, 0, 6, 0]]
    got = exe.run(main, fetch_list=[dist, num, ndist], feed={
        "hyp": fluid.create_lod_tensor(hyps, [[4, 2, 2]], fluid.CPUPlace()),
        "ref": fluid.create_lod_tensor(refs, [[3, 2, 4]], fluid.CPUPlace())})
    # With 0 erased: [1,2,3] vs [1,2,4]: 1; equal: 0; [6] vs [7,6]: 1.
    assert got[0].ravel().tolist() == [1.0, 0.0, 1.0]
    assert got[1].tolist() == [3]
    # Normalized, nothing erased: 2/3, 0, 2/4.
    np.testing.assert_allclose(got[2].ravel(), [2 / 3, 0, 0.5], rtol=1e-6)


def test_argument_errors():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3], dtype="float32", lod_level=1)
        label = L.data("label", [1], dtype="int64", lod_level=1)
        with pytest.raises(ValueError, match="name the transition parameter"):
            L.crf_decoding(x, param_attr=None)
        with pytest.raises(Exception, match="names no variable"):
            L.crf_decoding(x, param_attr="nope")
        with pytest.raises(Exception, match="which is no parameter"):
            L.crf_decoding(x, param_attr=x.name)
        with pytest.raises(TypeError, match="ignored_tokens"):
            L.edit_distance(label, label, ignored_tokens="0")
        with pytest.raises(Exception, match="go together"):
            L.edit_distance(label, label, input_length=label)


def test_padded_decoding_and_distance_equal_lod():
    """crf_decoding with length and edit_distance with input_length and
    label_length give what their LoD forms give on the same sequences."""
    rng = np.random.RandomState(6)
    lengths, s = [3, 1, 4], 4
    xv = rng.uniform(-2, 2, (sum(lengths), D))
    px = np.zeros((len(lengths), s, D))
    offsets = np.cumsum([0] + lengths)
    for i, k in enumerate(lengths):
        px[i, :k] = xv[offsets[i]:offsets[i + 1]]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [D], dtype="float64", lod_level=1)
        label = L.data("label", [1], dtype="int64", lod_level=1)
        L.linear_chain_crf(x, label, param_attr="crfw")
        path = L.crf_decoding(x, param_attr="crfw")
        xp = L.data("xp", [s, D], dtype="float64")
        length = L.data("length", [], dtype="int64")
        ppath = L.crf_decoding(xp, param_attr="crfw", length=length)
        hyp = L.data("hyp", [s], dtype="int64")
        ref = L.data("ref", [s], dtype="int64")
        dist, _ = L.edit_distance(hyp, ref, input_length=length,
                                  label_length=length)
        dist_lod, _ = L.edit_distance(path, label)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    scope.set("crfw", rng.uniform(-2, 2, (D + 2, D)))
    labels = rng.randint(0, D, (sum(lengths), 1)).astype(np.int64)
    got = exe.run(main, scope=scope, fetch_list=[path, ppath, dist_lod],
                  feed={
                      "x": fluid.create_lod_tensor(xv, [lengths],
                                                   fluid.CPUPlace()),
                      "label": fluid.create_lod_tensor(labels, [lengths],
                                                       fluid.CPUPlace()),
                      "xp": px, "length": np.array(lengths, np.int64),
                      "hyp": np.zeros((3, s), np.int64),
                      "ref": np.zeros((3, s), np.int64)})
    flat = got[0].ravel()
    for i, k in enumerate(lengths):
        assert got[1][i, :k].tolist() == flat[offsets[i]:offsets[i + 1]]\
            .tolist()
        assert (got[1][i, k:] == 0).all()
    # The decoded tags against the labels, padded: the same distances.
    hp = np.zeros((3, s), np.int64)
    rp = np.zeros((3, s), np.int64)
    for i, k in enumerate(lengths):
        hp[i, :k] = flat[offsets[i]:offsets[i + 1]]
        rp[i, :k] = labels[offsets[i]:offsets[i + 1], 0]
    padded = exe.run(main, scope=scope, fetch_list=[dist], feed={
        "x": fluid.create_lod_tensor(xv, [lengths], fluid.CPUPlace()),
        "label": fluid.create_lod_tensor(labels, [lengths], fluid.CPUPlace()),
        "xp": px, "length": np.array(lengths, np.int64), "hyp": hp,
        "ref": rp})
    np.testing.assert_array_equal(padded[0], got[2])
