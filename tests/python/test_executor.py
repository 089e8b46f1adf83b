"""Executor: feeds and fetches, errors, training, saving and loading,
`trainer --program` on a job written from Python, and the
DistributeTranspiler's two modes."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import fluid

L = fluid.layers

# Scopes a test ran programs on are kept alive until the end of the session:
# freeing a Scope while an Executor that ran a program on it still exists
# crashes (see test_scope_freed_before_executor_does_not_crash), and the
# order in which a test's locals are freed is not ours to choose.
_SCOPES = []


def new_scope():
    scope = fluid.Scope()
    _SCOPES.append(scope)
    return scope


def run_startup(startup):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    exe.run(startup, scope=scope)
    return exe, scope


# ---- feeds and fetches ----

def test_feed_fetch_round_trip_dtypes_and_shapes():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        f32 = L.data("f32", [5])
        f64 = L.data("f64", [2, 3], dtype="float64")
        i64 = L.data("i64", [1], dtype="int64")
        r32 = L.relu(f32)
        s64 = L.elementwise_add(f64, f64)
        m32 = L.mean(f32)
    exe, scope = run_startup(startup)
    rng = np.random.RandomState(0)
    a = rng.randn(7, 5).astype(np.float32)
    b = rng.randn(4, 2, 3)  # float64
    c = (np.arange(6, dtype=np.int64) * 10**12).reshape(6, 1)  # > 2**32
    out = exe.run(main, feed={"f32": a, "f64": b, "i64": c},
                  fetch_list=[f32, f64, i64, r32, s64, m32], scope=scope)
    assert isinstance(out, list) and len(out) == 6
    assert all(isinstance(o, np.ndarray) for o in out)
    assert [o.dtype for o in out] == [np.float32, np.float64, np.int64,
                                      np.float32, np.float64, np.float32]
    assert [o.shape for o in out] == [(7, 5), (4, 2, 3), (6, 1), (7, 5),
                                      (4, 2, 3), (1,)]
    np.testing.assert_array_equal(out[0], a)
    np.testing.assert_array_equal(out[1], b)
    np.testing.assert_array_equal(out[2], c)
    np.testing.assert_array_equal(out[3], np.maximum(a, 0))
    np.testing.assert_array_equal(out[4], b + b)
    np.testing.assert_allclose(out[5], [a.mean()], rtol=1e-6)


def test_fetch_by_name_and_variable_feed_keys():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3])
        y = L.tanh(x)
    exe, scope = run_startup(startup)
    xv = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    (by_name,) = exe.run(main, feed={x: xv}, fetch_list=[y.name],
                         scope=scope)
    np.testing.assert_allclose(by_name, np.tanh(xv), rtol=1e-6)
    # fetched arrays are the caller's: a later run does not change them
    keep = by_name.copy()
    exe.run(main, feed={"x": xv * 2}, fetch_list=[y], scope=scope)
    np.testing.assert_array_equal(by_name, keep)
    # no fetch list: an empty result
    assert exe.run(main, feed={"x": xv}, scope=scope) == []


@pytest.fixture
def small_net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        label = L.data("label", [1], dtype="int64")
        logits = L.fc(x, 3)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
    exe, scope = run_startup(startup)
    feed = {"x": np.ones((2, 4), np.float32),
            "label": np.zeros((2, 1), np.int64)}
    return exe, scope, main, loss, feed


def test_wrong_feed_shape_raises_value_error_naming_var(small_net):
    exe, scope, main, loss, feed = small_net
    feed["x"] = np.ones((2, 5), np.float32)
    with pytest.raises(ValueError, match="'x'"):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def test_missing_feed_raises_value_error_naming_var(small_net):
    exe, scope, main, loss, feed = small_net
    del feed["label"]
    with pytest.raises(ValueError, match="label"):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def test_unknown_fetch_raises_key_error_naming_it(small_net):
    exe, scope, main, loss, feed = small_net
    with pytest.raises(KeyError, match="no_such_var"):
        exe.run(main, feed=feed, fetch_list=["no_such_var"], scope=scope)


@pytest.mark.parametrize("name,value", [
    ("x", np.ones((2, 4), np.float64)),
    ("x", np.ones((2, 4), np.int64)),
    ("label", np.zeros((2, 1), np.float32)),
    ("label", np.zeros((2, 1), np.int32)),
])
def test_wrong_feed_dtype_raises_value_error(small_net, name, value):
    exe, scope, main, loss, feed = small_net
    feed[name] = value
    with pytest.raises(ValueError, match=f"'{name}'"):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def test_unsupported_numpy_dtype_raises_value_error(small_net):
    exe, scope, main, loss, feed = small_net
    feed["x"] = np.ones((2, 4), np.float16)
    with pytest.raises(ValueError, match="x"):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


SCOPE_FREED_FIRST = """
import numpy as np, fluid
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    y = fluid.layers.relu(fluid.layers.data("x", [4]))
exe, scope = fluid.Executor(), fluid.Scope()
exe.run(startup, scope=scope)
exe.run(main, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[y],
        scope=scope)
