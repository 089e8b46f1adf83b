"""The Fluid 1.6-1.8 helpers 1.x scripts reach outside the layers: fluid.data,
fluid.embedding, fluid.one_hot, unique_name.generate/switch, fluid.save /
fluid.load and the program state, fluid.profiler, fluid.average,
fluid.install_check, memory_optimize, create_random_int_lodtensor and the
reader decorators cache and multiprocess_reader."""
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import fluid


def _mlp(optimizer=None):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        x = fluid.data("x", shape=[None, 4])
        y = fluid.data("y", shape=[None, 1])
        pred = fluid.layers.fc(fluid.layers.fc(x, 8, act="relu"), 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        (optimizer or fluid.optimizer.Adam(learning_rate=0.01)).minimize(loss)
    return main, startup, loss


def _feed(seed=0):
    rng = np.random.RandomState(seed)
    return {"x": rng.rand(6, 4).astype("float32"),
            "y": rng.rand(6, 1).astype("float32")}


def _trained(steps=3):
    main, startup, loss = _mlp()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for i in range(steps):
        exe.run(main, feed=_feed(i), fetch_list=[loss], scope=scope)
    return main, scope, exe, loss


# ---- fluid.data, fluid.embedding, fluid.one_hot ----

def test_data_takes_the_shape_as_written():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        assert fluid.data("a", shape=[None, 3, 8]).shape == (-1, 3, 8)
        assert fluid.data("b", shape=[-1, 1], dtype="int64").shape == (-1, 1)
        assert fluid.data("c", shape=[5, 2]).shape == (5, 2)
        with pytest.raises(ValueError, match="dim 0 must be"):
            fluid.data("d", shape=[None, 0])
        with pytest.raises(ValueError, match="a list of dims"):
            fluid.data("e", shape=3)


def test_embedding_and_one_hot_take_ids_without_a_unit_dim():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data("ids", shape=[None, 5], dtype="int64")
        emb = fluid.embedding(ids, size=[20, 3], param_attr="table")
        hot = fluid.one_hot(ids, depth=20)
        assert emb.shape == (-1, 5, 3) and hot.shape == (-1, 5, 20)
        lenient = fluid.one_hot(ids, depth=4, allow_out_of_range=True)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    batch = np.array([[0, 3, 19, 3, 7], [1, 1, 2, 0, 5]], dtype="int64")
    e, h, z = exe.run(main, feed={"ids": batch},
                      fetch_list=[emb, hot, lenient], scope=scope)
    table = scope.get("table")
    np.testing.assert_array_equal(e, table[batch])        # a naive lookup
    np.testing.assert_array_equal(h, np.eye(20, dtype=h.dtype)[batch])
    # Ids past depth 4 give rows of zeros.
    eye = np.vstack([np.eye(4), np.zeros((16, 4))]).astype(z.dtype)
    np.testing.assert_array_equal(z, eye[batch])


# ---- unique_name ----

def test_generate_counts_with_the_layers_and_switch_swaps_generators():
    with fluid.unique_name.guard():
        assert fluid.unique_name.generate("fc") == "fc_0"
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()):
            x = fluid.data("x", shape=[None, 2])
            fluid.layers.fc(x, 2)
        assert "fc_1.w_0" in [v.name for v in main.list_vars()]
        old = fluid.unique_name.switch()
        assert fluid.unique_name.generate("fc") == "fc_0"
        fluid.unique_name.switch(old)
        assert fluid.unique_name.generate("fc") == "fc_2"
    with pytest.raises(TypeError, match="switch"):
        fluid.unique_name.switch("fresh")
    with pytest.raises(ValueError, match="non-empty"):
        fluid.unique_name.generate("")


# ---- fluid.save / fluid.load / program state ----

def test_save_and_load_round_trip_parameters_and_optimizer_state(tmp_path):
    main, scope, exe, loss = _trained()
    path = str(tmp_path / "out" / "model")
    fluid.save(main, path, scope=scope)
    for suffix in (".pdparams", ".pdopt", ".pdmodel"):
        assert os.path.getsize(path + suffix) > 0
    assert not [f for f in os.listdir(tmp_path / "out")
                if f.startswith(".fluid-save-")]  # no temporaries left
    saved = {n: scope.get(n).copy() for n in
             [v.name for v in fluid.io.get_program_persistable_vars(main)]}
    params = {v.name for v in fluid.io.get_program_parameter(main)}
    assert params and params < set(saved)
    # The files are pickles of {name: array}, Fluid 1.6's layout.
    with open(path + ".pdparams", "rb") as f:
        assert set(pickle.load(f)) == params

    for name in saved:
        scope.set(name, np.zeros_like(saved[name]))
    fluid.load(main, path, exe, scope=scope)
    for name, value in saved.items():
        np.testing.assert_array_equal(scope.get(name), value, err_msg=name)
    state = fluid.load_program_state(path)
    assert set(state) == set(saved)
    only = fluid.load_program_state(path, var_list=[sorted(params)[0]])
    assert list(only) == [sorted(params)[0]]
    with pytest.raises(ValueError, match="no value of nope"):
        fluid.load_program_state(path, var_list=["nope"])


