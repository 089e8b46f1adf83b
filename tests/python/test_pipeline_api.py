"""The Python surface of pipeline parallelism, in one process:
fluid.pipeline_stage and fluid.device_guard place ops, PipelineOptimizer
records the pipeline and runs unpipelined on a plain Executor,
DistributedStrategy takes pipeline_configs by our keys and Fleet's, and
each misuse is an error naming its cause."""
import numpy as np
import pytest

import fluid

L = fluid.layers


@pytest.fixture(autouse=True)
def keep_reader_groups(monkeypatch):
    # PipelineOptimizer and MPIExecutor tell fluid.reader how many stages
    # read the same batches; other tests in this process read alone.
    from fluid import reader
    monkeypatch.setattr(reader, "_tensor_parallel", [1])
    monkeypatch.setattr(reader, "_pipeline", [1])


def build(guard, optimizer=None, stages=(0, 1)):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 2
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data("x", [6])
        y = L.data("y", [1], dtype="int64")
        with guard(stages[0]):
            h = L.fc(x, 8, act="relu")
        with guard(stages[1]):
            loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 3), y))
        (optimizer or fluid.optimizer.SGD(0.1)).minimize(loss)
    return main, startup, loss


def stages_of(program):
    return [(op.type, op.attr("pipeline_stage"))
            for op in program.global_block().ops
            if op.has_attr("pipeline_stage")
            and "forward" in op["roles"]]


def test_pipeline_stage_places_forward_ops():
    main, _, _ = build(fluid.pipeline_stage)
    placed = stages_of(main)
    assert placed[:3] == [("mul", 0), ("elementwise_add", 0), ("relu", 0)]
    assert {s for _, s in placed[3:]} == {1}
    # Nesting: the innermost wins, the outer one is back after it.
    main2 = fluid.Program()
    with fluid.program_guard(main2, fluid.Program()):
        x = L.data("x", [4])
        with fluid.pipeline_stage(0):
            a = L.scale(x, 2.0)
            with fluid.pipeline_stage(1):
                b = L.scale(a, 2.0)
            L.scale(b, 2.0)
        L.scale(b, 2.0)
    assert [op.all_attrs().get("pipeline_stage")
            for op in main2.global_block().ops] == [0, 1, 0, None]


def test_device_guard_maps_gpu_index_to_stage():
    def guard(k):
        return fluid.device_guard(f"gpu:{k}")
    assert stages_of(build(guard)[0]) == stages_of(
        build(fluid.pipeline_stage)[0])
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = L.data("x", [4])
        with fluid.device_guard("gpu:1"):
            with fluid.device_guard("cpu"):
                L.scale(x, 2.0)
            with fluid.device_guard("gpu"):
                L.scale(x, 2.0)
        with fluid.device_guard(None):
            L.scale(x, 2.0)
    assert [op.all_attrs().get("pipeline_stage")
            for op in main.global_block().ops] == [1, 1, None]


@pytest.mark.parametrize("bad", [-1, 1.5, "1", True, None])
def test_bad_stage_is_named(bad):
    with pytest.raises(ValueError, match=r"a stage is an int >= 0"):
        with fluid.pipeline_stage(bad):
            pass


@pytest.mark.parametrize("bad", ["gpu:x", "xpu:0", "gpu:-1", 0])
def test_bad_device_is_named(bad):
    with pytest.raises(ValueError, match=r"give 'cpu', 'gpu' or 'gpu:k'"):
        with fluid.device_guard(bad):
            pass


def test_pipeline_configs_keys():
    s = fluid.DistributedStrategy()
    assert s.pipeline_stages == 1
    assert s.pipeline_configs == {"micro_batches": 1, "schedule": "1F1B",
                                  "forwards_ahead": 0}
    s.pipeline_stages = 2
    s.pipeline_configs = {"micro_batches": 8, "schedule": "FThenB"}
    assert s.pipeline_configs == {"micro_batches": 8, "schedule": "FThenB",
                                  "forwards_ahead": 0}
    s.pipeline_configs = {"accumulate_steps": 4, "schedule_mode": "F-then-B"}
    assert s.pipeline_configs == {"micro_batches": 4, "schedule": "FThenB",
                                  "forwards_ahead": 0}
    s.pipeline_configs = {"schedule_mode": "1F1B", "forwards_ahead": 1}
    assert s.pipeline_configs == {"micro_batches": 4, "schedule": "1F1B",
                                  "forwards_ahead": 1}
    back = fluid.DistributedStrategy.from_text(str(s))
    assert back == s


