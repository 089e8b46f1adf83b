"""The LoD-rank layers in Fluid 1.x's form: the loop DynamicRNN builds
(sequences ranked longest first, split into steps, h_t = tanh(fc(x_t) +
fc(h_{t-1})) in a While with the state shrunk as sequences end, the steps
merged back) against the recurrence run per sequence in NumPy, outputs
and the gradients of both weights, the input and the initial state (float64,
1e-10); each layer alone against NumPy; and the errors."""
import numpy as np
import pytest

import fluid

L = fluid.layers
D, H = 3, 4
LENGTHS = [2, 0, 4, 1, 4]  # an empty sequence, two of one length


def _param(name, seed):
    return fluid.ParamAttr(
        name=name, initializer=fluid.initializer.UniformInitializer(
            -0.8, 0.8, seed=seed))


def _rnn_net():
    x = L.data("x", [D], dtype="float64", lod_level=1, stop_gradient=False)
    h0 = L.data("h0", [H], dtype="float64", stop_gradient=False)
    r = L.data("r", [H], dtype="float64")
    table = L.lod_rank_table(x)
    steps = L.lod_tensor_to_array(x, table)
    n = L.max_sequence_len(table)
    outs = L.create_array("float64")
    i = L.fill_constant([1], "int64", 0)
    # The state of step t is slot t of an array, as DynamicRNN keeps it
    # (slot 0 written at an index of its own: the loop moves i).
    zero = L.fill_constant([1], "int64", 0)
    mems = L.array_write(L.reorder_lod_tensor_by_rank(h0, table), zero)
    cond = L.less_than(i, n)
    loop = L.While(cond)
    with loop.block():
        x_t = L.array_read(steps, i)
        prev = L.shrink_memory(L.array_read(mems, i), i, table)
        a = L.elementwise_add(
            L.fc(x_t, H, bias_attr=False, param_attr=_param("wx", 3)),
            L.fc(prev, H, bias_attr=False, param_attr=_param("wh", 4)))
        h = L.tanh(a)
        L.array_write(h, i, array=outs)
        L.array_write(h, L.increment(i, in_place=False), array=mems)
        L.increment(i)
        L.less_than(i, n, cond=cond)
    out = L.array_to_lod_tensor(outs, table)
    loss = L.mean(L.elementwise_mul(out, r))
    fluid.optimizer.SGD(0.1).minimize(loss)
    return out, loss


def _numpy_rnn(x, h0, r, wx, wh):
    """Forward and backward of the recurrence, one sequence at a time."""
    offsets = np.concatenate([[0], np.cumsum(LENGTHS)])
    c = 1.0 / r.size
    out = np.zeros((offsets[-1], H))
    g = {"wx": np.zeros_like(wx), "wh": np.zeros_like(wh),
         "x": np.zeros_like(x), "h0": np.zeros_like(h0)}
    for s, n in enumerate(LENGTHS):
        rows = range(offsets[s], offsets[s + 1])
        hs = [h0[s]]
        for row in rows:
            hs.append(np.tanh(x[row] @ wx + hs[-1] @ wh))
            out[row] = hs[-1]
        dh = np.zeros(H)
        for t in reversed(range(n)):
            row = offsets[s] + t
            da = (dh + c * r[row]) * (1 - hs[t + 1] ** 2)
            g["wx"] += np.outer(x[row], da)
            g["wh"] += np.outer(hs[t], da)
            g["x"][row] = da @ wx.T
            dh = da @ wh.T
        g["h0"][s] = dh
    loss = np.sum(out * r) * c
    return out, loss, g


def test_dynamic_rnn_loop_matches_numpy_per_sequence():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        out, loss = _rnn_net()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    wx = np.array(scope.find_var("wx").get_tensor())
    wh = np.array(scope.find_var("wh").get_tensor())
    rs = np.random.RandomState(2)
    rows = sum(LENGTHS)
    x = rs.uniform(-1, 1, (rows, D))
    h0 = rs.uniform(-1, 1, (len(LENGTHS), H))
    r = rs.uniform(-1, 1, (rows, H))
    feed = {"x": fluid.create_lod_tensor(x, [LENGTHS]), "h0": h0, "r": r}
    got = exe.run(main, feed=feed, scope=scope,
                  fetch_list=[out, loss, "wx@GRAD", "wh@GRAD", "x@GRAD",
                              "h0@GRAD"])
    want_out, want_loss, grads = _numpy_rnn(x, h0, r, wx, wh)
    np.testing.assert_allclose(got[0], want_out, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got[1], want_loss, rtol=0, atol=1e-10)
    for k, name in enumerate(["wx", "wh", "x", "h0"]):
        np.testing.assert_allclose(got[2 + k], grads[name], rtol=0,
                                   atol=1e-10, err_msg=name)
    # The gradient is not trivially zero anywhere it should not be.
    assert np.abs(grads["h0"][1]).max() == 0  # the empty sequence
    assert np.abs(got[5][0]).max() > 1e-3


