"""examples/label_semantic_roles.py (chapter 07's CRF tagger on Debian's
fortunes) at tiny sizes: with fluid.Executor in one process and with
fluid.MPIExecutor under `mpirun -np 2`. Both runs train on the same global
batches (2 ranks x 4 sequences against one process on 8), in float64, so
the np 2 run's parameters equal the single process's to 1e-6 (only the
summation order differs) and are bitwise identical across the ranks; the
validation loss falls and a tagging accuracy and chunk precision, recall
and F1 (chunk_eval) are printed."""
import os
import re

import numpy as np
import pytest

import fluid
from test_mpi import NP, run_script

PER_RANK = 4
ARGS = ["--samples", "48", "--steps", "3", "--max-len", "12", "--emb", "8",
        "--hidden", "8", "--depth", "2", "--dtype", "float64"]



def _run(repo_root, out_dir, world):
    script = os.path.join(repo_root, "examples", "label_semantic_roles.py")
    cmd = [script] + ARGS + [
        "--save-params", str(out_dir), "--batch-size",
        str(PER_RANK if world > 1 else PER_RANK * NP)]
    r = run_script(cmd, world)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for rank in range(world):
        assert f"rank {rank}: trained 3 steps on {world} rank(s)" in r.stdout
    before = re.findall(r"before training: valid loss ([0-9.]+)", r.stdout)
    after = re.findall(r"after 3 steps: valid loss ([0-9.]+), tagging "
                       r"accuracy ([0-9.]+)", r.stdout)
    assert len(before) == 1 and len(after) == 1, out  # rank 0 only
    assert float(after[0][0]) < float(before[0]), out
    assert 0.0 <= float(after[0][1]) <= 1.0, out
    f1 = re.findall(r"chunks after 3 steps: precision ([0-9.]+), recall "
                    r"([0-9.]+), F1 ([0-9.]+)", r.stdout)
    assert len(f1) == 1 and all(0.0 <= float(v) <= 1.0 for v in f1[0]), out
    assert "nan" not in r.stdout, out
    return [dict(np.load(os.path.join(out_dir, f"rank{k}.npz")))
            for k in range(world)]


def test_np1_executor_equals_np2_mpi_executor(repo_root, tmp_path):
    if not fluid.datasets.fortunes.available():
        pytest.skip(f"no fortunes at {fluid.datasets.FORTUNES}")
    (tmp_path / "np1").mkdir()
    (tmp_path / "np2").mkdir()
    single, = _run(repo_root, tmp_path / "np1", 1)
    ranks = _run(repo_root, tmp_path / "np2", NP)
    assert "crfw" in single and "emb" in single
    for name, want in single.items():
        for k in range(1, NP):  # the same bits on every rank
            assert ranks[k][name].tobytes() == ranks[0][name].tobytes(), name
        rel = np.linalg.norm(ranks[0][name] - want) / max(
            np.linalg.norm(want), 1e-30)
        assert rel <= 1e-6, (name, rel)
        assert not np.array_equal(want, 0 * want), name
