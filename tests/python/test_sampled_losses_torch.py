"""fluid.layers.nce and fluid.layers.hsigmoid through fluid.Executor
against PyTorch 1.13 on the same inputs (float64): nce's loss recomputed
in torch from the classes the op sampled (fetched from its SampleLabels),
hsigmoid's as the sum of binary cross-entropies along each label's path;
the gradients of the input, the weight and the bias. Then the sparse
gradients (is_sparse=True) train the parameters to the same bits as the
dense ones under SGD and Adam, and the layers' argument checks."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import fluid

L = fluid.layers


def _run(main, startup, feed, fetch, params):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for name, value in params.items():
        scope.set(name, value)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


def _op_output(main, op_type, slot):
    ops = [op for op in main.global_block().ops if op.type == op_type]
    assert len(ops) == 1
    return ops[0].output(slot)[0]


def _noise_prob(sampler, classes, samples, dist):
    if sampler == "uniform":
        return np.full(samples.shape, 1.0 / classes)
    if sampler == "log_uniform":
        return np.log((samples + 2.0) / (samples + 1.0)) / np.log(classes)
    return np.asarray(dist, dtype="float32").astype("float64")[samples]


@pytest.mark.parametrize("sampler,num_true,weighted", [
    ("uniform", 1, False), ("log_uniform", 2, True),
    ("custom_dist", 1, True)])
def test_nce_matches_torch_given_the_samples(sampler, num_true, weighted):
    rng = np.random.RandomState(3)
    n, d, classes, neg = 6, 5, 11, 4
    dist = rng.uniform(0.1, 1, classes)
    dist = list(dist / dist.sum())
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [d], dtype="float64", stop_gradient=False)
        label = L.data("label", [num_true], dtype="int64")
        sw = L.data("sw", [1], dtype="float64") if weighted else None
        cost = L.nce(x, label, classes, sample_weight=sw, param_attr="w",
                     bias_attr="b", num_neg_samples=neg, sampler=sampler,
                     custom_dist=dist if sampler == "custom_dist" else None,
                     seed=5)
        c = L.data("c", [1], dtype="float64")
        fluid.optimizer.SGD(0.1).minimize(L.mean(L.elementwise_mul(cost, c)))
    samples_var = _op_output(main, "nce", "SampleLabels")
    xv = rng.uniform(-1, 1, (n, d))
    lv = rng.randint(0, classes, (n, num_true)).astype("int64")
    swv, cv = rng.uniform(0.5, 2, (n, 1)), rng.uniform(-1, 1, (n, 1))
    wv, bv = rng.uniform(-1, 1, (classes, d)), rng.uniform(-1, 1, (classes, 1))
    feed = {"x": xv, "label": lv, "c": cv}
    if weighted:
        feed["sw"] = swv
    got = _run(main, startup, feed,
               [cost, samples_var, "x@GRAD", "w@GRAD", "b@GRAD"],
               {"w": wv, "b": bv})
    samples = got[1]
    assert samples.shape == (n, num_true + neg)
    np.testing.assert_array_equal(samples[:, :num_true], lv)
    assert ((samples >= 0) & (samples < classes)).all()

    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xv, wv, bv))
    s = torch.tensor(samples)
    logit = (tx[:, None, :] * tw[s]).sum(-1) + tb[s, 0]
    o = torch.sigmoid(logit)
    q = torch.tensor(_noise_prob(sampler, classes, samples, dist) * neg)
    terms = torch.cat([-torch.log(o / (o + q))[:, :num_true],
                       -torch.log(q / (o + q))[:, num_true:]], dim=1)
    # Fluid's layer divides by a scale op, whose factor is a float32.
    t_cost = terms.sum(1, keepdim=True) * float(np.float32(1.0 / (neg + 1)))
    if weighted:
        t_cost = t_cost * torch.tensor(swv)
    (t_cost * torch.tensor(cv)).mean().backward()
    np.testing.assert_allclose(got[0], t_cost.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    for g, t in zip(got[2:], (tx, tw, tb)):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-14)


def _default_path(k, num_classes):
    """Fluid's default tree: the (node, bit) steps of class k, leaf up."""
    path, pos = [], k + num_classes
    while pos > 1:
        path.append((pos // 2 - 1, pos % 2))
        pos //= 2
    return path


def _torch_hsigmoid(tx, tw, tb, paths):
    rows = []
    for i, path in enumerate(paths):
        nodes = torch.tensor([p[0] for p in path])
        bits = torch.tensor([float(p[1]) for p in path], dtype=torch.float64)
        z = (tw[nodes] * tx[i]).sum(-1)
        if tb is not None:
            z = z + tb[nodes, 0]
        rows.append(F.binary_cross_entropy_with_logits(
            z, bits, reduction="sum"))
    return torch.stack(rows)[:, None]


@pytest.mark.parametrize("num_classes,bias", [(2, True), (7, True),
                                               (16, False), (19, True)])
def test_hsigmoid_default_tree_matches_torch(num_classes, bias):
    rng = np.random.RandomState(num_classes)
    n, d = 9, 4
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [d], dtype="float64", stop_gradient=False)
        label = L.data("label", [1], dtype="int64")
        out = L.hsigmoid(x, label, num_classes, param_attr="w",
                         bias_attr="b" if bias else False)
        c = L.data("c", [1], dtype="float64")
        fluid.optimizer.SGD(0.1).minimize(L.mean(L.elementwise_mul(out, c)))
    xv, cv = rng.uniform(-2, 2, (n, d)), rng.uniform(-1, 1, (n, 1))
    lv = rng.randint(0, num_classes, (n, 1)).astype("int64")
    wv = rng.uniform(-1, 1, (num_classes - 1, d))
    bv = rng.uniform(-1, 1, (num_classes - 1, 1))
    params = {"w": wv, "b": bv} if bias else {"w": wv}
    fetch = [out, "x@GRAD", "w@GRAD"] + (["b@GRAD"] if bias else [])
    got = _run(main, startup, {"x": xv, "label": lv, "c": cv}, fetch, params)
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xv, wv, bv))
    t_out = _torch_hsigmoid(tx, tw, tb if bias else None,
                            [_default_path(k, num_classes) for k in lv[:, 0]])
    (t_out * torch.tensor(cv)).mean().backward()
    np.testing.assert_allclose(got[0], t_out.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    for g, t in zip(got[1:], (tx, tw, tb)):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-14)