def _run_layers(build, feed, fetch_count):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    got = exe.run(main, feed=feed, scope=scope, fetch_list=list(fetch),
                  return_numpy=False)
    assert len(got) == fetch_count
    return got


def test_each_layer_against_numpy():
    rs = np.random.RandomState(4)
    x = rs.uniform(-1, 1, (sum(LENGTHS), 2))
    m = rs.uniform(-1, 1, (len(LENGTHS), 3))
    order = [2, 4, 0, 3, 1]  # longest first, ties in order

    def build():
        xv = L.data("x", [2], dtype="float64", lod_level=1)
        mv = L.data("m", [3], dtype="float64")
        table = L.lod_rank_table(xv, level=0)
        steps = L.lod_tensor_to_array(xv, table)
        i = L.fill_constant([1], "int64", 2)
        return [L.max_sequence_len(table), L.array_read(steps, i),
                L.array_to_lod_tensor(steps, table),
                L.reorder_lod_tensor_by_rank(xv, table),
                L.reorder_lod_tensor_by_rank(mv, table),
                L.shrink_memory(mv, i, table), L.array_length(steps)]

    got = _run_layers(build, {"x": fluid.create_lod_tensor(x, [LENGTHS]),
                              "m": m}, 7)
    offsets = np.concatenate([[0], np.cumsum(LENGTHS)])
    seqs = [x[offsets[s]:offsets[s + 1]] for s in range(len(LENGTHS))]
    assert np.asarray(got[0]).tolist() == [4]
    step2 = np.stack([seqs[s][2] for s in order if LENGTHS[s] > 2])
    np.testing.assert_array_equal(np.asarray(got[1]), step2)
    np.testing.assert_array_equal(np.asarray(got[2]), x)
    assert got[2].recursive_sequence_lengths() == [LENGTHS]
    np.testing.assert_array_equal(np.asarray(got[3]),
                                  np.concatenate([seqs[s] for s in order]))
    assert got[3].recursive_sequence_lengths() == [
        [LENGTHS[s] for s in order]]
    np.testing.assert_array_equal(np.asarray(got[4]), m[order])
    np.testing.assert_array_equal(np.asarray(got[5]), m[:2])  # 2 run at 2
    assert np.asarray(got[6]).tolist() == [4]


def test_errors_name_the_cause():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [2], dtype="float64", lod_level=1)
        with pytest.raises(Exception, match="only level 0"):
            L.lod_rank_table(x, level=1)
        with pytest.raises(TypeError, match=r"lod_rank_table\(level="):
            L.lod_rank_table(x, level="0")
        with pytest.raises(Exception, match="is not a rank table"):
            L.max_sequence_len(x)
        with pytest.raises(Exception, match="is not a rank table"):
            L.lod_tensor_to_array(x, x)
        table = L.lod_rank_table(x)
        with pytest.raises(Exception, match="is not a tensor array"):
            L.array_to_lod_tensor(x, table)
        with pytest.raises(TypeError, match="shrink_memory"):
            L.shrink_memory(x, 3, table)
    # A dense tensor where sequences are needed: the feed says so.
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [2], dtype="float64")
        out = L.max_sequence_len(L.lod_rank_table(x))
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(Exception, match="has no LoD"):
        exe.run(main, feed={"x": np.zeros((3, 2))}, fetch_list=[out],
                scope=fluid.Scope())


def test_empty_batch_and_fetching_a_table():
    def program(merge):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = L.data("x", [2], dtype="float64", lod_level=1)
            table = L.lod_rank_table(x)
            n = L.max_sequence_len(table)
            if merge:
                L.array_to_lod_tensor(L.lod_tensor_to_array(x, table), table)
        return main, table, n

    exe = fluid.Executor(fluid.CPUPlace())
    empty = {"x": fluid.create_lod_tensor(np.zeros((0, 2)), [[0, 0]])}
    main, table, n = program(False)
    got = exe.run(main, feed=empty, fetch_list=[n], scope=fluid.Scope())
    assert np.asarray(got[0]).tolist() == [0]
    with pytest.raises(Exception, match=r"holds a rank table \(the output "
                       r"of lod_rank_table\), not a tensor"):
        exe.run(main, feed=empty, fetch_list=[table], scope=fluid.Scope())
    main, _, n = program(True)
    with pytest.raises(Exception, match="2 sequences, all empty: there is "
                       "no step to merge"):
        exe.run(main, feed=empty, fetch_list=[n], scope=fluid.Scope())
