"""Tensor memory from Python: fluid.memory_plan (the plan of a program
before it runs), fluid.memory's counters, and eager deletion (on by
default; off per executor or with FLAGS_eager_delete_tensor_gb=-1)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import fluid

L = fluid.layers
_SCOPES = []  # scopes outlive the executors that ran on them

NET = """
import numpy as np
import fluid
L = fluid.layers

def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        x = L.data("x", [256])
        y = L.data("y", [1], dtype="int64")
        h = x
        for _ in range(4):
            h = L.fc(h, size=512, act="relu")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, size=10), y))
        fluid.optimizer.Adam(0.001).minimize(loss)
    return main, startup, loss

def peak_of_steps(exe, scope):
    main, startup, loss = build()
    rng = np.random.RandomState(0)
    feed = {"x": rng.rand(128, 256).astype("float32"),
            "y": rng.randint(0, 10, (128, 1)).astype("int64")}
    base = fluid.memory.memory_allocated()
    fluid.memory.reset_max_memory_allocated()
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0][0]
              for _ in range(3)]
    return fluid.memory.max_memory_allocated() - base, losses
"""
exec(NET)  # build() and peak_of_steps() for this process too


def new_scope():
    s = fluid.Scope()
    _SCOPES.append(s)
    return s


def test_memory_plan_is_a_dict_that_prints():
    main, _, _ = build()
    plan = fluid.memory_plan(main, batch_size=128)
    parts = ["parameters", "optimizer_state", "other_state", "communication",
             "gradients", "activations"]
    assert plan["total"] == sum(plan[p] for p in parts)
    assert plan["optimizer_state"] >= 2 * plan["parameters"]  # Adam
    assert plan["communication"] == 0  # one rank: no buckets
    assert plan["nranks"] == 1 and plan["batch_size"] == 128
    name, kind, size = plan["largest"][0]
    assert size == max(b for _, _, b in plan["largest"])
    text = str(plan)
    assert "memory plan per rank (1 rank, batch 128 per rank)" in text
    assert name in text and "largest items" in text
    two = fluid.memory_plan(main, nranks=2, batch_size=128)
    assert two["communication"] > 0  # the gradient buckets
    bigger = fluid.memory_plan(main, batch_size=512)
    assert bigger["activations"] > 2 * plan["activations"]


def test_memory_plan_refuses_bad_arguments():
    main, _, _ = build()
    with pytest.raises(ValueError, match="batch_size .* must be an int >= 1, "
                       "got None"):
        fluid.memory_plan(main)
    with pytest.raises(ValueError, match="nranks must be an int >= 1, got 0"):
        fluid.memory_plan(main, nranks=0, batch_size=8)
    with pytest.raises(TypeError, match="program must be a fluid.Program"):
        fluid.memory_plan("main", batch_size=8)
    with pytest.raises(TypeError, match="strategy must be a"):
        fluid.memory_plan(main, strategy={"sharding": True}, batch_size=8)


def test_a_sharded_plan_reads_the_startup_program():
    main, startup, _ = build()
    plans = {}
    for stage in (1, 2, 3):
        s = fluid.DistributedStrategy()
        s.sharding = True
        s.sharding_configs = {"stage": stage}
        plans[stage] = fluid.memory_plan(main, s, nranks=4, batch_size=32,
                                         startup_program=startup)
    plain = fluid.memory_plan(main, nranks=4, batch_size=32)
    # Adam's two moments, a quarter of them per rank from stage 1 on.
    assert plans[1]["optimizer_state"] * 4 <= plain["optimizer_state"] * 1.01
    assert plans[2]["total"] < plain["total"]
    # Stage 3: a quarter of the parameters between steps.
    kept = plans[3]["parameters"] + plans[3]["other_state"]
    assert kept * 4 <= plain["parameters"] * 1.05, str(plans[3])
    # Without it the default startup program holds none of the states.
    with pytest.raises(Exception, match="startup program"):
        fluid.memory_plan(main, s, nranks=4, batch_size=32)
    with pytest.raises(TypeError, match="startup_program must be a"):
        fluid.memory_plan(main, s, nranks=4, batch_size=32,
                          startup_program="startup")


def test_the_plan_is_within_ten_percent_of_the_measured_peak():
    exe = fluid.Executor(fluid.CPUPlace())
    peak, _ = peak_of_steps(exe, new_scope())
    main, _, _ = build()
    plan = fluid.memory_plan(main, batch_size=128)
    assert 0.9 < peak / plan["total"] < 1.1, (peak, str(plan))


def test_eager_deletion_lowers_the_peak_and_changes_no_result():
    on = fluid.Executor(fluid.CPUPlace())
    off = fluid.Executor(fluid.CPUPlace())
    fluid.memory.set_eager_deletion(off, False)
    peak_on, losses_on = peak_of_steps(on, new_scope())
    peak_off, losses_off = peak_of_steps(off, new_scope())
    assert peak_on < peak_off
    np.testing.assert_array_equal(losses_on, losses_off)
    usage = fluid.memory.memory_usage()
    assert set(usage) == {"in_use", "peak", "cached", "allocations",
                          "system_allocations"}
    with pytest.raises(TypeError, match="executor must be a fluid.Executor"):
        fluid.memory.set_eager_deletion("exe", False)


def run_net_with(flag):
    env = dict(os.environ, FLAGS_eager_delete_tensor_gb=flag)
    code = NET + """
peak, losses = peak_of_steps(fluid.Executor(fluid.CPUPlace()), fluid.Scope())
print(peak)
"""
    return subprocess.run([sys.executable, "-c", code], env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_environment_flag_turns_it_off():
    off = fluid.Executor(fluid.CPUPlace())
    fluid.memory.set_eager_deletion(off, False)
    peak_off, _ = peak_of_steps(off, new_scope())
    r = run_net_with("-1")
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) == peak_off
    r = run_net_with("lots")
    assert r.returncode != 0
    assert "FLAGS_eager_delete_tensor_gb must be a number of GB" in r.stderr
    assert "got 'lots'" in r.stderr
