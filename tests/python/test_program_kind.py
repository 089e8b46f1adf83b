"""What a program is for is tagged in its ProgramDesc (kind: main or
startup) and read from there; op roles come as names. Nothing in the
package guesses either from op types or role bits."""
import os

import fluid

L = fluid.layers


def build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        y = L.data("y", [1], dtype="int64")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(x, 3), y))
        ops, pairs = fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss, ops


def test_startup_programs_are_tagged_in_the_program_desc():
    main, startup, loss, _ = build()
    assert startup.is_startup and not main.is_startup
    assert fluid.default_startup_program().is_startup
    assert not fluid.default_main_program().is_startup
    # The tag travels with the bytes.
    assert fluid.Program.parse(startup.serialize()).is_startup
    assert not fluid.Program.parse(main.serialize()).is_startup
    # A program merely guarded as startup, before any layer, is one too.
    other = fluid.Program()
    with fluid.program_guard(fluid.Program(), other):
        pass
    assert other.is_startup


def test_loaded_and_transpiled_startups_are_tagged(tmp_path):
    main, startup, loss, _ = build()
    path = os.path.join(str(tmp_path), "job.pb")
    fluid.io.save_job(path, main, startup, feeds=["x", "y"], loss=loss)
    job = fluid.io.load_job(path)
    assert job["startup"].is_startup and not job["main"].is_startup
    t = fluid.DistributeTranspiler()
    t.transpile(trainers=2, program=main, startup_program=startup)
    assert t.get_startup_program().is_startup
    assert not t.get_trainer_program().is_startup


def test_op_roles_are_names():
    main, startup, loss, optimize_ops = build()
    assert optimize_ops and all("optimize" in op["roles"]
                                for op in optimize_ops)
    roles = [op["roles"] for op in main.ops()]
    assert ["forward"] in roles
    assert any("backward" in r for r in roles)
    assert any("loss" in r for r in roles)
    assert all("role" not in op for op in main.ops())