del scope
del exe
print("ok")
"""


def test_scope_freed_before_executor_does_not_crash():
    r = subprocess.run([sys.executable, "-c", SCOPE_FREED_FIRST],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ok" in r.stdout, (r.returncode, r.stderr)


def test_cuda_place_without_a_device_is_refused():
    if fluid.cuda_device_count() > 0:
        pytest.skip("a CUDA device is visible (tests/python/test_cuda.py)")
    with pytest.raises(NotImplementedError, match="no CUDA"):
        fluid.Executor(fluid.CUDAPlace(0))
    with pytest.raises(NotImplementedError, match="no CUDA"):
        fluid.MPIExecutor(fluid.CUDAPlace())
    with pytest.raises(TypeError, match="CPUPlace or CUDAPlace"):
        fluid.Executor("gpu")


# ---- training ----

def synthetic(n=64, seed=0):
    """Three linearly separable classes in 8 dims."""
    rng = np.random.RandomState(seed)
    centers = rng.randn(3, 8).astype(np.float32) * 3
    y = rng.randint(0, 3, size=n)
    x = centers[y] + rng.randn(n, 8).astype(np.float32) * 0.5
    return x.astype(np.float32), y.reshape(n, 1).astype(np.int64)


def build_classifier(optimizer, seed=1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    # Names from fc_0 for every program built here (the tests read them).
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [8])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(x, 16, act="relu")
        logits = L.fc(h, 3)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        acc = L.accuracy(logits, label)
        optimize_ops, params_grads = optimizer.minimize(loss)
    return main, startup, loss, acc, optimize_ops, params_grads


def test_sgd_steps_decrease_loss():
    main, startup, loss, acc, optimize_ops, params_grads = build_classifier(
        fluid.optimizer.SGD(0.1))
    assert [op["type"] for op in optimize_ops] == ["sgd"] * 4
    assert [p.name for p, _ in params_grads] == [
        "fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]
    assert all(g.name == p.name + "@GRAD" for p, g in params_grads)
    exe, scope = run_startup(startup)
    w0 = scope.get("fc_0.w_0").copy()
    x, y = synthetic()
    losses = []
    for _ in range(20):
        l, a = exe.run(main, feed={"x": x, "label": y},
                       fetch_list=[loss, acc], scope=scope)
        assert l.shape == (1,) and np.isfinite(l[0])
        losses.append(float(l[0]))
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(b <= a + 1e-6 for a, b in zip(losses, losses[1:])), losses
    assert float(a[0]) > 0.9
    assert not np.array_equal(scope.get("fc_0.w_0"), w0)


def test_same_seed_same_init_different_seed_differs():
    def init(seed):
        main, startup, *_ = build_classifier(fluid.optimizer.SGD(0.1), seed)
        _, scope = run_startup(startup)
        return scope.get("fc_0.w_0")
    np.testing.assert_array_equal(init(3), init(3))
    assert not np.array_equal(init(3), init(4))


def test_save_persistables_load_persistables_round_trip(tmp_path):
    main, startup, loss, _, _, _ = build_classifier(
        fluid.optimizer.Momentum(0.05, 0.9))
    exe, scope = run_startup(startup)
    x, y = synthetic()
    for _ in range(3):
        exe.run(main, feed={"x": x, "label": y}, fetch_list=[loss],
                scope=scope)
    names = sorted(v["name"] for v in main.desc.vars() if v["persistable"])
    assert any(n.endswith("_velocity_0") for n in names)
    saved = {n: scope.get(n).copy() for n in names}
    d = str(tmp_path / "ckpt")
    fluid.io.save_persistables(exe, d, main, scope=scope, step=3, epoch=1)

    # Into a fresh scope of a freshly built program (other init seed).
    main2, startup2, loss2, _, _, _ = build_classifier(
        fluid.optimizer.Momentum(0.05, 0.9), seed=7)
    exe2, scope2 = run_startup(startup2)
    assert not np.array_equal(scope2.get("fc_0.w_0"), saved["fc_0.w_0"])
    assert fluid.io.load_persistables(exe2, d, main2, scope=scope2) == (3, 1)
    for n in names:
        np.testing.assert_array_equal(scope2.get(n), saved[n], err_msg=n)
    # and training continues identically in both
    (l1,) = exe.run(main, feed={"x": x, "label": y}, fetch_list=[loss],
                    scope=scope)
    (l2,) = exe2.run(main2, feed={"x": x, "label": y}, fetch_list=[loss2],
                     scope=scope2)
    np.testing.assert_array_equal(l1, l2)


def test_load_params_mismatch_raises(tmp_path):
    main, startup, *_ = build_classifier(fluid.optimizer.SGD(0.1))
    exe, scope = run_startup(startup)
    d = str(tmp_path / "ckpt")
    fluid.io.save_params(exe, d, main, scope=scope)
    other, ostartup = fluid.Program(), fluid.Program()
    with fluid.program_guard(other, ostartup):
        x = L.data("x", [8])
        L.fc(x, 17)
    exe2, scope2 = run_startup(ostartup)
    with pytest.raises(ValueError, match="fc_0"):
        fluid.io.load_params(exe2, d, other, scope=scope2)


# ---- save_job, then the trainer ----

def write_idx(dirname, prefix, images, labels):
    """Plain (uncompressed) IDX files as the MNIST family ships them."""
    n = len(images)
    with open(os.path.join(dirname, f"{prefix}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x00000803, n, 28, 28))
        f.write(np.ascontiguousarray(images, dtype=np.uint8).tobytes())
    with open(os.path.join(dirname, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x00000801, n))
        f.write(np.ascontiguousarray(labels, dtype=np.uint8).tobytes())


def tiny_idx(dirname, n_train=64, n_test=32, seed=0):
    """Images whose mean brightness encodes the label: learnable."""
    rng = np.random.RandomState(seed)
    os.makedirs(dirname, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.randint(0, 10, size=n).astype(np.uint8)
        images = rng.randint(0, 40, size=(n, 28, 28)).astype(np.int32)
        images[:, 10:18, :] += labels[:, None, None] * 20
        write_idx(dirname, prefix, images.clip(0, 255), labels)
    return dirname


def build_mlp(seed=1, lr=0.1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(image, 32, act="relu")
        logits = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        acc = L.accuracy(logits, label)
        fluid.optimizer.SGD(lr).minimize(loss)
    return main, startup, image, label, loss, acc


def test_tiny_idx_loads_like_fashion_mnist(tmp_path):
    d = tiny_idx(str(tmp_path / "data"), 5, 3)
    x, y = fluid.datasets.fashion_mnist.train(d)
    assert x.shape == (5, 1, 28, 28) and x.dtype == np.float32
    assert y.shape == (5, 1) and y.dtype == np.int64
    assert 0.0 <= x.min() and x.max() <= 1.0


def test_save_job_runs_under_trainer(tmp_path, trainer_bin):
    main, startup, image, label, loss, acc = build_mlp()
    job = str(tmp_path / "job.pb")
    fluid.io.save_job(job, main, startup, [image, label], loss, [acc])
    back = fluid.io.load_job(job)
    assert back["main"].op_types() == main.op_types()
    assert back["startup"].op_types() == startup.op_types()
    assert back["feeds"] == ["image", "label"]
    assert back["loss"] == loss.name and back["metrics"] == [acc.name]
    assert back["data_set"] == "images"  # what the trainer reads for it

    data = tiny_idx(str(tmp_path / "data"))
    ckpt = str(tmp_path / "ckpt")
    r = subprocess.run([trainer_bin, "--program", job, "--data", data,
                        "--epochs", "2", "--batch-size", "16",
                        "--checkpoint-dir", ckpt, "--log-every", "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "epoch 2/2" in r.stdout, r.stdout
    assert "test" in r.stdout.lower(), r.stdout
    # The trainer's checkpoint loads back into the Python program.
    exe, scope = run_startup(startup)
    w0 = scope.get("fc_0.w_0").copy()
    step, epoch = fluid.io.load_params(exe, ckpt, main, scope=scope)
    assert (step, epoch) == (8, 2)
    w = scope.get("fc_0.w_0")
    assert np.isfinite(w).all() and not np.array_equal(w, w0)


def test_save_job_needs_loss(tmp_path):
    main, startup, image, label, loss, acc = build_mlp()
    with pytest.raises(ValueError, match="loss"):
        fluid.io.save_job(str(tmp_path / "j.pb"), main, startup,
                          [image, label])


def test_save_job_declares_its_data_set(tmp_path):
    main, startup, image, label, loss, acc = build_mlp()
    job = str(tmp_path / "j.pb")
    fluid.io.save_job(job, main, startup, [image, label], loss,
                      data_set="topics")
    assert fluid.io.load_job(job)["data_set"] == "topics"
    with pytest.raises(ValueError, match="data_set='audio'.*character_lm"):
        fluid.io.save_job(job, main, startup, [image, label], loss,
                          data_set="audio")


# ---- DistributeTranspiler ----

def types(program):
    return program.op_types()


def test_transpiler_collective_mode():
    main, startup, loss, _, optimize_ops, params_grads = build_classifier(
        fluid.optimizer.Momentum(0.1, 0.9))
    t = fluid.DistributeTranspiler()
    t.transpile(optimize_ops, params_grads, trainers=2, program=main,
                startup_program=startup)
    trainer = t.get_trainer_program()
    assert "c_allreduce" in types(trainer)
    assert "c_wait" in types(trainer)
    assert "send" not in types(trainer) and "recv" not in types(trainer)
    assert trainer.desc.nranks == 2
    # every allreduce comes after the backward ops and before the optimizer
    ts = types(trainer)
    assert ts.index("c_allreduce") < ts.index("momentum")
    assert "c_broadcast" in types(t.get_startup_program())
    # the original program is untouched
    assert "c_allreduce" not in types(main)
    with pytest.raises(ValueError, match="no parameter server"):
        t.get_pserver_program("127.0.0.1:6174")


def test_transpiler_needs_transpile_first():
    with pytest.raises(ValueError, match="transpile"):
        fluid.DistributeTranspiler().get_trainer_program()


def test_transpiler_unknown_mode():
    main, startup, _, _, ops, pg = build_classifier(fluid.optimizer.SGD(0.1))
    with pytest.raises(ValueError, match="mode"):
        fluid.DistributeTranspiler().transpile(
            ops, pg, trainers=2, program=main, startup_program=startup,
            mode="ring")


def test_transpiler_pserver_mode_and_to_collective():
    main, startup, loss, _, optimize_ops, params_grads = build_classifier(
        fluid.optimizer.Momentum(0.1, 0.9))
    eps = ["127.0.0.1:6174", "127.0.0.1:6175"]
    ps = fluid.DistributeTranspiler()
    ps.transpile(optimize_ops, params_grads, pservers=",".join(eps),
                 trainers=2, program=main, startup_program=startup,
                 mode="pserver")
    trainer = ps.get_trainer_program()
    assert "send" in types(trainer) and "recv" in types(trainer)
    assert "c_allreduce" not in types(trainer)
    assert "momentum" not in types(trainer)  # the servers optimize
    for ep in eps:
        server = ps.get_pserver_program(ep)
        assert "listen_and_serv" in types(server)
        assert ps.get_startup_program(ep) is not None
    assert [ep for ep, _, _ in ps.get_pserver_programs()] == eps
    with pytest.raises(KeyError, match="6199"):
        ps.get_pserver_program("127.0.0.1:6199")

    coll = fluid.DistributeTranspiler()
    coll.transpile(optimize_ops, params_grads, trainers=2, program=main,
                   startup_program=startup)
    m, s = fluid.transpiler.to_collective(trainer, ps,
                                          ps.get_startup_program(), 2)
    assert types(m) == types(coll.get_trainer_program())
    assert types(s) == types(coll.get_startup_program())
    # the list form of the server programs gives the same
    m2, _ = fluid.transpiler.to_collective(
        trainer, ps.get_pserver_programs(), ps.get_startup_program(), 2)
    assert types(m2) == types(m)


def test_pserver_program_runs_converted_and_never_untranspiled():
    main, startup, loss, _, ops, pg = build_classifier(
        fluid.optimizer.SGD(0.1))
    ps = fluid.DistributeTranspiler()
    ps.transpile(ops, pg, pservers="127.0.0.1:6174", trainers=1,
                 program=main, startup_program=startup, mode="pserver")
    exe, scope = run_startup(ps.get_startup_program())
    x, y = synthetic(4)
    # With its server programs, a plain Executor trains it as the ranks
    # that run (one here), converted: the send/recv ops never run.
    trainer = ps.get_trainer_program()
    losses = [float(exe.run(trainer, feed={"x": x, "label": y},
                            fetch_list=[loss.name], scope=scope)[0][0])
              for _ in range(5)]
    assert losses[-1] < losses[0], losses
    # A copy without them cannot be converted, and does not run.
    loaded = fluid.Program.parse(trainer.serialize())
    with pytest.raises(Exception, match="(?i)collective|send|pserver"):
        exe.run(loaded, feed={"x": x, "label": y}, fetch_list=[loss.name],
                scope=scope)
