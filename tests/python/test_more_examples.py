"""The examples test_book_examples.py and test_mpi.py leave out, or run in
only one of the two ways: each runs end to end in one process and under
`mpirun -np 2`, and its metrics line is printed once (rank 0)."""
import os
import re
import sys

import pytest

import fluid
from test_book_examples import NP, mpirun_cmd, run

# script, arguments, arguments under mpirun, the line rank 0 prints once
EXAMPLES = [
    ("fashion_mnist_conv.py", ["--max-steps", "5", "--batch-size", "32"],
     ["--distributed"], r"test accuracy [0-9.]+"),
    ("fashion_mnist_mlp.py", ["--batch-size", "256"], ["--distributed"],
     r"test accuracy [0-9.]+"),
    ("recognize_digits_conv_dist.py", ["--steps", "5"], [],
     r"trained 5 steps on \d rank\(s\)"),
    ("fashion_mnist_readers.py", ["--samples", "256", "--batch-size", "32"],
     [], r"test accuracy [0-9.]+"),
]


@pytest.mark.parametrize("world", [1, NP])
@pytest.mark.parametrize("script,args,dist_args,line", EXAMPLES,
                         ids=[e[0] for e in EXAMPLES])
def test_example_runs(repo_root, script, args, dist_args, line, world):
    if not os.path.isdir(fluid.datasets.FASHION_MNIST):
        pytest.skip(f"no Fashion-MNIST at {fluid.datasets.FASHION_MNIST}")
    cmd = [sys.executable, os.path.join(repo_root, "examples", script)] + args
    if world > 1:
        cmd = mpirun_cmd(cmd + dist_args)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = run(cmd, env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert len(re.findall(line, r.stdout)) == 1, out
    assert "nan" not in r.stdout, out


@pytest.mark.parametrize("script", ["fashion_mnist_conv.py",
                                    "fashion_mnist_mlp.py"])
def test_example_saves_a_job_the_trainer_reads(repo_root, script, tmp_path,
                                              trainer_bin):
    job = str(tmp_path / "job.pb")
    r = run([sys.executable, os.path.join(repo_root, "examples", script),
             "--save", job], dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    r = run([trainer_bin, "--program", job, "--print-program"],
            dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "softmax_with_cross_entropy" in r.stdout, r.stdout
