"""The ending every Fluid 1.x book test shares: DistributeTranspiler, then
get_trainer_program() run by fluid.MPIExecutor.

Under mpirun (mpi_transpile_endings.py at np 1 and 2), each form the
seed and the book use (0.11's transpile(optimize_ops, params_grads, ...);
1.x's transpile(trainer_id, ...) with the default config, that is
pserver mode, with the default startup program or the transpiler's;
"nccl2" and "collective" with the trainers as an endpoint list) trains:
the loss falls, the ranks end with bitwise the same parameters, and
those are bitwise the parameters of MPIExecutor training the plain
program (collective mode).

In one process: the reported script itself; MPIExecutor converting a
pserver-mode trainer program once; to_collective(program) alone; what a
plain Executor, a program without its servers and a process launched as a
parameter server are told."""
import numpy as np
import pytest

import fluid
from fluid1x_common import assert_trained_alike, load_results, mpirun

L = fluid.layers
FORMS = ("seed_0.11", "1x_pserver", "1x_pserver_own_startup", "nccl2",
         "collective", "seed_0.11+Executor", "1x_pserver+Executor")
_SCOPES = []  # scopes outlive the executors bound to them


@pytest.fixture(scope="module", params=[1, 2], ids=lambda n: f"np{n}")
def endings(request, tmp_path_factory):
    """(world, results dir) of one mpirun of every form."""
    out = tmp_path_factory.mktemp(f"endings_np{request.param}")
    r = mpirun("mpi_transpile_endings.py", request.param, out)
    assert r.returncode == 0, r.stdout + r.stderr
    return request.param, out


@pytest.mark.parametrize("form", FORMS)
def test_ending_trains_like_collective_mode(endings, form):
    world, out = endings
    assert_trained_alike(load_results(out, form, world))


# ---- in one process ----

def build():
    """The reported model, into the default programs: two fc layers on
    random data, Momentum."""
    fluid.default_main_program().random_seed = 4
    x = L.data("x", [8])
    y = L.data("y", [1])
    hidden = L.fc(x, 16, act="relu")
    loss = L.mean(L.square_error_cost(L.fc(hidden, 1), y))
    fluid.optimizer.Momentum(0.05, 0.9).minimize(loss)
    return loss


def batches(steps=10):
    rng = np.random.RandomState(0)
    w = rng.randn(8, 1).astype(np.float32)
    for _ in range(steps):
        x = rng.rand(4, 8).astype(np.float32)
        yield {"x": x, "y": x @ w}


def train(program, startup, loss):
    """MPIExecutor on a fresh scope: startup, then `program` on batches();
    returns (losses, {parameter: value}, executor)."""
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = [float(exe.run(program, feed=feed, fetch_list=[loss],
                            scope=scope)[0][0]) for feed in batches()]
    params = {p.name: scope.get(p.name)
              for p in fluid.default_main_program().all_parameters()}
    return losses, params, exe


def reference():
    fluid.reset_default_programs()
    with fluid.unique_name.guard():
        loss = build()
    return train(fluid.default_main_program(),
                 fluid.default_startup_program(), loss)


def pserver_ending(own_startup=False):
    """The reported lines: (trainer program, startup, loss, transpiler)."""
    fluid.reset_default_programs()
    with fluid.unique_name.guard():
        loss = build()
    t = fluid.DistributeTranspiler()
    t.transpile(0, pservers="127.0.0.1:6174", trainers=2)
    startup = t.get_startup_program() if own_startup \
        else fluid.default_startup_program()
    return t.get_trainer_program(), startup, loss, t


@pytest.mark.parametrize("own_startup", [False, True],
                         ids=["default_startup", "transpiler_startup"])
def test_the_reported_ending_trains_in_one_process(own_startup):
    ref_losses, ref_params, _ = reference()
    prog, startup, loss, _ = pserver_ending(own_startup)
    assert "send" in prog.op_types()
    losses, params, exe = train(prog, startup, loss)
    assert losses[-1] < 0.5 * losses[0], losses
    assert losses == ref_losses
    for name, value in ref_params.items():
        assert params[name].tobytes() == value.tobytes(), name
    # converted once, to the collective program, and cached
    converted = exe.transpiled_program(prog).op_types()
    assert "send" not in converted and "recv" not in converted
    assert "momentum" in converted
    assert len(exe._runs) == 1 and len(exe._converted) == 1


