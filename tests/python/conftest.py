"""pytest setup for the Python package tests.

Puts the built package (build/python, or $FLUID_PYTHONPATH) on sys.path when
`fluid` is not importable already, so that both

    cd /work/main && PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python -q
    cd /work/main && /usr/bin/python3 -m pytest tests/python -q

work. Also exports the path in PYTHONPATH so that subprocesses (mpirun,
scripts) find the same package.
"""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
BUILD_PYTHON = os.environ.get("FLUID_PYTHONPATH",
                              os.path.join(ROOT, "build", "python"))

try:
    import fluid  # noqa: F401
except ImportError:
    sys.path.insert(0, BUILD_PYTHON)
    import fluid  # noqa: F401

_pkg_dir = os.path.dirname(os.path.dirname(os.path.abspath(fluid.__file__)))
_pp = os.environ.get("PYTHONPATH", "")
if _pkg_dir not in _pp.split(os.pathsep):
    os.environ["PYTHONPATH"] = (_pkg_dir + os.pathsep + _pp) if _pp \
        else _pkg_dir


@pytest.fixture(scope="session", autouse=True)
def _private_tmpdir(tmp_path_factory):
    """$TMPDIR for the tests and the processes they start: what a failing
    job leaves there (its flight recorder files, under
    $TMPDIR/fluid-flight-<job>/) stays in pytest's own temporary tree
    instead of /tmp."""
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("tmpdir"))
    yield
    if saved is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved


@pytest.fixture(scope="session")
def trainer_bin():
    path = os.environ.get("FLUID_TRAINER",
                          os.path.join(ROOT, "build", "bin", "trainer"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"trainer binary not found at {path}: build it "
                    "(make -C build trainer) or set FLUID_TRAINER")
    return path


@pytest.fixture(scope="session")
def repo_root():
    return ROOT


@pytest.fixture(autouse=True)
def _fresh_unique_names():
    """Each test counts generated names (fc_0, ...) from zero, as Fluid's
    own tests do under unique_name.guard()."""
    with fluid.unique_name.guard():
        yield
