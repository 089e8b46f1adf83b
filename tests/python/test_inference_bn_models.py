"""Inference models of a network with batch norm and dropout (whose test
mode differs from training: running statistics, no mask): the loaded model
predicts bit for bit as the training program cloned for test, whether the
model was trained in this process or by `mpirun -np 2 trainer` (from its
checkpoint); and `trainer --predict DIR` reports the accuracy the training
reported, once, also under `mpirun -np 2`."""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import fluid
from test_mpi import mpi_env, tiny_idx

L = fluid.layers

# Scopes outlive the executors that ran programs on them (see
# test_executor.py).
_SCOPES = []


def new_scope():
    scope = fluid.Scope()
    _SCOPES.append(scope)
    return scope


def build(seed=3):
    """conv-BN-ReLU, max pool, conv-BN-ReLU, fc-BN-ReLU, dropout, fc."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.conv2d(image, 8, 3, padding=1, bias_attr=False)
        h = L.batch_norm(h, act="relu")
        h = L.pool2d(h, 2, "max", 2)
        h = L.conv2d(h, 16, 3, stride=2, padding=1, bias_attr=False)
        h = L.batch_norm(h, act="relu")
        h = L.batch_norm(L.fc(h, 32), act="relu")
        h = L.dropout(h, dropout_prob=0.5)
        logits = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        acc = L.accuracy(logits, label)
        fluid.optimizer.Momentum(0.05, 0.9).minimize(loss)
    return main, startup, image, label, logits, loss, acc


def images(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.rand(n, 1, 28, 28).astype(np.float32)
    y = rng.randint(0, 10, size=(n, 1)).astype(np.int64)
    return x, y


def saved_model_predictions(d, x):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    program, feeds, fetches = fluid.io.load_inference_model(d, exe,
                                                            scope=scope)
    assert feeds == ["image"]
    (p,) = exe.run(program, feed={"image": x}, fetch_list=fetches,
                   scope=scope)
    return np.array(p)


def test_trained_here_predicts_as_the_cloned_test_program(tmp_path):
    main, startup, _, _, logits, loss, _ = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    exe.run(startup, scope=scope)
    for step in range(3):
        x, y = images(16, step)
        exe.run(main, feed={"image": x, "label": y}, fetch_list=[loss],
                scope=scope)
    x, y = images(40, 99)
    test_prog = main.clone(for_test=True)
    (want,) = exe.run(test_prog, feed={"image": x, "label": y},
                      fetch_list=[logits], scope=scope)
    # Test mode is deterministic: no dropout mask, running statistics.
    (again,) = exe.run(test_prog, feed={"image": x, "label": y},
                       fetch_list=[logits], scope=scope)
    assert np.array_equal(np.array(want), np.array(again))
    d = str(tmp_path / "model")
    fluid.io.save_inference_model(d, ["image"], [logits], exe, main,
                                  scope=scope)
    got = saved_model_predictions(d, x)
    assert np.array_equal(got, np.array(want))  # bitwise


def accuracy_lines(out):
    return re.findall(r"test accuracy [0-9.]+ \(\d+ samples\)", out)


@pytest.fixture(scope="module")
def mpi_trained(tmp_path_factory, trainer_bin):
    """A job trained by `mpirun -np 2 trainer`, its checkpoint loaded."""
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    d = tmp_path_factory.mktemp("bn_job")
    with fluid.unique_name.guard():
        main, startup, image, label, logits, loss, acc = build()
    job = str(d / "job.pb")
    fluid.io.save_job(job, main, startup, [image, label], loss, [acc])
    data = tiny_idx(str(d / "data"), 128, 50)
    ckpt = str(d / "ckpt")
    r = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
         trainer_bin, "--program", job, "--data", data, "--epochs", "2",
         "--batch-size", "16", "--checkpoint-dir", ckpt, "--seed", "1",
         "--log-every", "0"],
        env=mpi_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    trained = accuracy_lines(r.stdout)
    assert trained, r.stdout
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    exe.run(startup, scope=scope)
    fluid.io.load_persistables(exe, ckpt, main, scope=scope)
    model = str(d / "model")
    fluid.io.save_inference_model(model, ["image"], [logits], exe, main,
                                  scope=scope)
    x, y = fluid.datasets.fashion_mnist.test(data)
    return {"main": main, "scope": scope, "exe": exe, "logits": logits,
            "model": model, "data": data, "x": np.array(x),
            "y": np.array(y), "trained_line": trained[-1]}


def test_mpi_trained_model_predicts_as_the_cloned_test_program(mpi_trained):
    t = mpi_trained
    (want,) = t["exe"].run(t["main"].clone(for_test=True),
                           feed={"image": t["x"], "label": t["y"]},
                           fetch_list=[t["logits"]], scope=t["scope"])
    got = saved_model_predictions(t["model"], t["x"])
    assert np.array_equal(got, np.array(want))  # bitwise


def run_predict(cmd, t):
    r = subprocess.run(cmd + ["--predict", t["model"], "--data", t["data"]],
                       env=mpi_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return accuracy_lines(r.stdout), r.stdout


def test_trainer_predict_reports_the_trained_accuracy_once(mpi_trained,
                                                           trainer_bin):
    t = mpi_trained
    one, out1 = run_predict([trainer_bin], t)
    two, out2 = run_predict(["mpirun", "--allow-run-as-root",
                             "--oversubscribe", "-np", "2", trainer_bin], t)
    # The accuracy the training's own evaluation printed, once per job.
    assert one == [t["trained_line"]], out1
    assert two == one, out2
    assert os.path.isdir(t["model"])
