"""fluid.io: inference models (save_inference_model / load_inference_model)
and the variable savers (save_vars, save_params, save_persistables and their
loaders), on one process and after training under mpirun."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import fluid

L = fluid.layers
HERE = os.path.dirname(os.path.abspath(__file__))

# Scopes outlive the executors that ran programs on them (see
# test_executor.py).
_SCOPES = []


def new_scope():
    scope = fluid.Scope()
    _SCOPES.append(scope)
    return scope


def synthetic(n=64, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.randn(3, 8).astype(np.float32) * 3
    y = rng.randint(0, 3, size=n)
    x = centers[y] + rng.randn(n, 8).astype(np.float32) * 0.5
    return x.astype(np.float32), y.reshape(n, 1).astype(np.int64)


def build(seed=1, hidden=16):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [8])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(x, hidden, act="relu")
        predict = L.softmax(L.fc(h, 3))
        loss = L.mean(L.cross_entropy(predict, label))
        acc = L.accuracy(predict, label)
        fluid.optimizer.Momentum(0.1, 0.9).minimize(loss)
    return main, startup, predict, loss, acc


@pytest.fixture
def trained():
    main, startup, predict, loss, acc = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    exe.run(startup, scope=scope)
    x, y = synthetic()
    for _ in range(5):
        exe.run(main, feed={"x": x, "label": y}, fetch_list=[loss],
                scope=scope)
    return exe, scope, main, startup, predict, loss, acc


def clone_predictions(exe, scope, main, predict):
    x, y = synthetic()
    (p,) = exe.run(main.clone(for_test=True), feed={"x": x, "label": y},
                   fetch_list=[predict], scope=scope)
    return np.array(p)


# ---- inference models ----

def test_inference_model_predicts_as_the_program_cloned_for_test(
        trained, tmp_path):
    exe, scope, main, _, predict, _, _ = trained
    expected = clone_predictions(exe, scope, main, predict)
    d = str(tmp_path / "model")
    names = fluid.io.save_inference_model(d, ["x"], [predict], exe, main,
                                          scope=scope)
    assert names == [predict.name]

    scope2 = new_scope()
    exe2 = fluid.Executor(fluid.CPUPlace())
    program, feeds, fetches = fluid.io.load_inference_model(d, exe2,
                                                            scope=scope2)
    assert feeds == ["x"]
    assert [f.name for f in fetches] == [predict.name]
    x, _ = synthetic()
    (p,) = exe2.run(program, feed={"x": x}, fetch_list=fetches, scope=scope2)
    assert np.array_equal(np.array(p), expected)  # bitwise


def test_the_saved_program_is_pruned_to_the_targets(trained, tmp_path):
    exe, scope, main, _, predict, _, _ = trained
    d = str(tmp_path / "model")
    fluid.io.save_inference_model(d, ["x"], [predict], exe, main, scope=scope)
    program, _, _ = fluid.io.load_inference_model(d, exe, scope=new_scope())
    assert program.op_types() == ["mul", "elementwise_add", "relu", "mul",
                                  "elementwise_add", "softmax"]
    assert all(op["roles"] == ["forward"] for op in program.ops())
    names = {v.name for v in program.list_vars()}
    assert "label" not in names
    assert not any("velocity" in n or "@GRAD" in n for n in names)
    # only the parameters the program reads were saved
    params = sorted(v.name for v in program.list_vars() if v.persistable)
    assert params == sorted(p.name for p in main.all_parameters())


def test_model_directory_layout_and_file_names(trained, tmp_path):
    exe, scope, main, _, predict, _, _ = trained
    expected = clone_predictions(exe, scope, main, predict)
    d = str(tmp_path / "model")
    fluid.io.save_inference_model(d, ["x"], [predict], exe, main,
                                  model_filename="net.pb",
                                  params_filename="weights", scope=scope)
    assert sorted(os.listdir(d)) == ["net.pb", "weights"]
    assert "LATEST" in os.listdir(os.path.join(d, "weights"))
    assert not os.path.exists(d + ".tmp") and not os.path.exists(d + ".old")
    with pytest.raises(KeyError, match="__model__"):
        fluid.io.load_inference_model(d, exe, scope=new_scope())
    scope2 = new_scope()
    program, _, fetches = fluid.io.load_inference_model(
        d, exe, model_filename="net.pb", params_filename="weights",
        scope=scope2)
    x, _ = synthetic()
    (p,) = exe.run(program, feed={"x": x}, fetch_list=fetches, scope=scope2)
    assert np.array_equal(np.array(p), expected)


def test_saving_again_replaces_the_model_whole(trained, tmp_path):
    exe, scope, main, _, predict, loss, _ = trained
    d = str(tmp_path / "model")
    fluid.io.save_inference_model(d, ["x"], [predict], exe, main, scope=scope)
    x, y = synthetic()
    exe.run(main, feed={"x": x, "label": y}, fetch_list=[loss], scope=scope)
    expected = clone_predictions(exe, scope, main, predict)
    fluid.io.save_inference_model(d, ["x"], [predict], exe, main, scope=scope)
    assert sorted(os.listdir(tmp_path)) == ["model"]
    scope2 = new_scope()
    program, _, fetches = fluid.io.load_inference_model(d, exe, scope=scope2)
    (p,) = exe.run(program, feed={"x": x}, fetch_list=fetches, scope=scope2)
    assert np.array_equal(np.array(p), expected)


def test_a_directory_of_other_files_is_not_replaced(trained, tmp_path):
    exe, scope, main, _, predict, _, _ = trained
    d = tmp_path / "precious"
    d.mkdir()
    (d / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not an inference model directory"):
        fluid.io.save_inference_model(str(d), ["x"], [predict], exe, main,
                                      scope=scope)
    assert os.listdir(d) == ["notes.txt"]
    assert sorted(os.listdir(tmp_path)) == ["precious"]


def test_a_target_that_needs_an_unfed_var_is_refused(trained, tmp_path):
    exe, scope, main, _, _, loss, _ = trained
    with pytest.raises(ValueError, match="'label'"):
        fluid.io.save_inference_model(str(tmp_path / "m"), ["x"], [loss],
                                      exe, main, scope=scope)
    assert not os.path.exists(tmp_path / "m")
    assert not os.path.exists(tmp_path / "m.tmp")


def test_feeding_an_intermediate_var_prunes_what_computes_it(trained,
                                                             tmp_path):
    exe, scope, main, _, predict, _, _ = trained
    hidden = next(op["outputs"]["Out"][0] for op in main.ops()
                  if op["type"] == "relu")
    d = str(tmp_path / "m")
    fluid.io.save_inference_model(d, [hidden], [predict], exe, main,
                                  scope=scope)
    program, feeds, _ = fluid.io.load_inference_model(d, exe,
                                                      scope=new_scope())
    assert feeds == [hidden]
    assert program.op_types() == ["mul", "elementwise_add", "softmax"]


def test_a_missing_model_is_a_key_error_naming_it(tmp_path):
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(KeyError, match="nowhere"):
        fluid.io.load_inference_model(str(tmp_path / "nowhere"), exe,
                                      scope=new_scope())


# ---- save_vars and friends ----

def test_params_only_save_loads_into_a_program_with_optimizer_state(
        trained, tmp_path):
    exe, scope, main, _, _, _, _ = trained
    d = str(tmp_path / "params")
    fluid.io.save_params(exe, d, main, scope=scope)
    main2, startup2, *_ = build(seed=9)
    scope2 = new_scope()
    exe.run(startup2, scope=scope2)
    state = [v.name for v in main2.list_vars()
             if v.persistable and not fluid.io.is_parameter(v)]
    assert any("velocity" in n for n in state)
    before = {n: np.array(scope2.get(n)) for n in state}
    fluid.io.load_params(exe, d, main2, scope=scope2)
    for p in main.all_parameters():
        assert np.array_equal(scope2.get(p.name), scope.get(p.name)), p.name
    for n in state:  # optimizer state keeps its initial values
        assert np.array_equal(scope2.get(n), before[n]), n


def test_load_persistables_from_a_params_only_save_names_the_missing_var(
        trained, tmp_path):
    exe, scope, main, _, _, _, _ = trained
    d = str(tmp_path / "params")
    fluid.io.save_params(exe, d, main, scope=scope)
    velocity = next(v.name for v in main.list_vars()
                    if "velocity" in v.name)
    with pytest.raises(ValueError,
                       match=f"ckpt-0.*{velocity}: missing from checkpoint"):
        fluid.io.load_persistables(exe, d, main, scope=new_scope())


def test_persistables_round_trip_and_params_out_of_them(trained, tmp_path):
    exe, scope, main, _, _, _, _ = trained
    d = str(tmp_path / "all")
    fluid.io.save_persistables(exe, d, main, scope=scope, step=7, epoch=2)
    names = [v.name for v in main.list_vars() if v.persistable]
    scope2 = new_scope()
    assert fluid.io.load_persistables(exe, d, main, scope=scope2) == (7, 2)
    for n in names:
        assert np.array_equal(scope2.get(n), scope.get(n)), n
    scope3 = new_scope()
    fluid.io.load_params(exe, d, main, scope=scope3)  # a subset: fine
    assert sorted(scope3.var_names()) == sorted(
        p.name for p in main.all_parameters())


def test_a_shape_mismatch_names_the_var_and_the_checkpoint(trained,
                                                           tmp_path):
    exe, scope, main, _, _, _, _ = trained
    d = str(tmp_path / "params")
    fluid.io.save_params(exe, d, main, scope=scope)
    wider, *_ = build(hidden=17)
    w = wider.all_parameters()[0].name
    with pytest.raises(ValueError, match=f"ckpt-0.*{w}: shape"):
        fluid.io.load_params(exe, d, wider, scope=new_scope())


def test_save_vars_with_a_list_a_predicate_and_a_filename(trained, tmp_path):
    exe, scope, main, _, _, _, _ = trained
    w = main.all_parameters()[0]
    d = str(tmp_path / "vars")
    fluid.io.save_vars(exe, d, main, vars=[w], filename="one", scope=scope)
    assert os.listdir(d) == ["one"]
    scope2 = new_scope()
    fluid.io.load_vars(exe, d, main, vars=[w.name], filename="one",
                       scope=scope2)
    assert scope2.var_names() == [w.name]
    assert np.array_equal(scope2.get(w.name), scope.get(w.name))
    biases = lambda v: v.persistable and v.name.endswith(".b_0")  # noqa
    fluid.io.save_vars(exe, d, main, predicate=biases, scope=scope)
    scope3 = new_scope()
    fluid.io.load_vars(exe, d, main, predicate=biases, scope=scope3)
    assert sorted(scope3.var_names()) == sorted(
        v.name for v in main.list_vars() if biases(v))
    with pytest.raises(ValueError, match="no variables"):
        fluid.io.save_vars(exe, d, main, predicate=lambda v: False,
                           scope=scope)


# ---- a model trained under mpirun ----

def test_inference_model_of_a_model_trained_under_mpirun(tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
         "-x", "PYTHONPATH", sys.executable,
         os.path.join(HERE, "mpi_inference_job.py"), str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0 of 2: saved" in r.stdout, r.stdout + r.stderr
    expected = np.load(tmp_path / "expected.npy")
    x = np.load(tmp_path / "x.npy")
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    program, feeds, fetches = fluid.io.load_inference_model(
        str(tmp_path / "model"), exe, scope=scope)
    (p,) = exe.run(program, feed={feeds[0]: x}, fetch_list=fetches,
                   scope=scope)
    assert np.array_equal(np.array(p), expected)  # bitwise


def test_a_transpiled_trainer_program_saves_the_same_model(trained, tmp_path):
    exe, scope, main, startup, predict, _, _ = trained
    t = fluid.DistributeTranspiler()
    t.transpile(None, None, trainers=2, program=main, startup_program=startup)
    trainer = t.get_trainer_program()
    assert "c_allreduce" in trainer.op_types()
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    fluid.io.save_inference_model(a, ["x"], [predict], exe, main, scope=scope)
    fluid.io.save_inference_model(b, ["x"], [predict], exe, trainer,
                                  scope=scope)
    pa, _, _ = fluid.io.load_inference_model(a, exe, scope=new_scope())
    pb, _, _ = fluid.io.load_inference_model(b, exe, scope=new_scope())
    assert pa.op_types() == pb.op_types()
    assert pb.desc.nranks == 1
