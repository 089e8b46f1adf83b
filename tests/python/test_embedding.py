"""fluid.layers.embedding: the lookup against torch.nn.functional.embedding
(padding rows zero, negative padding_idx counting from the end), sparse
gradients training exactly like dense ones (SGD, Adam), lazy Adam leaving
untouched rows alone, and errors naming the layer and the argument."""
import numpy as np
import pytest
import torch

import fluid

L = fluid.layers

_SCOPES = []  # scopes outlive the executors bound to them

V, D = 30, 5


def _build(is_sparse, optimizer=None, padding_idx=None, dtype="float64"):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = L.data("ids", [1], dtype="int64")
        label = L.data("label", [1], dtype="int64")
        emb = L.embedding(ids, [V, D], is_sparse=is_sparse,
                          padding_idx=padding_idx, param_attr="table",
                          dtype=dtype)
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(emb, 3), label))
        if optimizer is not None:
            optimizer().minimize(loss)
    return main, startup, emb, loss


def _train(main, startup, steps):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(3)
    for _ in range(steps):
        feed = {"ids": rng.randint(0, 10, size=(6, 1)).astype(np.int64),
                "label": rng.randint(0, 3, size=(6, 1)).astype(np.int64)}
        exe.run(main, feed=feed, scope=scope)
    return scope


def _table(scope):
    return np.array(scope.find_var("table").get_tensor())


@pytest.mark.parametrize("padding_idx", [None, 4, -3])
def test_lookup_matches_torch(padding_idx):
    main, startup, emb, _ = _build(False, padding_idx=padding_idx)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    ids = np.array([[4], [0], [27], [4], [29]], dtype=np.int64)
    out, = exe.run(main, feed={"ids": ids,
                               "label": np.zeros((5, 1), np.int64)},
                   fetch_list=[emb], scope=scope)
    table = torch.tensor(_table(scope))
    want = torch.nn.functional.embedding(
        torch.tensor(ids[:, 0]), table,
        padding_idx=padding_idx if padding_idx is None or padding_idx >= 0
        else V + padding_idx)
    pad = None if padding_idx is None else padding_idx % V
    if pad is not None:  # torch keeps the row; Fluid reads zeros for it
        want[torch.tensor(ids[:, 0]) == pad] = 0
    np.testing.assert_array_equal(out, want.numpy())


@pytest.mark.parametrize("opt", [lambda: fluid.optimizer.SGD(0.5),
                                 lambda: fluid.optimizer.Adam(0.05),
                                 lambda: fluid.optimizer.Momentum(0.2)])
def test_sparse_trains_like_dense(opt):
    dense = _table(_train(*_build(False, opt)[:2], 20))
    sparse = _table(_train(*_build(True, opt)[:2], 20))
    np.testing.assert_allclose(sparse, dense, rtol=0, atol=1e-6)


def test_lazy_adam_leaves_untouched_rows_alone():
    main, startup, _, _ = _build(
        True, lambda: fluid.optimizer.Adam(0.05, lazy_mode=True))
    before_scope = fluid.Scope()
    _SCOPES.append(before_scope)
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=before_scope)
    after = _table(_train(main, startup, 5))
    before = _table(before_scope)
    np.testing.assert_array_equal(after[10:], before[10:])
    assert not np.array_equal(after[:10], before[:10])


def test_padding_row_never_moves():
    main, startup, _, _ = _build(True, lambda: fluid.optimizer.Adam(0.05),
                                 padding_idx=2)
    before_scope = fluid.Scope()
    _SCOPES.append(before_scope)
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=before_scope)
    after = _table(_train(main, startup, 5))
    np.testing.assert_array_equal(after[2], _table(before_scope)[2])


def test_errors_name_the_layer_and_argument():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        ids = L.data("ids", [1], dtype="int64")
        x = L.data("x", [1], dtype="float32")
        with pytest.raises(TypeError, match=r"embedding\(size=.*two ints"):
            L.embedding(ids, 30)
        with pytest.raises(ValueError, match=r"embedding\(padding_idx=30\)"):
            L.embedding(ids, [30, 4], padding_idx=30)
        with pytest.raises(Exception, match="argument 'input'.*must be int64"):
            L.embedding(x, [30, 4])
        out = L.embedding(ids, [30, 4])
        startup = fluid.default_startup_program()
        main = fluid.default_main_program()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    with pytest.raises(Exception, match="Ids 'ids' holds id 30 at position 1"):
        exe.run(main, feed={"ids": np.array([[1], [30]], np.int64)},
                fetch_list=[out], scope=scope)


def test_transpiler_gives_the_sparse_gradient_its_own_reduction():
    main, startup, _, _ = _build(True, lambda: fluid.optimizer.SGD(0.5))
    config = fluid.DistributeTranspilerConfig()
    config.mode = "collective"
    config.sparse_dense_ratio = 0.5
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(0, program=main, trainers=2, startup_program=startup)
    types = t.get_trainer_program().op_types()
    assert types.count("c_sparse_allreduce") == 1
    assert types.count("c_allreduce") == 1  # the fc's dense bucket
    config.sparse_dense_ratio = -1
    with pytest.raises(ValueError, match="sparse_dense_ratio must be >= 0, "
                                         "got -1"):
        fluid.DistributeTranspiler(config=config).transpile(
            0, program=main, trainers=2, startup_program=startup)
    with pytest.raises(ValueError, match="sparse_dense_ratio takes a float, "
                                         "got 'x'"):
        fluid.MPIExecutor(sparse_dense_ratio="x")