def test_to_collective_needs_only_the_program():
    prog, _, _, t = pserver_ending()
    main, startup = fluid.transpiler.to_collective(prog)
    want, want_startup = fluid.transpiler.to_collective(
        prog, t, t.get_startup_program(), 1)
    assert str(main) == str(want) and str(startup) == str(want_startup)
    with pytest.raises(ValueError, match="carries no server programs.*"
                       r"t.get_pserver_programs\(\)"):
        fluid.transpiler.to_collective(prog.clone())
    with pytest.raises(ValueError, match=r"nranks=0"):
        fluid.transpiler.to_collective(prog, nranks=0)


@pytest.mark.parametrize("own_startup", [False, True],
                         ids=["default_startup", "transpiler_startup"])
def test_the_original_ending_with_a_plain_executor_trains(own_startup):
    # The 1.x script unchanged: fluid.Executor runs the trainer program (an
    # internal MPIExecutor converts it), equal to collective mode.
    ref_losses, ref_params, _ = reference()
    prog, startup, loss, _ = pserver_ending(own_startup)
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = [float(exe.run(prog, feed=feed, fetch_list=[loss],
                            scope=scope)[0][0]) for feed in batches()]
    assert losses[-1] < 0.5 * losses[0], losses
    assert losses == ref_losses
    for name, value in ref_params.items():
        assert scope.get(name).tobytes() == value.tobytes(), name
    exe.close()  # with the MPIExecutor it ran the program on
    assert not exe._rank_runners
    with pytest.raises(RuntimeError, match="closed"):
        exe.run(prog, feed=next(batches()), scope=scope)


def test_a_plain_executor_is_told_what_to_do():
    # A copy that lost its server programs (parsed, loaded, cloned) cannot
    # be converted: the send op says what to do.
    prog, startup, loss, _ = pserver_ending()
    loaded = fluid.Program.parse(prog.serialize())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    with pytest.raises(NotImplementedError) as e:
        exe.run(loaded, feed=next(batches()), fetch_list=[loss], scope=scope)
    text = str(e.value)
    assert "in op 'send'" in text
    assert "fluid.transpiler.to_collective(program)" in text
    assert "fluid.MPIExecutor" in text
    assert "trainer --program" in text
    assert "PserverToCollective" not in text


def test_mpi_executor_is_told_about_a_program_without_its_servers():
    prog, startup, loss, _ = pserver_ending()
    loaded = fluid.Program.parse(prog.serialize())  # the servers stay behind
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    with pytest.raises(NotImplementedError,
                       match=r"fluid.transpiler.to_collective\(program\)"):
        exe.run(loaded, feed=next(batches()), fetch_list=[loss], scope=scope)


@pytest.mark.parametrize("var", ["PADDLE_TRAINING_ROLE", "TRAINING_ROLE"])
def test_a_pserver_role_is_told_to_launch_trainers(monkeypatch, var):
    # The book's pserver branch: get_pserver_program, its startup, run it.
    _, _, _, t = pserver_ending()
    ep = "127.0.0.1:6174"
    server, server_startup = t.get_pserver_program(ep), \
        t.get_startup_program(ep, None)
    monkeypatch.setenv(var, "PSERVER")
    with pytest.raises(RuntimeError, match=f"{var}=PSERVER.*launch every "
                       "process as a trainer"):
        t.get_pserver_program(ep)
    with pytest.raises(RuntimeError, match="launch every process as a "
                       "trainer"):
        t.get_startup_program(ep, server)
    monkeypatch.setenv(var, "TRAINER")
    assert t.get_pserver_program(ep) is server
    # a server program run anyway says the same
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    exe.run(server_startup, scope=scope)
    with pytest.raises(NotImplementedError, match=f"server program of {ep}"
                       ".*launch every process as a trainer"):
        exe.run(server, scope=scope)
