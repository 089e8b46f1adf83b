"""The book's examples (examples/recognize_digits.py,
image_classification.py, fit_a_line.py) run end to end on a few hundred
Fashion-MNIST samples, in one process and under `mpirun -np 2`
(fluid.MPIExecutor): they train, keep the ranks' parameters equal
(check_consistency) and print the test set's metrics."""
import os
import re
import shutil
import subprocess
import sys

import pytest

import fluid

NP = 2
SAMPLES = "320"  # 2 ranks x 160: 5 steps of 32 each, 8 of 20

EXAMPLES = [
    ("recognize_digits.py", [], r"test loss [0-9.]+, accuracy [0-9.]+"),
    ("image_classification.py", ["--depth", "8"],
     r"test loss [0-9.]+, accuracy [0-9.]+"),
    ("fit_a_line.py", [], r"test cost [0-9.]+"),
]


def run(cmd, env):
    return subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=300)


def mpirun_cmd(args):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
            str(NP), "-x", "PYTHONPATH"] + args


@pytest.mark.parametrize("world", [1, NP])
@pytest.mark.parametrize("script,extra,test_line", EXAMPLES,
                         ids=[e[0] for e in EXAMPLES])
def test_book_example_runs(repo_root, script, extra, test_line, world):
    if not os.path.isdir(fluid.datasets.FASHION_MNIST):
        pytest.skip(f"no Fashion-MNIST at {fluid.datasets.FASHION_MNIST}")
    args = [sys.executable, os.path.join(repo_root, "examples", script),
            "--samples", SAMPLES] + extra
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = run(mpirun_cmd(args) if world > 1 else args, env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert len(re.findall(test_line, r.stdout)) == 1, out  # rank 0 alone
    for rank in range(world):
        assert f"rank {rank}: trained" in r.stdout, out
    assert "nan" not in r.stdout, out
