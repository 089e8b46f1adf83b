"""Recompute from Python: fluid.optimizer.RecomputeOptimizer (Fluid 1.6's
names: _set_checkpoints, minimize) with fluid.Executor, the strategy form
(DistributedStrategy.recompute, recompute_configs) with fluid.MPIExecutor
and fleet's forward_recompute under mpirun (mpi_recompute.py): a
recomputed program trains bit for bit like the program without recompute,
dropout included."""
import json

import numpy as np
import pytest

import fluid
from fluid.contrib import mixed_precision
from fluid1x_common import (CLASSES, FEATURES, global_batch, load_results,
                            mpirun)

STEPS = 10


def build(seed=5):
    """A 16-32-32-4 classifier with dropout; (main, startup, loss, the two
    hidden layers' outputs)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", shape=[FEATURES])
        y = fluid.layers.data("y", shape=[1], dtype="int64")
        h1 = fluid.layers.fc(x, 32, act="relu")
        d1 = fluid.layers.dropout(h1, 0.3)
        h2 = fluid.layers.fc(d1, 32, act="relu")
        d2 = fluid.layers.dropout(h2, 0.3)
        logits = fluid.layers.fc(d2, CLASSES)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, y))
    return main, startup, loss, [h1, h2]


def train(checkpoints, steps=STEPS, amp=None):
    """Losses and parameters of `steps` steps of SGD, wrapped in
    RecomputeOptimizer when `checkpoints` is not None; amp "inside" or
    "outside" decorates for bf16 before or after that wrapping."""
    with fluid.unique_name.guard():
        main, startup, loss, hidden = build()
        with fluid.program_guard(main, startup):
            opt = fluid.optimizer.SGD(learning_rate=0.1)
            if amp == "inside":
                opt = mixed_precision.decorate(opt, use_bf16=True)
            if checkpoints is not None:
                opt = fluid.optimizer.RecomputeOptimizer(opt)
                opt._set_checkpoints(checkpoints(hidden))
            if amp == "outside":
                opt = mixed_precision.decorate(opt, use_bf16=True)
            opt.minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = []
    for step in range(steps):
        x, y = global_batch(step)
        (value,) = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss],
                           scope=scope)
        losses.append(np.asarray(value).ravel()[0])
    params = {p.name: np.array(scope.find_var(p.name).get_tensor())
              for p in main.all_parameters()}
    return main, np.asarray(losses, dtype=np.float32), params


def op_types(program):
    return [op.type for op in program.global_block().ops]


def test_recompute_optimizer_trains_bitwise_like_its_optimizer():
    plain_main, plain_losses, plain_params = train(None)
    main, losses, params = train(lambda hidden: hidden)
    # The replays: the first segment (fc, relu, dropout) runs again in
    # the backward pass, writing @RECOMPUTE copies.
    replayed = [op for op in main.global_block().ops
                if any(n.endswith("@RECOMPUTE") for n in op.output_arg_names)]
    assert "dropout" in [op.type for op in replayed]
    assert len(op_types(main)) > len(op_types(plain_main))
    assert losses.tobytes() == plain_losses.tobytes()
    assert sorted(params) == sorted(plain_params)
    for name in params:
        assert params[name].tobytes() == plain_params[name].tobytes(), name


def replays(program):
    return [op.type for op in program.global_block().ops
            if any(n.endswith("@RECOMPUTE") for n in op.output_arg_names)]


@pytest.mark.parametrize("order", ["inside", "outside"])
def test_with_mixed_precision_in_either_order(order):
    """bf16 with recompute trains bit for bit like bf16 without it, with
    the decorator inside RecomputeOptimizer or around it (whose rewrite
    regenerates the backward pass, then recomputed again)."""
    _, plain_losses, plain_params = train(None, amp="inside")
    main, losses, params = train(lambda hidden: hidden, amp=order)
    assert "cast" in op_types(main)
    assert "cast" in replays(main) and "dropout" in replays(main)
    assert losses.tobytes() == plain_losses.tobytes()
    for name in params:
        assert params[name].tobytes() == plain_params[name].tobytes(), name


def test_checkpoints_by_name_and_auto():
    main, losses, _ = train(lambda hidden: [hidden[1].name])
    _, plain_losses, _ = train(None)
    assert losses.tobytes() == plain_losses.tobytes()
    # An mlp has no residual adds: auto says so, naming what to do.
    with pytest.raises(Exception, match="found no checkpoints"):
        train(lambda hidden: "auto")


def test_bad_checkpoints_are_refused_naming_them():
    with pytest.raises(Exception, match="'nope' are not variables"):
        train(lambda hidden: ["nope"])
    with pytest.raises(Exception, match="not computed by the forward pass"):
        train(lambda hidden: ["x"])
    opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
    with pytest.raises(TypeError, match="list of Variables"):
        opt._set_checkpoints("h1")
    with pytest.raises(ValueError, match="empty"):
        opt._set_checkpoints([])
    with pytest.raises(TypeError, match="must be an optimizer"):
        fluid.optimizer.RecomputeOptimizer(None)
    main, startup, loss, _ = build()
    with fluid.program_guard(main, startup):
        with pytest.raises(RuntimeError, match="_set_checkpoints"):
            opt.minimize(loss)
    with pytest.raises(NotImplementedError, match="minimize"):
        opt.backward(loss)


def test_strategy_fields():
    s = fluid.DistributedStrategy()
    assert s.recompute is False
    assert s.recompute_configs == {"checkpoints": []}
    s.recompute = True
    s.recompute_configs = {"checkpoints": ["fc_0.tmp_2", "fc_1.tmp_2"]}
    assert s.recompute_configs == {"checkpoints": ["fc_0.tmp_2",
                                                "fc_1.tmp_2"]}
    with pytest.raises(ValueError, match="checkpoints"):
        s.recompute_configs = {"checkpoint": ["a"]}
    assert "recompute: true" in str(s)


@pytest.mark.parametrize("mode,np_", [("strategy", 1), ("strategy", 2),
                                      ("fleet", 2)])
def test_under_mpirun_trains_bitwise_like_without(tmp_path, mode, np_):
    done = mpirun("mpi_recompute.py", np_, tmp_path, mode)
    assert done.returncode == 0, done.stdout + done.stderr
    for run in load_results(str(tmp_path), "recompute_" + mode, np_):
        assert run["losses"].tobytes() == run["ref_losses"].tobytes()
        names = [k for k in run if k.startswith("param/")]
        assert names
        for k in names:
            ref = run["ref/" + k[len("param/"):]]
            assert run[k].tobytes() == ref.tobytes(), k
        assert run["extra/replays"] > 0
    if mode == "strategy":
        # The replays show in the timeline under names of their own.
        with open(tmp_path / "trace.json") as f:
            names = {e.get("name") for e in json.load(f)["traceEvents"]}
        assert "dropout (recompute)" in names
        assert "dropout" in names