def test_load_without_optimizer_file_loads_parameters_and_says_so(tmp_path):
    main, scope, exe, loss = _trained()
    path = str(tmp_path / "model")
    fluid.save(main, path, scope=scope)
    os.remove(path + ".pdopt")
    with pytest.warns(UserWarning, match="moment"):
        fluid.load(main, path, exe, scope=scope)


def test_set_program_state_checks_shapes_and_sets_nothing_on_error():
    main, scope, exe, loss = _trained(1)
    w = [v.name for v in fluid.io.get_program_parameter(main)][0]
    before = scope.get(w).copy()
    bad = {w: np.zeros((7, 7), dtype="float32")}
    with pytest.raises(ValueError, match=f"'{w}' is .* in the program"):
        fluid.set_program_state(main, bad, scope=scope)
    np.testing.assert_array_equal(scope.get(w), before)
    left = fluid.set_program_state(main, {w: before + 1}, scope=scope)
    np.testing.assert_array_equal(scope.get(w), before + 1)
    assert w not in left and left


def test_a_state_file_that_is_not_arrays_is_refused(tmp_path):
    path = str(tmp_path / "evil")

    class Payload:
        def __reduce__(self):
            return (os.system, ("echo owned",))

    with open(path + ".pdparams", "wb") as f:
        pickle.dump({"w": Payload()}, f)
    with pytest.raises(ValueError, match="only numpy arrays.*system"):
        fluid.load_program_state(path)
    with pytest.raises(ValueError, match="no such file"):
        fluid.load_program_state(str(tmp_path / "absent"))


# ---- fluid.profiler ----

def test_profiler_records_the_ops_and_writes_a_trace(tmp_path, capsys):
    main, startup, loss = _mlp(fluid.optimizer.SGD(learning_rate=0.1))
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    trace = str(tmp_path / "prof" / "trace.json")
    with fluid.profiler.profiler("CPU", sorted_key="total",
                                 profile_path=trace):
        for i in range(3):
            exe.run(main, feed=_feed(i), fetch_list=[loss], scope=scope)
    report = capsys.readouterr().out
    assert "Profiling Report" in report and trace in report
    rows = {line.split()[0]: line.split() for line in report.splitlines()
            if line and line.split()[0] in ("mul", "sgd", "feed")}
    assert rows["mul"][1] == "6" and rows["sgd"][1] == "12", report
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    assert any(e.get("name") == "mul_grad" for e in events)


def test_profiler_start_stop_reset_and_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="'CPU', 'GPU', 'All'"):
        fluid.profiler.start_profiler("TPU")
    with pytest.raises(RuntimeError, match="not running"):
        fluid.profiler.stop_profiler()
    main, scope, exe, loss = _trained(1)
    fluid.profiler.start_profiler("All")
    with pytest.raises(RuntimeError, match="running already"):
        fluid.profiler.start_profiler("CPU")
    exe.run(main, feed=_feed(), fetch_list=[loss], scope=scope)
    fluid.profiler.reset_profiler()  # drops that step
    rows = fluid.profiler.stop_profiler(
        sorted_key="calls", profile_path=str(tmp_path / "p.json"))
    assert rows == []
    with pytest.raises(ValueError, match="sorted_key='speed'"):
        fluid.profiler.stop_profiler(sorted_key="speed")


# ---- average, install_check, memory_optimize, random LoD tensors ----

def test_weighted_average():
    avg = fluid.average.WeightedAverage()
    with pytest.raises(ValueError, match="nothing was added"):
        avg.eval()
    avg.add(value=2.0, weight=1)
    avg.add(value=np.float32(5.0), weight=3)
    assert avg.eval() == pytest.approx(17.0 / 4)
    avg.reset()
    avg.add(value=np.array([1.0, 3.0]), weight=np.array([1.0, 1.0]))
    np.testing.assert_allclose(avg.eval(), [1.0, 3.0])
    with pytest.raises(ValueError, match=r"add\(value=\.\.\.\): a number"):
        avg.add(value="2", weight=1)


def test_install_check_trains_a_step(capsys):
    assert fluid.install_check.run_check() is True
    assert "fluid works" in capsys.readouterr().out


def test_memory_optimize_is_a_warned_no_op():
    main, startup, loss = _mlp()
    before = main.desc.serialize()
    with pytest.warns(UserWarning, match="does nothing"):
        fluid.memory_optimize(main)
    with pytest.warns(UserWarning, match="does nothing"):
        fluid.transpiler.release_memory(main)
    assert main.desc.serialize() == before


