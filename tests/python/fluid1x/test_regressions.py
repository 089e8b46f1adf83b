"""Fluid 1.x forms that worked in the previous release:

- a weight-decay regularizer (or an initializer, a name, a list of one)
  given as a layer's param_attr / bias_attr, as Fluid's
  ParamAttr._to_attr takes it: the same program as an explicit
  ParamAttr(regularizer=...), for every layer that has parameters, and
  the decay applied in training (the book's recognize_digits mlp form
  included);
- run(..., return_numpy=False) giving a fluid.LoDTensor for every fetch,
  dense ones too, from Executor and MPIExecutor."""
import numpy as np
import pytest

import fluid

L = fluid.layers
_SCOPES = []  # scopes outlive the executors bound to them


def new_scope():
    scope = fluid.Scope()
    _SCOPES.append(scope)
    return scope


# ---- a regularizer as param_attr / bias_attr ----

def _fc(attr):
    x = L.data("x", [8])
    return L.fc(x, 4, param_attr=attr, bias_attr=attr)


def _conv2d(attr):
    img = L.data("img", [2, 6, 6])
    return L.conv2d(img, 3, 3, param_attr=attr, bias_attr=attr)


def _batch_norm(attr):
    return L.batch_norm(L.data("x", [3]), param_attr=attr, bias_attr=attr)


def _layer_norm(attr):
    return L.layer_norm(L.data("x", [5]), param_attr=attr, bias_attr=attr)


def _embedding(attr):
    ids = L.data("ids", [1], dtype="int64")
    return L.embedding(ids, size=[10, 4], param_attr=attr)


def _create_parameter(attr):
    return L.create_parameter([3, 4], "float32", attr=attr)


def _sequence_conv(attr):
    seq = L.data("seq", [4], lod_level=1)
    return L.sequence_conv(seq, 3, filter_size=3, param_attr=attr,
                           bias_attr=attr)


def _dynamic_lstm(attr):
    proj = L.data("proj", [16], lod_level=1)
    return L.dynamic_lstm(proj, 16, param_attr=attr, bias_attr=attr)[0]


def _dynamic_gru(attr):
    proj = L.data("proj", [12], lod_level=1)
    return L.dynamic_gru(proj, 4, param_attr=attr, bias_attr=attr)


def _lstm_unit(attr):
    x, h, c = L.data("x", [8]), L.data("h", [4]), L.data("c", [4])
    return L.lstm_unit(x, h, c, param_attr=attr, bias_attr=attr)[0]


def _gru_unit(attr):
    x, h = L.data("x", [12]), L.data("h", [4])
    return L.gru_unit(x, h, 12, param_attr=attr, bias_attr=attr)[0]


def _simple_img_conv_pool(attr):
    img = L.data("img", [2, 6, 6])
    return fluid.nets.simple_img_conv_pool(img, 3, 3, pool_size=2,
                                           pool_stride=2, param_attr=attr,
                                           bias_attr=attr)


def _img_conv_group(attr):
    img = L.data("img", [2, 6, 6])
    return fluid.nets.img_conv_group(img, [3, 3], pool_size=2,
                                     param_attr=attr)


def _sequence_conv_pool(attr):
    seq = L.data("seq", [4], lod_level=1)
    return fluid.nets.sequence_conv_pool(seq, 3, 3, param_attr=attr,
                                         bias_attr=attr)


LAYERS = [_fc, _conv2d, _batch_norm, _layer_norm, _embedding,
          _create_parameter, _sequence_conv, _dynamic_lstm, _dynamic_gru,
          _lstm_unit, _gru_unit, _simple_img_conv_pool, _img_conv_group,
          _sequence_conv_pool]


