"""dynamic_lstm and dynamic_gru in a model that trains: the label is the
sign of each sequence's first row, read from the recurrent state at its
last row (sequence_last_step), so the state must carry it through the
sequence; sequences of 1 to 6 rows. And a batch holding an empty
sequence: an error naming the op, the input and the sequence."""
import numpy as np
import pytest

import fluid

L = fluid.layers
_SCOPES = []  # scopes outlive the executors bound to them


def _train(recurrent, steps=60, seed=4):
    rng = np.random.RandomState(seed)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        main.random_seed = 5
        x = L.data("x", [3], lod_level=1)
        label = L.data("label", [1], dtype="int64")
        h = L.sequence_last_step(recurrent(x))
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 2), label))
        fluid.optimizer.Adam(0.05).minimize(loss)
    feeder = fluid.DataFeeder([x, label], fluid.CPUPlace(), program=main)
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(steps):
        batch = []
        for _ in range(16):
            seq = rng.uniform(-1, 1, (int(rng.randint(1, 7)), 3))
            batch.append((seq.astype(np.float32), [int(seq[0, 0] > 0)]))
        (l,) = exe.run(main, feed=feeder.feed(batch), fetch_list=[loss],
                       scope=scope)
        losses.append(float(l))
    return losses


@pytest.mark.parametrize("use_peepholes", [True, False])
def test_dynamic_lstm_learns_to_carry_the_first_row(use_peepholes):
    def lstm(x):
        hidden, _ = L.dynamic_lstm(L.fc(x, 32), 32,
                                   use_peepholes=use_peepholes)
        return hidden
    losses = _train(lstm)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), losses


@pytest.mark.parametrize("origin_mode", [False, True])
def test_dynamic_gru_learns_to_carry_the_first_row(origin_mode):
    def gru(x):
        return L.dynamic_gru(L.fc(x, 24), 8, origin_mode=origin_mode)
    losses = _train(gru)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), losses



@pytest.mark.parametrize("layer,op", [
    (lambda x: L.dynamic_lstm(x, 12)[0], "lstm"),
    (lambda x: L.dynamic_gru(x, 4), "gru")])
def test_an_empty_sequence_is_an_error_naming_the_input(layer, op):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [12], lod_level=1)
        hidden = layer(x)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    feed = {"x": fluid.create_lod_tensor(np.zeros((4, 12), np.float32),
                                         [[3, 0, 1]], fluid.CPUPlace())}
    with pytest.raises(Exception, match=op + r": Input 'x' holds an empty "
                                             r"sequence \(sequence 1"):
        exe.run(main, feed=feed, fetch_list=[hidden], scope=scope)
