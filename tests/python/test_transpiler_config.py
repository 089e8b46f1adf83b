"""DistributeTranspiler with Fluid 1.x's signature and
DistributeTranspilerConfig: collective ("collective" / "nccl2") and
parameter-server ("pserver") modes; the seed's form keeps working (see
test_executor.py)."""
import pytest

import fluid

L = fluid.layers


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup):
        x = L.data("x", [8])
        label = L.data("label", [1], dtype="int64")
        logits = L.fc(L.fc(x, 16, act="relu"), 3)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Momentum(0.1, 0.9).minimize(loss)
    return main, startup


def config(mode):
    c = fluid.DistributeTranspilerConfig()
    c.mode = mode
    return c


def test_config_defaults_are_fluids():
    c = fluid.DistributeTranspilerConfig()
    assert (c.slice_var_up, c.split_method, c.min_block_size, c.mode) == \
        (True, None, 8192, "pserver")


@pytest.mark.parametrize("mode", ["collective", "nccl2"])
def test_collective_mode_inserts_allreduce_and_no_server(mode):
    main, startup = build()
    t = fluid.DistributeTranspiler(config=config(mode))
    t.transpile(1, program=main, trainers=2, startup_program=startup)
    assert t.trainer_id == 1
    trainer = t.get_trainer_program()
    types = trainer.op_types()
    assert "c_allreduce" in types and "send" not in types
    assert types.index("c_allreduce") < types.index("momentum")
    assert trainer.desc.nranks == 2
    assert "c_broadcast" in t.get_startup_program().op_types()
    assert "c_allreduce" not in main.op_types()
    with pytest.raises(ValueError, match="MPIExecutor"):
        t.get_pserver_program("127.0.0.1:6174")


def test_the_1x_form_matches_the_seed_form():
    main, startup = build()
    t = fluid.DistributeTranspiler(config=config("collective"))
    t.transpile(trainer_id=0, program=main, trainers=2,
                startup_program=startup)
    seed = fluid.DistributeTranspiler()
    seed.transpile(None, None, trainers=2, program=main,
                   startup_program=startup)
    assert t.get_trainer_program().op_types() == \
        seed.get_trainer_program().op_types()


def test_nccl2_takes_the_trainer_endpoints_as_trainers():
    main, startup = build()
    t = fluid.DistributeTranspiler(config=config("nccl2"))
    t.transpile(0, program=main, startup_program=startup,
                trainers="10.0.0.1:6170,10.0.0.2:6170,10.0.0.3:6170",
                current_endpoint="10.0.0.1:6170")
    assert t.get_trainer_program().desc.nranks == 3


def test_pserver_mode_keeps_the_server_programs_for_to_collective():
    main, startup = build()
    eps = "127.0.0.1:6174,127.0.0.1:6175"
    t = fluid.DistributeTranspiler()  # Fluid's default config: pserver
    t.transpile(0, program=main, pservers=eps, trainers=2,
                startup_program=startup)
    assert t.mode == "pserver"
    trainer = t.get_trainer_program()
    assert "send" in trainer.op_types()
    for ep in eps.split(","):
        assert "listen_and_serv" in t.get_pserver_program(ep).op_types()
        assert t.get_startup_program(ep) is not None
    m, _ = fluid.transpiler.to_collective(trainer, t,
                                          t.get_startup_program(), 2)
    coll = fluid.DistributeTranspiler(config=config("collective"))
    coll.transpile(0, program=main, trainers=2, startup_program=startup)
    assert m.op_types() == coll.get_trainer_program().op_types()


def test_bad_arguments_are_refused_clearly():
    main, startup = build()
    with pytest.raises(ValueError, match="mode 'ring'"):
        fluid.DistributeTranspiler(config=config("ring")).transpile(
            0, program=main, startup_program=startup)
    with pytest.raises(NotImplementedError, match="sync_mode"):
        fluid.DistributeTranspiler(config=config("collective")).transpile(
            0, program=main, startup_program=startup, sync_mode=False)
    with pytest.raises(ValueError, match="trainer_id 2"):
        fluid.DistributeTranspiler(config=config("collective")).transpile(
            2, program=main, trainers=2, startup_program=startup)
    c = config("collective")
    c.split_method = fluid.transpiler.HashName
    with pytest.raises(ValueError, match="round robin"):
        fluid.DistributeTranspiler(config=c).transpile(
            0, program=main, startup_program=startup)
    c = config("collective")
    c.min_block_size = 0
    with pytest.raises(ValueError, match="min_block_size"):
        fluid.DistributeTranspiler(config=c).transpile(
            0, program=main, startup_program=startup)
