"""Exception types at the Python edge: running out of memory is a
MemoryError, a failed file-system call an OSError of the matching subclass
(not a KeyError, not a CollectiveError), and a missing checkpoint stays a
KeyError."""
import errno
import os

import pytest

import fluid

L = fluid.layers

# See test_executor.py: scopes stay alive until the end of the session.
_SCOPES = []


def small_net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        label = L.data("label", [1], dtype="int64")
        logits = L.fc(x, 3)
        L.mean(L.softmax_with_cross_entropy(logits, label))
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    return exe, scope, main


def test_out_of_memory_is_memory_error():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [1])
        L.fc(x, size=2**40)  # a 4 TiB weight
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(MemoryError, match="out of memory"):
        exe.run(startup, scope=scope)
    assert not issubclass(MemoryError, fluid.CollectiveError)


def test_save_params_where_no_directory_can_be_made(tmp_path):
    exe, scope, main = small_net()
    # /proc refuses new entries, even to root.
    with pytest.raises(OSError) as info:
        fluid.io.save_params(exe, "/proc/forbidden", main_program=main,
                             scope=scope)
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.errno == errno.ENOENT
    assert "/proc/forbidden" in str(info.value)
    assert not isinstance(info.value, KeyError)


def test_save_params_under_a_regular_file(tmp_path):
    exe, scope, main = small_net()
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(NotADirectoryError) as info:
        fluid.io.save_params(exe, str(blocker / "ckpt"), main_program=main,
                             scope=scope)
    assert info.value.errno == errno.ENOTDIR
    assert str(blocker) in str(info.value)


def test_save_params_over_a_regular_file(tmp_path):
    exe, scope, main = small_net()
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(NotADirectoryError):
        fluid.io.save_params(exe, str(blocker), main_program=main,
                             scope=scope)


def test_save_job_where_no_file_can_be_made(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        label = L.data("label", [1], dtype="int64")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(x, 3), label))
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(NotADirectoryError, match="model.pb"):
        fluid.io.save_job(str(blocker / "model.pb"), main, startup,
                          feeds=[x, label], loss=loss)


def test_missing_checkpoint_is_still_key_error(tmp_path):
    exe, scope, main = small_net()
    with pytest.raises(KeyError, match="LATEST"):
        fluid.io.load_params(exe, str(tmp_path / "none"), main_program=main,
                             scope=scope)


def test_load_params_skips_a_corrupt_newest_checkpoint(tmp_path):
    exe, scope, main = small_net()
    d = str(tmp_path / "ckpt")
    fluid.io.save_params(exe, d, main_program=main, scope=scope, step=1)
    fluid.io.save_params(exe, d, main_program=main, scope=scope, step=2)
    newest = os.path.join(d, "ckpt-2")
    victim = next(os.path.join(newest, f) for f in sorted(os.listdir(newest))
                  if f.endswith(".tensor")
                  and os.path.getsize(os.path.join(newest, f)) > 0)
    data = bytearray(open(victim, "rb").read())
    data[0] ^= 0x10
    open(victim, "wb").write(bytes(data))
    step, _ = fluid.io.load_params(exe, d, main_program=main, scope=scope)
    assert step == 1
    # All damaged: a ValueError naming both.
    older = os.path.join(d, "ckpt-1", os.path.basename(victim))
    data = bytearray(open(older, "rb").read())
    data[0] ^= 0x10
    open(older, "wb").write(bytes(data))
    with pytest.raises(ValueError, match="ckpt-2.*ckpt-1"):
        fluid.io.load_params(exe, d, main_program=main, scope=scope)
