"""fluid.layers.StaticRNN: h_t = tanh(fc(x_t) + fc(h_{t-1})) against the
same layers unrolled in one block with the same weights (outputs and the
gradients of the weights and the input equal to 1e-10 in float64), a
memory given by `init`, several outputs, the Fluid 1.x book form training,
and the errors of a malformed step block."""
import numpy as np
import pytest

import fluid

L = fluid.layers
T, B, D, H = 4, 3, 5, 6


def _attr(name, seed):
    return fluid.ParamAttr(name=name, initializer=fluid.initializer.
                           UniformInitializer(-1.0, 1.0, seed=seed))


def _cell(x_t, h):
    return L.tanh(L.fc(x_t, H, param_attr=_attr("wx", 1),
                       bias_attr=_attr("b", 3)) +
                  L.fc(h, H, param_attr=_attr("wh", 2), bias_attr=False))


def _net(loop, with_init):
    x = L.data("x", [T, B, D], dtype="float64", append_batch_size=False,
               stop_gradient=False)
    h0 = None
    if with_init:
        h0 = L.data("h0", [B, H], dtype="float64", append_batch_size=False,
                    stop_gradient=False)
    if not loop:
        h = h0 if with_init else L.fill_constant([B, H], "float64", 0.0)
        outs = []
        for x_t in L.unstack(x, 0):
            h = _cell(x_t, h)
            outs.append(h)
        return L.stack(outs, 0)
    rnn = L.StaticRNN()
    with rnn.step():
        x_t = rnn.step_input(x)
        if with_init:
            h = rnn.memory(init=h0)
        else:
            h = rnn.memory(shape=[-1, H], batch_ref=x_t)
        new = _cell(x_t, h)
        rnn.update_memory(h, new)
        rnn.step_output(new)
    return rnn()


def _run(loop, with_init=False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        out = _net(loop, with_init)
        loss = L.mean(out * out)
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    rs = np.random.RandomState(0)
    feed = {"x": rs.uniform(-1, 1, (T, B, D))}
    fetch = [out, loss, "wx@GRAD", "wh@GRAD", "b@GRAD", "x@GRAD"]
    if with_init:
        feed["h0"] = rs.uniform(-1, 1, (B, H))
        fetch.append("h0@GRAD")
    return out, exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


@pytest.mark.parametrize("with_init", [False, True])
def test_static_rnn_matches_unrolled(with_init):
    out, got = _run(True, with_init)
    _, want = _run(False, with_init)
    assert tuple(out.shape) == (T, B, H)
    names = ["out", "loss", "wx@GRAD", "wh@GRAD", "b@GRAD", "x@GRAD",
             "h0@GRAD"]
    for g, w, what in zip(got, want, names):
        assert g.shape == w.shape, what
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-10, err_msg=what)


def test_two_outputs_and_two_memories():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3, 2, 4], dtype="float32", append_batch_size=False)
        rnn = L.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(x)
            total = rnn.memory(shape=[-1, 4], batch_ref=x_t)
            count = rnn.memory(shape=[-1, 1], batch_ref=x_t, init_value=10.0)
            new_total = total + x_t
            new_count = count + 1.0
            rnn.update_memory(total, new_total)
            rnn.update_memory(count, new_count)
            rnn.output(new_total, new_count)
        totals, counts = rnn()
    xv = np.arange(24, dtype="float32").reshape(3, 2, 4)
    got_t, got_c = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": xv}, fetch_list=[totals, counts],
        scope=fluid.Scope())
    np.testing.assert_array_equal(got_t, np.cumsum(xv, axis=0))
    np.testing.assert_array_equal(got_c[:, :, 0],
                                  [[11, 11], [12, 12], [13, 13]])


def test_book_form_trains():
    """Fluid 1.x's StaticRNN docstring example: embedding, a StaticRNN
    over time-major words, a loss on the last step; the loss falls."""
    vocab, emb_dim, hidden, steps, batch = 20, 8, 16, 5, 4
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        words = L.data("words", [steps, batch, 1], dtype="int64",
                       append_batch_size=False)
        label = L.data("label", [batch, 1], dtype="int64",
                       append_batch_size=False)
        x_emb = L.embedding(words, size=[vocab, emb_dim], is_sparse=False)
        x_emb = L.reshape(x_emb, [steps, batch, emb_dim])
        rnn = L.StaticRNN()
        with rnn.step():
            word = rnn.step_input(x_emb)
            prev = rnn.memory(shape=[-1, hidden], batch_ref=word)
            hid = L.fc(input=[word, prev], size=hidden, act="relu")
            rnn.update_memory(prev, hid)
            rnn.step_output(hid)
        result = rnn()
        last = L.reshape(L.slice(result, axes=[0], starts=[steps - 1],
                                 ends=[steps]), [batch, hidden])
        pred = L.fc(last, size=vocab, act="softmax")
        loss = L.mean(L.cross_entropy(pred, label))
        fluid.optimizer.Adam(0.05).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    rs = np.random.RandomState(3)
    feed = {"words": rs.randint(0, vocab, (steps, batch, 1)).astype("int64"),
            "label": rs.randint(0, vocab, (batch, 1)).astype("int64")}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss],
                            scope=scope)[0]) for _ in range(10)]
    assert all(np.isfinite(losses))
    assert losses[-1] < losses[0] * 0.5, losses


def test_errors():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 2, 4], dtype="float32", append_batch_size=False)
        y = L.data("y", [5, 2, 4], dtype="float32", append_batch_size=False)
        rnn = L.StaticRNN()
        with pytest.raises(ValueError, match="inside `with rnn.step"):
            rnn.step_input(x)
        with pytest.raises(ValueError, match="never updated"):
            with rnn.step():
                x_t = rnn.step_input(x)
                with pytest.raises(ValueError, match="same"):
                    rnn.step_input(y)
                with pytest.raises(ValueError, match="shape and batch_ref"):
                    rnn.memory()
                with pytest.raises(ValueError, match="not a memory"):
                    rnn.update_memory(x_t, x_t)
                rnn.memory(shape=[-1, 4], batch_ref=x_t)
        rnn2 = L.StaticRNN()
        with pytest.raises(ValueError, match="call step_input first"):
            with rnn2.step():
                rnn2.step_output(x)
        with pytest.raises(ValueError, match="after the"):
            L.StaticRNN()()
        with pytest.raises(TypeError, match="expected a str"):
            L.StaticRNN(name=3)