def _custom_tree(n, nodes, depth, rng):
    """Paths of 1..depth distinct nodes, -1 after the end; random bits."""
    table = -np.ones((n, depth), dtype="int64")
    code = rng.randint(0, 2, (n, depth)).astype("int64")
    paths = []
    for i in range(n):
        length = 1 + i % depth
        table[i, :length] = rng.choice(nodes, length, replace=False)
        paths.append([(table[i, j], code[i, j]) for j in range(length)])
    return table, code, paths


def test_hsigmoid_custom_tree_matches_torch():
    rng = np.random.RandomState(7)
    n, d, nodes, depth = 8, 3, 6, 4
    table, code, paths = _custom_tree(n, nodes, depth, rng)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [d], dtype="float64", stop_gradient=False)
        label = L.data("label", [1], dtype="int64")
        pt = L.data("pt", [depth], dtype="int64")
        pc = L.data("pc", [depth], dtype="int64")
        out = L.hsigmoid(x, label, nodes, param_attr="w", bias_attr="b",
                         path_table=pt, path_code=pc, is_custom=True)
        c = L.data("c", [1], dtype="float64")
        fluid.optimizer.SGD(0.1).minimize(L.mean(L.elementwise_mul(out, c)))
    xv, cv = rng.uniform(-2, 2, (n, d)), rng.uniform(-1, 1, (n, 1))
    wv, bv = rng.uniform(-1, 1, (nodes, d)), rng.uniform(-1, 1, (nodes, 1))
    feed = {"x": xv, "label": np.zeros((n, 1), "int64"), "pt": table,
            "pc": code, "c": cv}
    got = _run(main, startup, feed, [out, "x@GRAD", "w@GRAD", "b@GRAD"],
               {"w": wv, "b": bv})
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xv, wv, bv))
    t_out = _torch_hsigmoid(tx, tw, tb, paths)
    (t_out * torch.tensor(cv)).mean().backward()
    np.testing.assert_allclose(got[0], t_out.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    for g, t in zip(got[1:], (tx, tw, tb)):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-14)


