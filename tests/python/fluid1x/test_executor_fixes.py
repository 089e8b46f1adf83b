"""The executors behind the Fluid 1.x surface (CompiledProgram,
ParallelExecutor, fleet, DistributeTranspiler's endings), each behaviour
with the test that holds it:

- an executor and its scope freed together, in any order, never crash the
  process (mpi_executor_fixes.py free, at np 1 and 2);
- an MPIExecutor changes only the stall settings it is given, so the ones
  inside a CompiledProgram or a ParallelExecutor keep the script's (and,
  under mpirun, the job then ends by the script's stall timeout);
- return_numpy=False gives LoDTensors on the data-parallel paths;
- fc copies a list of one param attr to every input, as Fluid does;
- a plain Executor running a parameter server's program says that no
  server runs here (not that a feed is missing);
- fluid.io's and fleet's saves after a sharded run write the whole
  optimizer state, collectively, and the checkpoint resumes in a plain
  Executor and in a sharded or unsharded MPIExecutor, at np 1 and 2
  (mpi_executor_fixes.py checkpoint and resume)."""
import math
import re
import sys

import numpy as np
import pytest

import fluid
import fluid.executor  # noqa: F401 - the module, for its stall settings
from fluid1x_common import mpirun

SCRIPT = "mpi_executor_fixes.py"
executor_module = sys.modules["fluid.executor"]


def run_script(nranks, *args):
    """Runs the script's mode under mpirun; returns its output, checking
    that every rank said ok."""
    r = mpirun(SCRIPT, nranks, *args)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for rank in range(nranks):
        assert f"rank {rank}: ok: {args[0]}" in r.stdout, out
    return out


# ---- an executor and its scope, freed in any order ----

@pytest.mark.parametrize("nranks", [1, 2])
def test_executors_and_scopes_freed_in_any_order(nranks):
    run_script(nranks, "free")


# ---- the stall settings ----

@pytest.fixture
def stall_calls(monkeypatch):
    """The stall settings MPIExecutors apply, recorded instead of applied
    (and the process's first MPIExecutor still to come)."""
    calls = []
    monkeypatch.setattr(executor_module._core, "configure_stall_watchdog",
                        lambda *args: calls.append(args))
    monkeypatch.setattr(executor_module, "_stall_settings", None)
    return calls


def test_mpi_executors_change_only_the_stall_settings_given(stall_calls,
                                                            tmp_path):
    fluid.MPIExecutor()
    assert stall_calls == [(60.0, 300.0, "")]
    fluid.MPIExecutor(stall_warn=5, flight_dir=tmp_path)
    assert stall_calls[-1] == (5.0, 300.0, str(tmp_path))
    # As a CompiledProgram, a ParallelExecutor or fleet makes its own.
    fluid.MPIExecutor()
    fluid.MPIExecutor(fluid.CPUPlace(), 1, strategy=None)
    assert len(stall_calls) == 2
    fluid.MPIExecutor(stall_timeout=9)
    assert stall_calls[-1] == (5.0, 9.0, "")


@pytest.mark.parametrize("kwargs, named", [
    (dict(stall_warn=-1), "stall_warn=-1"),
    (dict(stall_timeout=math.nan), "stall_timeout=nan"),
    (dict(stall_warn="60"), "stall_warn='60'"),
    (dict(stall_timeout=True), "stall_timeout=True"),
    (dict(flight_dir=""), "flight_dir=''"),
])
def test_bad_stall_settings_are_refused_and_change_nothing(stall_calls,
                                                          kwargs, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        fluid.MPIExecutor(**kwargs)
    assert stall_calls == []


def test_the_scripts_stall_timeout_ends_the_job_after_internal_executors(
        tmp_path):
    r = mpirun(SCRIPT, 2, "stall", tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "rank 1: internal executors made" in out, out
    assert "went on past the stall timeout" not in out, out
    assert "stall: rank 1 holds up collective" in out, out
    assert "(--stall-timeout 2)" in out, out
    assert (tmp_path / "flight-rank-0.txt").exists(), out


# ---- return_numpy ----

@pytest.mark.parametrize("nranks", [1, 2])
def test_return_numpy_false_on_the_data_parallel_paths(nranks):
    run_script(nranks, "return_numpy")


# ---- fc's param_attr ----

def fc_of_two(param_attr):
    """The startup values of an fc over inputs of width 3 and 5."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        a = fluid.layers.data(name="a", shape=[3], dtype="float32")
        b = fluid.layers.data(name="b", shape=[5], dtype="float32")
        fluid.layers.fc(input=[a, b], size=2, param_attr=param_attr)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    return {p.name: scope.get(p.name) for p in main.all_parameters()}


def test_fc_copies_a_list_of_one_param_attr_to_every_input():
    half = fluid.initializer.Constant(0.5)
    got = fc_of_two([fluid.ParamAttr(initializer=half)])
    assert got["fc_0.w_0"].shape == (3, 2) and got["fc_0.w_1"].shape == (5, 2)
    assert (got["fc_0.w_0"] == 0.5).all() and (got["fc_0.w_1"] == 0.5).all()
    single = fc_of_two(fluid.ParamAttr(initializer=half))
    assert sorted(single) == sorted(got)
    for name in got:
        assert np.array_equal(single[name], got[name]), name
    # Each form of one attr, in a list of one.
    assert (fc_of_two([half])["fc_0.w_1"] == 0.5).all()
    assert (fc_of_two([{"initializer": half.to_dict()}])["fc_0.w_1"] ==
            0.5).all()


@pytest.mark.parametrize("count", [0, 3])
def test_fc_refuses_a_param_attr_list_of_another_length(count):
    with pytest.raises(ValueError, match=f"a list of {count} param attrs "
                       "for 2 inputs; give one attr"):
        fc_of_two([fluid.ParamAttr()] * count)


# ---- a parameter server's program ----

def pserver_programs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            fluid.layers.fc(input=x, size=1), y))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    t = fluid.DistributeTranspiler()
    t.transpile(trainer_id=0, program=main, pservers="127.0.0.1:6174",
                trainers=2, startup_program=startup)
    server = t.get_pserver_program("127.0.0.1:6174")
    return main, server, t.get_startup_program("127.0.0.1:6174", server)


def test_a_plain_executor_says_no_parameter_server_runs_here():
    main, server, server_startup = pserver_programs()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(server_startup, scope=scope)  # a 1.x server script's first run
    for program in (server, server.clone()):
        with pytest.raises(NotImplementedError,
                           match="listen_and_serv.*parameter server's "
                           "program.*launch every process as a trainer"):
            exe.run(program, scope=scope)
    # An ordinary program's missing feed is still named.
    with pytest.raises(ValueError, match="missing feed 'x'"):
        exe.run(main, scope=scope, feed={"y": np.zeros([2, 1], "float32")})


# ---- checkpoints of sharded optimizer state ----

@pytest.mark.parametrize("nranks, other", [(2, 1), (1, 2)])
def test_sharded_state_saves_whole_and_resumes_anywhere(tmp_path, nranks,
                                                        other):
    run_script(nranks, "checkpoint", tmp_path)
    run_script(other, "resume", tmp_path / "sharded")
