"""fluid.ParallelExecutor as Fluid 1.x scripts use it: under mpirun
(train_parallel_executor.py at np 1 and 2) training with the default
programs and a test executor sharing its variables, the loss falling,
every rank ending with bitwise the same parameters, bitwise
fluid.MPIExecutor's with the strategy the build strategy stands for; in
one process, the errors for what is refused."""
import numpy as np
import pytest

import fluid
from fluid1x_common import assert_trained_alike, load_results, mpirun


@pytest.mark.parametrize("nranks", [1, 2])
def test_training_under_mpirun(tmp_path, nranks):
    r = mpirun("train_parallel_executor.py", nranks, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test loss" in r.stdout
    runs = load_results(tmp_path, "parallel_executor", nranks)
    assert_trained_alike(runs)
    for run in runs:
        assert np.isfinite(run["extra/test_loss"]).all()
        assert run["extra/test_loss"].tobytes() == \
            runs[0]["extra/test_loss"].tobytes()


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 2
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            fluid.layers.fc(input=x, size=1), y))
        fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)
    return main, startup, loss


def feed(step):
    x = np.random.RandomState(step).rand(6, 3).astype(np.float32)
    return {"x": x, "y": (x @ np.array([[1.], [2.], [-1.]])).astype(
        np.float32)}


def test_one_process_trains_as_the_executor_does():
    main, startup, loss = build()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name,
                                main_program=main, scope=scope)
    assert pe.device_count == 1
    losses = [float(pe.run([loss.name], feed=feed(s))[0][0])
              for s in range(8)]
    assert losses[-1] < losses[0]
    # feed_dict, Fluid's older name, and a feed list of one dict
    pe.run(fetch_list=[loss], feed_dict=feed(8))
    pe.run([loss], feed=[feed(9)])
    pe.drop_local_exe_scopes()


def test_refused_arguments():
    main, startup, loss = build()
    with pytest.raises(TypeError, match="use_cuda.*True or False"):
        fluid.ParallelExecutor(use_cuda="yes", main_program=main)
    with pytest.raises(TypeError, match="share_vars_from.*ParallelExecutor"):
        fluid.ParallelExecutor(False, main_program=main,
                               share_vars_from=fluid.CompiledProgram(main))
    with pytest.raises(ValueError, match=r"num_trainers = 4.*mpirun -np 4"):
        fluid.ParallelExecutor(False, loss.name, main_program=main,
                               num_trainers=4)
    with pytest.raises(ValueError, match="trainer_id = 3.*rank 0"):
        fluid.ParallelExecutor(False, loss.name, main_program=main,
                               trainer_id=3)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    pe = fluid.ParallelExecutor(False, loss.name, main_program=main,
                                scope=scope)
    with pytest.raises(ValueError, match="feed or feed_dict"):
        pe.run([loss], feed=feed(0), feed_dict=feed(0))
    with pytest.raises(ValueError, match="feed list of 2 dicts.*one place"):
        pe.run([loss], feed=[feed(0), feed(1)])
    if fluid.cuda_device_count() == 0:
        with pytest.raises(NotImplementedError, match="no CUDA"):
            fluid.ParallelExecutor(True, loss.name, main_program=main)