def _train(layer, is_sparse, optimizer, steps=3):
    """Trains an embedding + `layer` model a few steps from fixed
    parameters; returns every parameter's final value."""
    rng = np.random.RandomState(11)
    vocab, d, classes = 20, 6, 13
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        words = L.data("words", [1], dtype="int64")
        label = L.data("label", [1], dtype="int64")
        emb = L.embedding(words, size=[vocab, d], param_attr="emb",
                          is_sparse=is_sparse)
        emb = L.reshape(emb, [-1, d])
        if layer == "nce":
            cost = L.nce(emb, label, classes, param_attr="w", bias_attr="b",
                         num_neg_samples=3, seed=9, is_sparse=is_sparse)
        else:
            cost = L.hsigmoid(emb, label, classes, param_attr="w",
                              bias_attr="b", is_sparse=is_sparse)
        optimizer().minimize(L.mean(cost))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    rows = classes if layer == "nce" else classes - 1
    params = {"emb": rng.uniform(-1, 1, (vocab, d)).astype("float32"),
              "w": rng.uniform(-1, 1, (rows, d)).astype("float32"),
              "b": rng.uniform(-1, 1, (rows, 1)).astype("float32")}
    for name, value in params.items():
        scope.set(name, value)
    for step in range(steps):
        feed = {"words": rng.randint(0, vocab, (8, 1)).astype("int64"),
                "label": rng.randint(0, classes, (8, 1)).astype("int64")}
        exe.run(main, feed=feed, scope=scope)
    final = {n: np.array(scope.find_var(n).get_tensor()) for n in params}
    if is_sparse and steps:
        # The tables' gradients are sparse rows, which fetch refuses.
        sparse = ["w@GRAD", "b@GRAD"] if layer == "nce" else ["w@GRAD"]
        for name in sparse:
            with pytest.raises(Exception, match="SELECTED_ROWS"):
                exe.run(main, feed=feed, fetch_list=[name], scope=scope)
    return final


@pytest.mark.parametrize("layer", ["nce", "hsigmoid"])
@pytest.mark.parametrize("optimizer", [
    lambda: fluid.optimizer.SGD(0.5),
    lambda: fluid.optimizer.Adam(0.05)], ids=["sgd", "adam"])
def test_sparse_gradients_train_like_dense(layer, optimizer):
    dense = _train(layer, False, optimizer)
    sparse = _train(layer, True, optimizer)
    start = _train(layer, False, optimizer, steps=0)
    for name in dense:
        assert not np.array_equal(dense[name], start[name]), name
        np.testing.assert_array_equal(sparse[name], dense[name], err_msg=name)


def test_nce_draws_new_classes_each_step_and_repeats_on_rerun():
    def samples(steps):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = L.data("x", [3], dtype="float32")
            label = L.data("label", [1], dtype="int64")
            L.nce(x, label, 1000, num_neg_samples=8, seed=4)
        var = _op_output(main, "nce", "SampleLabels")
        exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        exe.run(startup, scope=scope)
        feed = {"x": np.ones((4, 3), "float32"),
                "label": np.zeros((4, 1), "int64")}
        return [exe.run(main, feed=feed, fetch_list=[var], scope=scope)[0]
                for _ in range(steps)]
    first, again = samples(2), samples(2)
    assert not np.array_equal(first[0], first[1])
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_argument_errors_name_the_cause():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float32")
        label = L.data("label", [1], dtype="int64")
        with pytest.raises(ValueError, match="sampler='zipf'"):
            L.nce(x, label, 10, sampler="zipf")
        with pytest.raises(ValueError, match="custom_dist"):
            L.nce(x, label, 10, sampler="custom_dist")
        with pytest.raises(ValueError, match="3 probabilities"):
            L.nce(x, label, 10, sampler="custom_dist",
                  custom_dist=[0.2, 0.3, 0.5])
        with pytest.raises(ValueError, match="distribution"):
            L.nce(x, label, 3, sampler="custom_dist", custom_dist=[1, 1, 1])
        with pytest.raises(Exception, match="num_neg_samples"):
            L.nce(x, label, 10, num_neg_samples=0)
        with pytest.raises(ValueError, match="at least 2"):
            L.hsigmoid(x, label, 1)
        with pytest.raises(ValueError, match="is_custom=True"):
            L.hsigmoid(x, label, 5, path_table=label)
        with pytest.raises(ValueError, match="path_table and path_code"):
            L.hsigmoid(x, label, 5, path_table=label, is_custom=True)
        with pytest.raises(Exception, match="label.*int64"):
            L.hsigmoid(x, x, 5)
