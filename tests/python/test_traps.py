"""The traps a Fluid-era user falls into, each turned into an error or a
clean end of the job (never a silent wrong result, never a hang):

- evaluating with the training MPIExecutor keeps the trained parameters
  (startup runs once, explicitly) and issues no collective;
- a plain Executor training under mpirun warns once, on rank 0; its
  collective-op error names MPIExecutor;
- any rank failing (exception, sys.exit, SIGKILL; at startup or mid-way;
  np 2 and 4), leaving early, or running fewer steps ends the job non-zero
  within 30 s with a line naming the rank;
- a NaN/Inf loss or gradient raises FloatingPointError (on every rank at
  the same step, with the same message);
- layer arguments of the wrong kind get errors naming the layer and the
  argument; two programs colliding in one scope are named as such;
- concurrent run() calls on one executor are serialised.
"""
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import fluid
import traps_job
from traps_job import build

L = fluid.layers
HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "traps_job.py")
_SCOPES = []  # scopes outlive the executors bound to them


def new_scope():
    s = fluid.Scope()
    _SCOPES.append(s)
    return s


def mpirun(np_, args, env=None, timeout=90):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    e = dict(os.environ)
    e.update({"OMPI_ALLOW_RUN_AS_ROOT": "1",
              "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    e.update(env or {})
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
           str(np_), "-x", "PYTHONPATH"]
    for k in (env or {}):
        cmd += ["-x", k]
    cmd += [sys.executable, JOB] + [str(a) for a in args]
    start = time.monotonic()
    try:
        r = subprocess.run(cmd, env=e, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as t:
        pytest.fail(f"the job hung ({timeout} s): {' '.join(args)}\n"
                    f"{t.stdout}\n{t.stderr}")
    return r, time.monotonic() - start


def batch(step, n=8):
    return traps_job.batch(step, 0, n)


# ---- 1. evaluation with the training executor ----

def test_evaluating_with_the_training_mpi_executor_keeps_the_model():
    """Train, evaluate, train on: MPIExecutor (a world of one here) must
    end bitwise where a plain Executor ends, evaluation in between."""
    results = []
    for make in (lambda: fluid.Executor(fluid.CPUPlace()),
                 lambda: fluid.MPIExecutor(fluid.CPUPlace())):
        main, startup, test, loss, acc = build()
        scope = new_scope()
        exe = make()
        exe.run(startup, scope=scope)
        for step in range(10):
            exe.run(main, feed=batch(step), fetch_list=[loss], scope=scope)
        w = scope.get("fc_0.w_0").copy()
        (a,) = exe.run(test, feed=batch(50, 64), fetch_list=[acc],
                       scope=scope)
        assert np.array_equal(scope.get("fc_0.w_0"), w), \
            "evaluation changed the parameters"
        losses = [exe.run(main, feed=batch(step), fetch_list=[loss],
                          scope=scope)[0] for step in range(10, 15)]
        results.append((float(a[0]), scope.get("fc_0.w_0"), losses))
    (a0, w0, l0), (a1, w1, l1) = results
    assert a0 == a1
    np.testing.assert_array_equal(w0, w1)
    np.testing.assert_array_equal(np.array(l0), np.array(l1))


def test_main_program_before_startup_is_an_error():
    main, startup, test, loss, acc = build()
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    with pytest.raises(ValueError, match="startup program"):
        exe.run(main, feed=batch(0), scope=new_scope())


def test_evaluation_under_mpirun_issues_no_collective():
    """Rank 0 alone evaluates between training steps (a collective would
    hang); parameters stay identical across ranks."""
    r, _ = mpirun(2, ["eval"])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    # Each rank's loss is its own shard's; the parameters are shared.
    found = re.findall(r"EVAL-OK rank (\d) (\|w\|=[0-9.]+)", r.stdout)
    assert sorted(rank for rank, _ in found) == ["0", "1"], out
    assert found[0][1] == found[1][1], out


# ---- 2. a plain Executor under mpirun ----

def test_plain_executor_under_mpirun_warns_once_on_rank_0():
    r, _ = mpirun(2, ["plain"])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert out.count("IndependentRanksWarning") == 1, out
    assert "rank 0 of 2" in out and "fluid.MPIExecutor" in out, out
    # The same Executor then runs a DistributeTranspiler trainer program
    # (as 1.x scripts end) data-parallel: the ranks' drifted parameters are
    # made rank 0's, and stay equal.
    found = re.findall(r"PLAIN-TRANSPILED rank (\d) w=([0-9a-f]+)", r.stdout)
    assert sorted(rank for rank, _ in found) == ["0", "1"], out
    assert found[0][1] == found[1][1], out


def test_the_warning_can_be_silenced():
    r, _ = mpirun(2, ["plain"], env={"FLUID_INDEPENDENT_RANKS": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "IndependentRanksWarning" not in out, out


# ---- 3. a failing or leaving rank ends the job ----

FAILURES = [(kind, when) for kind in ("raise", "exit3", "exit0", "kill")
            for when in ("startup", "mid")]


@pytest.mark.parametrize("np_", [2, 4])
@pytest.mark.parametrize("kind,when", FAILURES)
def test_a_failing_rank_ends_the_job_naming_it(np_, kind, when):
    bad = np_ - 2 if np_ > 2 else 1
    r, took = mpirun(np_, ["fail", kind, when, bad])
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert took < 30, f"took {took:.0f} s: {out}"
    named = {
        "raise": f"fluid: rank {bad}: uncaught RuntimeError: failing on "
                 "purpose",
        "exit3": f"fluid: rank {bad}: sys.exit(3); ending the job",
        "exit0": f"rank {bad} left the job",
        "kill": f"process rank {bad} ",
    }[kind]
    assert named in out, out


def test_a_rank_running_one_step_fewer_ends_the_job():
    r, took = mpirun(2, ["fewer", 1])
    out = r.stdout + r.stderr
    assert r.returncode != 0 and took < 30, out
    assert "rank 1 left the job (process ended after " in out, out


def test_check_consistency_on_one_rank_only_ends_the_job():
    r, took = mpirun(2, ["consistency", 1])
    out = r.stdout + r.stderr
    assert r.returncode != 0 and took < 30, out
    assert "rank 0 left the job" in out and "allgather" in out, out


# ---- 4. non-finite values ----

def test_nan_loss_raises_naming_the_loss_and_the_step():
    main, startup, test, loss, acc = build()
    scope = new_scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    exe.run(main, feed=batch(0), fetch_list=[loss], scope=scope)
    feed = batch(1)
    feed["x"][0, 0] = np.inf
    with pytest.raises(FloatingPointError,
                       match=rf"step 2: '{loss.name}' is nan"):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    (l,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope,
                   check_finite=False)
    assert np.isnan(l).all()
    # Evaluation programs are not checked by default, only when asked.
    exe.run(test, feed=feed, fetch_list=[acc], scope=scope)


def test_nan_gradient_stops_every_rank_at_the_same_step():
    r, _ = mpirun(2, ["nan", 1])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    # mpirun forwards each rank's output in chunks: lines of two ranks may
    # run together, so the messages are found by their ends.
    raised = re.findall(r"RAISED rank (\d): (.*?turns this check off)",
                        r.stdout)
    assert sorted(rank for rank, _ in raised) == ["0", "1"], out
    messages = {m for _, m in raised}
    assert len(messages) == 1, out
    (msg,) = messages
    assert msg.startswith("step 3: the averaged gradient '") and \
        "@GRAD' holds NaN or Inf on all 2 rank(s)" in msg, out
    # The rank that was fed the NaN is named, on every rank.
    assert "it came from NaN or Inf fed on rank 1 (feed 'x')" in msg, out


# ---- 5. errors that name the layer and the argument ----

def _layers_program():
    main, startup = fluid.Program(), fluid.Program()
    return main, startup, fluid.program_guard(main, startup)


def test_layer_argument_errors():
    main, startup, guard = _layers_program()
    with guard:
        a = L.data("a", [4])
        b = L.data("b", [4])
        ids = L.data("ids", [1], dtype="int64")
        img = L.data("img", [1, 8, 8])
        with pytest.raises(ValueError, match=r"fc\(param_attr=...\): a list "
                           r"of 3 param attrs for 2 inputs"):
            L.fc(input=[a, b], size=3, param_attr=["w", "v", "u"])
        with pytest.raises(TypeError, match=r"fc\(param_attr=...\)"):
            L.fc(a, 3, param_attr=3)
        with pytest.raises(TypeError, match=r"fc\(param_attr=False\)"):
            L.fc(a, 3, param_attr=False)
        with pytest.raises(ValueError, match=r"fc: input 'ids' is int64"):
            L.fc(ids, 3)
        with pytest.raises(TypeError, match=r"filter_size=\[3, 5, 1\]"):
            L.conv2d(img, 2, [3, 5, 1])
        with pytest.raises(TypeError, match=r"conv2d\(stride=...\)"):
            L.conv2d(img, 2, 3, stride="1")
        # What Fluid accepts works: a name, True, pairs.
        h = L.fc(a, 3, param_attr="shared_w", bias_attr=True)
        assert main.var("shared_w").shape == (4, 3)
        c = L.conv2d(img, 2, [3, 3], stride=[1, 1], padding=(1, 1))
        assert c.shape == (-1, 2, 8, 8)
        assert h.shape == (-1, 3)


def test_two_programs_colliding_in_one_scope_are_named():
    scope = new_scope()
    exe = fluid.Executor(fluid.CPUPlace())
    for width in (16, 5):
        main, startup = fluid.Program(), fluid.Program()
        # Generated names are unique in the process; counting them from
        # zero again for each program makes the two collide.
        with fluid.unique_name.guard(), fluid.program_guard(main, startup):
            x = L.data("x", [8])
            out = L.fc(x, width)
        if width == 16:
            exe.run(startup, scope=scope)
            exe.run(main, feed={"x": np.ones((2, 8), "float32")},
                    fetch_list=[out], scope=scope)
    with pytest.raises(ValueError, match=r"variable 'fc_0.w_0' already holds "
                       r"a float32 \[8, 16\] value .* declares it float32 "
                       r"\[8, 5\].*own scope"):
        exe.run(main, feed={"x": np.ones((2, 8), "float32")},
                fetch_list=[out], scope=scope)


# ---- 6. concurrent runs ----

def test_concurrent_runs_on_one_executor_are_serialised():
    """Four threads share one executor: the result equals running the same
    40 steps one after another (each thread's steps are the same batch, so
    only the number of steps matters)."""
    results = []
    for threads in (4, 1):
        main, startup, test, loss, acc = build(lr=0.01)
        scope = new_scope()
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup, scope=scope)
        feed = batch(3)
        errors = []

        def work(n):
            try:
                for _ in range(n):
                    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        ts = [threading.Thread(target=work, args=(40 // threads,))
              for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
        results.append(scope.get("fc_0.w_0"))
    np.testing.assert_array_equal(results[0], results[1])