def test_bad_pipeline_configs_are_named():
    s = fluid.DistributedStrategy()
    with pytest.raises(ValueError, match=r"no key 'stages'; its keys: "
                       r"micro_batches, schedule, forwards_ahead, "
                       r"accumulate_steps, schedule_mode"):
        s.pipeline_configs = {"stages": 2}
    with pytest.raises(ValueError, match="'micro_batch_size'.*give their "
                       "count"):
        s.pipeline_configs = {"micro_batch_size": 2}
    with pytest.raises(ValueError, match="schedule must be 1F1B or FThenB, "
                       "got 'GPipe'"):
        s.pipeline_configs = {"schedule_mode": "GPipe"}
    with pytest.raises(ValueError, match=r"micro_batches must be"):
        s.pipeline_configs = {"accumulate_steps": 0}
    with pytest.raises(ValueError, match=r"forwards_ahead must be"):
        s.pipeline_configs = {"forwards_ahead": -1}
    with pytest.raises(ValueError, match=r"pipeline_stages must be"):
        s.pipeline_stages = 0


def test_pipeline_optimizer_records_and_runs_unpipelined():
    opt = fluid.optimizer.PipelineOptimizer(
        fluid.optimizer.Momentum(0.1, 0.9), num_microbatches=2)
    main, startup, loss = build(fluid.pipeline_stage, opt)
    assert main._pipeline == (2, 2)
    ref_main, ref_startup, ref_loss = build(
        fluid.pipeline_stage, fluid.optimizer.Momentum(0.1, 0.9))
    rng = np.random.RandomState(0)
    feeds = [{"x": rng.rand(4, 6).astype("float32"),
              "y": rng.randint(0, 3, (4, 1)).astype("int64")}
             for _ in range(3)]
    exe = fluid.Executor(fluid.CPUPlace())
    got, want = [], []
    for prog, start, out, into in ((main, startup, loss, got),
                                   (ref_main, ref_startup, ref_loss, want)):
        scope = fluid.Scope()
        exe.run(start, scope=scope)
        for feed in feeds:
            into.append(exe.run(prog, feed=feed, fetch_list=[out],
                                scope=scope)[0])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_pipeline_optimizer_errors():
    with pytest.raises(TypeError, match="optimizer must be an optimizer"):
        fluid.optimizer.PipelineOptimizer(None)
    with pytest.raises(ValueError, match="num_microbatches must be an int "
                       ">= 1, got 0"):
        fluid.optimizer.PipelineOptimizer(fluid.optimizer.SGD(0.1), 0)
    with pytest.raises(ValueError, match=r"no op is on stage\(s\) 1"):
        build(fluid.pipeline_stage,
              fluid.optimizer.PipelineOptimizer(fluid.optimizer.SGD(0.1)),
              stages=(0, 2))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        loss = L.mean(L.fc(x, 1))
        with pytest.raises(ValueError, match="no op of the program is "
                           "placed on a stage"):
            fluid.optimizer.PipelineOptimizer(
                fluid.optimizer.SGD(0.1)).minimize(loss)


def test_strategy_and_optimizer_disagree():
    s = fluid.DistributedStrategy()
    assert s._with_pipeline(2, 4, "PipelineOptimizer")._pipeline() == (2, 4)
    s.pipeline_stages = 2
    assert s._with_pipeline(2, 4, "PipelineOptimizer")._pipeline() == (2, 4)
    s.pipeline_stages = 4
    with pytest.raises(ValueError, match=r"pipeline of 2 stage\(s\) "
                       r"\(PipelineOptimizer\) but DistributedStrategy"
                       r"\.pipeline_stages is 4"):
        s._with_pipeline(2, 4, "PipelineOptimizer")
    s.pipeline_stages = 2
    s.pipeline_configs = {"micro_batches": 8}
    with pytest.raises(ValueError, match=r"asks for 4 micro-batch\(es\) but "
                       r".*is 8"):
        s._with_pipeline(2, 4, "PipelineOptimizer")