def build(layer, attr, seed=1):
    """`layer` with `attr`, a mean of its output minimised by SGD, in fresh
    programs with fresh names; returns (main, startup, loss)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        loss = L.mean(layer(attr))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


@pytest.mark.parametrize("layer", LAYERS, ids=lambda f: f.__name__[1:])
def test_a_regularizer_as_param_attr_is_a_default_param_attr_with_it(layer):
    decay = fluid.regularizer.L2Decay(0.0005)
    main, startup, _ = build(layer, decay)
    want_main, want_startup, _ = build(
        layer, fluid.ParamAttr(regularizer=fluid.regularizer.L2Decay(0.0005)))
    plain, _, _ = build(layer, None)
    assert str(main) == str(want_main)
    assert str(startup) == str(want_startup)
    # ... and that is the decay: ops the program without it does not have
    assert len(main.op_types()) > len(plain.op_types())


def test_l1_decay_initializer_name_and_list_forms():
    l1, _, _ = build(_fc, fluid.regularizer.L1Decay(0.01))
    want, _, _ = build(_fc, fluid.ParamAttr(
        regularizer=fluid.regularizer.L1Decay(0.01)))
    assert str(l1) == str(want) and "sign" in l1.op_types()
    init = fluid.initializer.Constant(0.25)
    _, startup, _ = build(_fc, init)
    _, want, _ = build(_fc, fluid.ParamAttr(initializer=init))
    assert str(startup) == str(want)
    named, _, _ = build(_embedding, "shared")
    assert named.desc.has_var("shared")
    listed, _, _ = build(_fc, [fluid.regularizer.L2Decay(0.0005)])
    want, _, _ = build(_fc, fluid.ParamAttr(
        regularizer=fluid.regularizer.L2Decay(0.0005)))
    assert str(listed) == str(want)


def test_what_param_attr_refuses_is_named():
    with pytest.raises(TypeError, match=r"fc\(param_attr=...\).*"
                       r"regularizer.*got float"):
        build(_fc, 0.0005)
    with pytest.raises(TypeError, match=r"a list of 2 param attrs.*one"):
        build(_conv2d, [fluid.regularizer.L2Decay(0.1)] * 2)


def one_step(attr, w0, x, lr=0.5):
    """fc(x, 3, param_attr=attr, bias_attr=False) from weights w0, one SGD
    step on mean(fc); returns the updated weights."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        inp = L.data("x", [4])
        loss = L.mean(L.fc(inp, 3, param_attr=attr, bias_attr=False))
        fluid.optimizer.SGD(lr).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), new_scope()
    exe.run(startup, scope=scope)
    scope.set("fc_0.w_0", w0)
    exe.run(main, feed={"x": x}, fetch_list=[loss], scope=scope)
    return scope.get("fc_0.w_0")


def test_the_decay_is_applied_in_training():
    rng = np.random.RandomState(0)
    w0 = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    x = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    coeff, lr = 0.1, 0.5
    w_short = one_step(fluid.regularizer.L2Decay(coeff), w0, x, lr)
    w_long = one_step(fluid.ParamAttr(
        regularizer=fluid.regularizer.L2Decay(coeff)), w0, x, lr)
    w_none = one_step(None, w0, x, lr)
    assert w_short.tobytes() == w_long.tobytes()
    # SGD with L2: w - lr * (grad + coeff * w) = no-decay update - lr*coeff*w
    np.testing.assert_allclose(w_none - w_short, lr * coeff * w0, rtol=1e-5,
                               atol=1e-7)


def test_the_books_recognize_digits_mlp_form_trains():
    # tests/book/test_recognize_digits_mlp.py, as the 0.11-1.x book had it.
    batch_size = 32
    fluid.reset_default_programs()
    fluid.default_main_program().random_seed = 5
    image = fluid.layers.data(name="x", shape=[784], dtype="float32")
    regularizer = fluid.regularizer.L2Decay(0.0005 * batch_size)
    hidden1 = fluid.layers.fc(input=image, size=128, act="relu",
                              param_attr=regularizer)
    hidden2 = fluid.layers.fc(input=hidden1, size=64, act="relu",
                              param_attr=regularizer)
    predict = fluid.layers.fc(input=hidden2, size=10, act="softmax",
                              param_attr=regularizer)
    label = fluid.layers.data(name="y", shape=[1], dtype="int64")
    cost = fluid.layers.cross_entropy(input=predict, label=label)
    avg_cost = fluid.layers.mean(x=cost)
    optimizer = fluid.optimizer.Momentum(learning_rate=0.01, momentum=0.9)
    optimizer.minimize(avg_cost)
    accuracy = fluid.layers.accuracy(input=predict, label=label)

    exe, scope = fluid.Executor(fluid.CPUPlace()), new_scope()
    exe.run(fluid.default_startup_program(), scope=scope)
    rng = np.random.RandomState(2)
    proj = rng.randn(784, 10)
    costs = []
    for _ in range(25):
        x = rng.rand(batch_size, 784).astype(np.float32)
        y = np.argmax(x @ proj, axis=1).reshape(-1, 1).astype(np.int64)
        loss, _ = exe.run(fluid.default_main_program(),
                          feed={"x": x, "y": y},
                          fetch_list=[avg_cost, accuracy], scope=scope)
        costs.append(float(loss[0]))
    assert np.mean(costs[-5:]) < 0.8 * np.mean(costs[:5]), costs
    # every weight is decayed: the regularization's ops are in the program
    decayed = [op for op in fluid.default_main_program().ops()
               if "optimize" in op["roles"] and op["type"] == "scale"]
    assert len(decayed) >= 3
    fluid.reset_default_programs()


