"""examples/fleet_mnist.py, a Fluid 1.8 collective script with only its
import lines changed, runs in one process and under mpirun -np 2 on a few
hundred Fashion-MNIST samples: every worker trains, worker 0 reports the
test accuracy once and saves the persistables."""
import os
import re
import shutil
import subprocess
import sys

import pytest

import fluid


@pytest.mark.parametrize("world", [1, 2])
def test_fleet_example_trains(repo_root, tmp_path, world):
    if not os.path.isdir(fluid.datasets.FASHION_MNIST):
        pytest.skip(f"no Fashion-MNIST at {fluid.datasets.FASHION_MNIST}")
    save = str(tmp_path / "saved")
    cmd = [sys.executable, os.path.join(repo_root, "examples", "fleet_mnist.py"),
           "--samples", "640", "--batch_size", "32", "--save_dir", save]
    if world > 1:
        if shutil.which("mpirun") is None:
            pytest.skip("mpirun not found")
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
               str(world), "-x", "PYTHONPATH"] + cmd
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for rank in range(world):
        assert f"worker {rank}: trained" in r.stdout, out
    found = re.findall(r"test accuracy ([0-9.]+) on worker 0 of (\d+)",
                       r.stdout)
    assert len(found) == 1 and int(found[0][1]) == world, out
    assert float(found[0][0]) > 0.3, out  # 10 classes: well above chance
    assert os.listdir(save), "worker 0 saved nothing"
