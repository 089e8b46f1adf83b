"""fluid.CUDAPlace with Executor and MPIExecutor: the same programs give the
same results as on the CPU; parameters stay on the device and reach NumPy
through the host. Skipped, saying so, when no CUDA device is visible."""
import numpy as np
import pytest

import fluid

L = fluid.layers

pytestmark = pytest.mark.skipif(
    fluid.cuda_device_count() == 0,
    reason="no CUDA device visible" if fluid.is_compiled_with_cuda()
    else "built without CUDA")

_SCOPES = []  # scopes outlive the executors that ran on them


def classifier(seed=1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [8])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(x, 16, act="relu")
        logits = L.fc(h, 3)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Momentum(0.05, 0.9).minimize(loss)
    return main, startup, loss


def data(n=64, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.randn(3, 8).astype(np.float32) * 3
    y = rng.randint(0, 3, size=n)
    x = centers[y] + rng.randn(n, 8).astype(np.float32) * 0.5
    return x.astype(np.float32), y.reshape(n, 1).astype(np.int64)


def train(exe, steps=15):
    main, startup, loss = classifier()
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    x, y = data()
    losses = [float(exe.run(main, feed={"x": x, "label": y},
                            fetch_list=[loss], scope=scope)[0][0])
              for _ in range(steps)]
    return losses, scope


def test_executor_on_cuda_matches_cpu():
    cpu, cpu_scope = train(fluid.Executor(fluid.CPUPlace()))
    gpu, gpu_scope = train(fluid.Executor(fluid.CUDAPlace(0)))
    np.testing.assert_allclose(gpu, cpu, rtol=1e-4)
    np.testing.assert_allclose(gpu_scope.get("fc_0.w_0"),
                               cpu_scope.get("fc_0.w_0"), rtol=1e-4,
                               atol=1e-6)


def loss_after_set(place):
    """One step after setting the first layer's weights from NumPy."""
    main, startup, loss = classifier()
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    w = np.linspace(-1, 1, scope.get("fc_0.w_0").size, dtype=np.float32)
    scope.set("fc_0.w_0", w.reshape(scope.get("fc_0.w_0").shape))
    np.testing.assert_array_equal(scope.get("fc_0.w_0").ravel(), w)
    x, y = data()
    return float(exe.run(main, feed={"x": x, "label": y}, fetch_list=[loss],
                         scope=scope)[0][0])


def test_scope_set_reaches_the_device_kernels():
    np.testing.assert_allclose(loss_after_set(fluid.CUDAPlace(0)),
                               loss_after_set(fluid.CPUPlace()), rtol=1e-5)


def test_mpi_executor_on_the_local_rank_gpu_matches_cpu():
    cpu, _ = train(fluid.MPIExecutor(fluid.CPUPlace()))
    gpu, _ = train(fluid.MPIExecutor(fluid.CUDAPlace()))
    np.testing.assert_allclose(gpu, cpu, rtol=1e-4)


def test_a_device_past_the_visible_count_is_refused():
    with pytest.raises(ValueError, match="visible"):
        fluid.Executor(fluid.CUDAPlace(fluid.cuda_device_count()))


def recurrent_losses(place, steps=8):
    """A sequence classifier through dynamic_lstm (reverse) and dynamic_gru
    on ragged batches: the per-step losses."""
    rng = np.random.RandomState(2)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 4
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3], lod_level=1)
        label = L.data("label", [1], dtype="int64")
        hidden, _ = L.dynamic_lstm(L.fc(x, 16), 16, is_reverse=True)
        h = L.dynamic_gru(L.fc(hidden, 12), 4)
        logits = L.fc(L.sequence_last_step(h), 2)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Adam(0.05).minimize(loss)
    feeder = fluid.DataFeeder([x, label], place, program=main)
    exe, scope = fluid.Executor(place), fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(steps):
        batch = [(rng.uniform(-1, 1, (n, 3)).astype(np.float32),
                  [int(rng.randint(2))]) for n in rng.randint(1, 6, 8)]
        losses.append(float(exe.run(main, feed=feeder.feed(batch),
                                    fetch_list=[loss], scope=scope)[0][0]))
    return losses


def test_recurrent_layers_on_cuda_match_cpu():
    np.testing.assert_allclose(recurrent_losses(fluid.CUDAPlace(0)),
                               recurrent_losses(fluid.CPUPlace()), rtol=1e-4)