# ---- return_numpy=False ----

def small_program():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3])
        y = L.fc(x, 2)
        loss = L.mean(y)
        test = main.clone(for_test=True)
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, test, x, y, loss


def check_lod_tensors(tensors, arrays):
    for t, a in zip(tensors, arrays):
        assert isinstance(t, fluid.LoDTensor), type(t)
        np.testing.assert_array_equal(np.array(t), a)
        assert t.shape() == list(np.shape(a))
        assert t.recursive_sequence_lengths() == []
        assert t.lod() == []
        assert t.has_valid_recursive_sequence_lengths()


def test_executor_returns_lod_tensors_for_dense_fetches():
    main, startup, test, x, y, loss = small_program()
    exe, scope = fluid.Executor(fluid.CPUPlace()), new_scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.arange(12, dtype=np.float32).reshape(4, 3)}
    arrays = exe.run(test, feed=feed, fetch_list=[y], scope=scope)
    tensors = exe.run(test, feed=feed, fetch_list=[y], scope=scope,
                      return_numpy=False)
    check_lod_tensors(tensors, arrays)
    # a training step too, its loss included
    (t_loss, t_y) = exe.run(main, feed=feed, fetch_list=[loss, y],
                            scope=scope, return_numpy=False)
    assert isinstance(t_loss, fluid.LoDTensor)
    assert np.array(t_loss).shape == (1,)
    assert np.array(t_y).shape == (4, 2)


def test_executor_keeps_the_lengths_of_a_sequence_fetch():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        seq = L.data("seq", [2], lod_level=1)
        out = L.scale(seq, scale=2.0)
        dense = L.sequence_pool(seq, "sum")
    exe, scope = fluid.Executor(fluid.CPUPlace()), new_scope()
    exe.run(startup, scope=scope)
    values = np.arange(10, dtype=np.float32).reshape(5, 2)
    t, d = exe.run(main, feed={"seq": (values, [2, 3])},
                   fetch_list=[out, dense], scope=scope, return_numpy=False)
    assert t.recursive_sequence_lengths() == [[2, 3]]
    assert t.lod() == [[0, 2, 5]]
    np.testing.assert_array_equal(np.array(t), 2 * values)
    assert isinstance(d, fluid.LoDTensor) and d.lod() == []
    np.testing.assert_array_equal(np.array(d), [values[:2].sum(0),
                                                values[2:].sum(0)])


def test_mpi_executor_honours_return_numpy():
    main, startup, test, x, y, loss = small_program()
    exe, scope = fluid.MPIExecutor(fluid.CPUPlace()), new_scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((4, 3), np.float32)}
    arrays = exe.run(test, feed=feed, fetch_list=[y], scope=scope)
    assert isinstance(arrays[0], np.ndarray)
    tensors = exe.run(test, feed=feed, fetch_list=[y], scope=scope,
                      return_numpy=False)
    check_lod_tensors(tensors, arrays)
    (before,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    (t_loss,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope,
                        return_numpy=False)
    assert isinstance(before, np.ndarray)
    assert isinstance(t_loss, fluid.LoDTensor) and t_loss.lod() == []
    assert np.array(t_loss)[0] < before[0]  # the second step trained
