"""Every op a Python layer, optimizer or schedule appends records where the
user's code asked for it (op_callstack, as in Fluid 1.x: "file:line in
function()", innermost first, the fluid package's own frames left out),
and an error the op raises at run time names that line:

    in op 'lookup_table' (#0, built at .../test_op_callstack.py:41 in
    build_lookup()): ...

The attribute changes nothing the program computes: ranks that build one
network from different lines train together (mpi_callstack_job.py), and
programs built by C++ (trainer --model) carry none."""
import inspect
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import fluid

L = fluid.layers
HERE = os.path.dirname(os.path.abspath(__file__))


def here():
    """The line of the caller's call."""
    return inspect.currentframe().f_back.f_lineno


def built_at(line, function):
    return f"built at {__file__}:{line} in {function}()"


def build_lookup():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = L.data("ids", [1], dtype="int64")
        emb, line = L.embedding(ids, size=[10, 4]), here()
        loss = L.mean(emb)
    return main, startup, ids, emb, loss, line


def run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


def test_a_bad_index_names_the_line_of_the_layer():
    main, startup, _, emb, _, line = build_lookup()
    with pytest.raises(ValueError) as err:
        run(main, startup, {"ids": np.array([[3], [12]], np.int64)}, [emb])
    message = str(err.value)
    assert message.startswith("in op 'lookup_table' (#0, " +
                              built_at(line, "build_lookup") + "): "), message
    assert "12" in message, message


def test_a_shape_fed_at_run_time_names_the_line_of_the_layer():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a = L.data("a", [4])
        b = L.data("b", [4])
        total, line = L.elementwise_add(a, b), here()
    feed = {"a": np.ones((2, 4), np.float32), "b": np.ones((3, 4), np.float32)}
    with pytest.raises(ValueError, match=re.escape(
            "in op 'elementwise_add' (#0, " + built_at(
                line, "test_a_shape_fed_at_run_time_names_the_line_of_the_"
                "layer") + "): ")):
        run(main, startup, feed, [total])


def test_the_callstack_holds_the_callers_too_and_no_fluid_frame():
    main, _, _, _, _, line = build_lookup(); call = here()  # noqa: E702
    stack = main.global_block().ops[0].attr("op_callstack")
    assert stack[0] == f"{__file__}:{line} in build_lookup()"
    assert stack[1] == (f"{__file__}:{call} in test_the_callstack_holds_"
                        "the_callers_too_and_no_fluid_frame()")
    assert 2 <= len(stack) <= 4
    package = os.path.dirname(fluid.__file__)
    assert not any(f.startswith(package) for f in stack), stack


def test_gradient_optimizer_and_startup_ops_name_their_lines():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3])
        y, fc_line = L.fc(x, 2), here()
        loss = L.mean(y)
        lr, lr_line = L.exponential_decay(0.1, 10, 0.5), here()
        fluid.optimizer.SGD(lr).minimize(loss); min_line = here()  # noqa
    fn = "test_gradient_optimizer_and_startup_ops_name_their_lines"
    first = {}
    for op in main.global_block().ops:
        first.setdefault(op.type, op.attr("op_callstack")[0])
    where = f"{__file__}:{{}} in {fn}()".format
    assert first["mul"] == first["mul_grad"] == where(fc_line)
    assert first["elementwise_add_grad"] == where(fc_line)
    assert first["increment"] == where(lr_line)
    assert first["sgd"] == where(min_line)
    inits = {op.type: op.attr("op_callstack")[0]
             for op in startup.global_block().ops}
    assert inits["uniform_random"] == where(fc_line)  # the fc weight
    # Clones keep it; the ops of a clone for test still name their lines.
    test = main.clone(for_test=True)
    assert test.global_block().ops[0].attr("op_callstack")[0] == \
        where(fc_line)
    assert fluid.Program.parse(main.serialize()).global_block().ops[0] \
        .all_attrs()["op_callstack"][0] == where(fc_line)


def test_a_saved_inference_model_keeps_the_lines(tmp_path):
    """The saved model keeps where its ops were built (the attribute
    changes nothing it computes): a run of the loaded model that fails
    names the line that built the failing op."""
    main, startup, ids, emb, _, line = build_lookup()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    fluid.io.save_inference_model(str(tmp_path / "model"), [ids.name], [emb],
                                  exe, main, scope=scope)
    program, feeds, fetches = fluid.io.load_inference_model(
        str(tmp_path / "model"), exe, scope=scope)
    with pytest.raises(ValueError, match=re.escape(
            built_at(line, "build_lookup"))):
        exe.run(program, feed={feeds[0]: np.array([[11]], np.int64)},
                fetch_list=fetches, scope=scope)


def test_programs_from_different_lines_differ_only_in_the_callstack():
    """Two builds of one network from different lines: the programs differ
    (where each op was built), and are byte-identical without it."""
    with fluid.unique_name.guard():
        first = build_lookup()[0]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        emb = L.embedding(L.data("ids", [1], dtype="int64"), size=[10, 4])
        L.mean(emb)
    assert first.serialize() != main.serialize()
    assert first.desc.without_callstacks().serialize() == \
        main.desc.without_callstacks().serialize()


def test_programs_built_by_the_trainer_carry_no_callstack(trainer_bin,
                                                          tmp_path):
    path = tmp_path / "mlp.pb"
    subprocess.run([trainer_bin, "--model", "mlp", "--save", str(path)],
                   check=True, capture_output=True)
    job = fluid.io.load_job(str(path))
    for program in (job["main"], job["startup"]):
        assert program.global_block().ops
        assert not any(op.has_attr("op_callstack")
                       for op in program.global_block().ops)


def test_ranks_building_from_different_lines_train_together(tmp_path):
    """mpi_callstack_job.py under mpirun -np 2: each rank builds the same
    network from a line of its own; MPIExecutor compares the programs
    across ranks and trains."""
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", TMPDIR=str(tmp_path))
    r = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
         "-x", "PYTHONPATH", "-x", "TMPDIR", sys.executable,
         os.path.join(HERE, "mpi_callstack_job.py")],
        env=env, capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert out.count("CALLSTACK-OK") == 2, out