def test_data_ranks_of_a_pipeline(monkeypatch):
    from fluid import reader
    reader._set_tensor_parallel(2)
    reader._set_pipeline(2)
    monkeypatch.setattr(reader._core, "launcher_world_size", lambda: 8)
    got = []
    for r in range(8):
        monkeypatch.setattr(reader._core, "launcher_rank", lambda r=r: r)
        got.append(reader._data_ranks())
    # [pp][dp][tp]: ranks 0-3 stage 0, 4-7 stage 1; dp index (r // 2) % 2.
    assert got == [(0, 2), (0, 2), (1, 2), (1, 2),
                   (0, 2), (0, 2), (1, 2), (1, 2)]


def test_mpi_executor_names_both_pipelines():
    main, startup, loss = build(
        fluid.pipeline_stage,
        fluid.optimizer.PipelineOptimizer(fluid.optimizer.SGD(0.1), 2))
    s = fluid.DistributedStrategy()
    s.pipeline_stages = 3
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=s)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(ValueError, match=r"pipeline of 2 stage\(s\).*"
                       r"pipeline_stages is 3"):
        exe.run(main, feed={"x": np.zeros((4, 6), "float32"),
                            "y": np.zeros((4, 1), "int64")},
                fetch_list=[loss], scope=scope)


def _transpile_pp2(main, startup):
    strategy = fluid.DistributedStrategy()
    strategy.pipeline_stages = 2
    strategy.pipeline_configs = {"micro_batches": 2}
    staged, _ = fluid._core.collective_transpile(main.desc, startup.desc, 2,
                                                 strategy.serialize())
    return fluid.Program(staged)


def _loop_program(body_stage=0, dropout=False):
    """x -> fc on stage 0 -> a While of 2 steps h = fc_w(h) placed on
    stage 0 (its body ops on `body_stage`) -> loss on stage 1."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data("x", [4])
        y = L.data("y", [1], dtype="int64")
        with fluid.pipeline_stage(0):
            h = L.fc(x, 4, act="tanh")
            i = L.fill_constant([1], "int64", 0)
            n = L.fill_constant([1], "int64", 2)
            c = L.less_than(i, n)
            loop = L.While(c)
            with loop.block():
                with fluid.pipeline_stage(body_stage):
                    g = L.fc(h, 4, act="tanh", param_attr="w")
                    if dropout:
                        g = L.dropout(g, 0.5)
                    L.assign(g, h)
                    L.increment(i)
                    L.less_than(i, n, cond=c)
        with fluid.pipeline_stage(1):
            loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 3), y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup


def test_pipeline_cuts_around_a_loop():
    # The loop runs whole on stage 0, once per micro-batch on its own
    # copy of its block (and of its gradient block); trains under mpirun
    # in mpi_pipeline.py check 6.
    main, startup = _loop_program()
    blocks_before = main.num_blocks
    staged = _transpile_pp2(main, startup)
    loops = [op for op in staged.global_block().ops
             if op.type in ("while", "while_grad")]
    assert [op.type for op in loops] == ["while", "while", "while_grad",
                                         "while_grad"]
    copies = {op.attr("sub_block") for op in loops}
    assert len(copies) == 4 and min(copies) >= blocks_before
    assert staged.num_blocks == blocks_before + 4


@pytest.mark.parametrize("body_stage,dropout,message", [
    (1, False, "a loop or conditional block runs whole on one stage"),
    (0, True, "apply dropout outside the loop"),
])
def test_pipeline_refuses_what_a_loop_cannot_do(body_stage, dropout, message):
    main, startup = _loop_program(body_stage, dropout)
    with pytest.raises(Exception, match=message):
        _transpile_pp2(main, startup)