def test_create_random_int_lodtensor():
    t = fluid.create_random_int_lodtensor([[2, 3]], [1], fluid.CPUPlace(),
                                          low=0, high=9)
    values = np.array(t)
    assert values.shape == (5, 1) and values.dtype == np.int64
    assert values.min() >= 0 and values.max() <= 9
    assert t.recursive_sequence_lengths() == [[2, 3]]
    with pytest.raises(ValueError, match="low <= high"):
        fluid.create_random_int_lodtensor([[1]], [1], None, low=3, high=2)


# ---- reader decorators ----

def test_cache_reads_once_and_replays():
    reads = []

    def reader():
        for i in range(4):
            reads.append(i)
            yield i

    cached = fluid.io.cache(reader)
    assert list(cached()) == [0, 1, 2, 3]
    assert list(cached()) == [0, 1, 2, 3]
    assert reads == [0, 1, 2, 3]


def test_multiprocess_reader_gives_every_sample_and_raises_errors():
    def make(lo, hi):
        return lambda: iter(range(lo, hi))

    merged = fluid.io.multiprocess_reader([make(0, 50), make(50, 80)],
                                          queue_size=8)
    assert sorted(merged()) == list(range(80))

    def failing():
        yield 1
        raise KeyError("bad sample 2")

    with pytest.raises(RuntimeError, match="bad sample 2"):
        list(fluid.io.multiprocess_reader([failing])())
    # Stopping early ends the children.
    it = fluid.io.multiprocess_reader([make(0, 10 ** 6)], queue_size=4)()
    next(it)
    it.close()
    import multiprocessing
    assert not multiprocessing.active_children()
    with pytest.raises(ValueError, match="non-empty list"):
        fluid.io.multiprocess_reader([])


def test_the_names_tool_runs_under_this_interpreter():
    # The inventory of Fluid 1.x names and docs/python.md's list agree
    # (tools/fluid1x_names.py --check; its failures name each problem).
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    r = subprocess.run([sys.executable,
                        os.path.join(root, "tools", "fluid1x_names.py"),
                        "--check"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr


# ---- fluid.name_scope ----

def _scoped_net(scoped):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", shape=[None, 4])
        y = fluid.data("y", shape=[None, 1])
        if scoped:
            with fluid.name_scope("encoder"):
                h = fluid.layers.fc(x, 8, act="relu")
                with fluid.name_scope("inner"):
                    h = fluid.layers.fc(h, 8)
            with fluid.name_scope("encoder"):
                pred = fluid.layers.fc(h, 1)
        else:
            h = fluid.layers.fc(fluid.layers.fc(x, 8, act="relu"), 8)
            pred = fluid.layers.fc(h, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, loss


def test_name_scope_annotates_ops_and_changes_nothing_else():
    main, startup, loss = _scoped_net(True)
    scopes = [op.attr("op_namescope") if op.has_attr("op_namescope") else ""
              for op in main.global_block().ops]
    assert {"/encoder/", "/encoder/inner/", "/encoder_1/"} <= set(scopes)
    assert scopes[-1] == ""  # the optimizer, outside every scope
    plain, plain_startup, plain_loss = _scoped_net(False)
    # Annotations only: the programs compare equal without them...
    assert main.desc.without_callstacks().serialize() == \
        plain.desc.without_callstacks().serialize()
    # ...and train alike.
    losses = []
    for m, s, l in ((main, startup, loss), (plain, plain_startup, plain_loss)):
        scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
        exe.run(s, scope=scope)
        losses.append([float(exe.run(m, feed=_feed(i), fetch_list=[l],
                                     scope=scope)[0][0]) for i in range(3)])
    assert losses[0] == losses[1]
    with pytest.raises(ValueError, match="without '/'"):
        with fluid.name_scope("a/b"):
            pass


# ---- a layer's name names its parameters ----

def test_fc_and_conv2d_name_their_parameters_as_fluid_does():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data("x", shape=[None, 4])
        z = fluid.data("z", shape=[None, 3])
        im = fluid.data("im", shape=[None, 3, 8, 8])
        fluid.layers.fc(x, 3, name="enc")
        fluid.layers.fc([x, z], 2, name="enc")   # counted on: enc.w_1, ...
        fluid.layers.fc(x, 2, name="dec", bias_attr=False)
        fluid.layers.fc(x, 2, name="own", param_attr=fluid.ParamAttr("mine"))
        fluid.layers.conv2d(im, 4, 3, name="c1")
        fluid.layers.fc(x, 2)                     # unnamed: fc_N
    names = sorted(p.name for p in main.all_parameters()
                   if not p.name.startswith("fc_"))
    assert names == ["c1.b_0", "c1.w_0", "dec.w_0", "enc.b_0", "enc.b_1",
                     "enc.w_0", "enc.w_1", "enc.w_2", "mine", "own.b_0"], names
    unnamed = [p.name for p in main.all_parameters()
               if p.name.startswith("fc_")]
    assert len(unnamed) == 2 and unnamed[0].endswith(".w_0"), unnamed
