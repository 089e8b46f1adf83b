"""A fluid.layers.While loop on fluid.CUDAPlace: the loop (5 steps of
h = tanh(fc(h)) with a shared weight, each state written to a tensor
array, one slot read after the loop) trains one step to the loss and
gradients it gives on the CPU. Skipped without a CUDA device (the CUDA
emulation, tools/cuda_emu, runs it)."""
import numpy as np
import pytest

import fluid

L = fluid.layers

pytestmark = pytest.mark.skipif(
    fluid.cuda_device_count() == 0,
    reason="no CUDA device visible" if fluid.is_compiled_with_cuda()
    else "built without CUDA")

_SCOPES = []  # scopes outlive the executors that ran on them


def run(place):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float64", stop_gradient=False)
        h = L.assign(x)
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", 5)
        states = L.create_array("float64")
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            h2 = L.fc(h, 4, act="tanh", param_attr=fluid.ParamAttr(
                name="w", initializer=fluid.initializer.UniformInitializer(
                    -1.0, 1.0, seed=3)), bias_attr=False)
            L.array_write(h2, i, array=states)
            L.assign(h2, h)
            L.increment(i)
            L.less_than(i, n, cond=cond)
        r = L.array_read(states, L.fill_constant([1], "int64", 2))
        loss = L.sums([L.mean(h), L.mean(r)])
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    x = np.random.RandomState(2).uniform(-1, 1, (3, 4))
    return exe.run(main, feed={"x": x},
                   fetch_list=[loss, "w@GRAD", "x@GRAD", i], scope=scope)


def test_while_on_cuda_matches_cpu():
    cpu = run(fluid.CPUPlace())
    gpu = run(fluid.CUDAPlace(0))
    for c, g, what in zip(cpu, gpu, ["loss", "w@GRAD", "x@GRAD", "i"]):
        np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-12,
                                   err_msg=what)
    assert gpu[3].tolist() == [5]
