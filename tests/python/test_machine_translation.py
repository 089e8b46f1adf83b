"""examples/machine_translation.py (chapter 08's attention GRU
encoder-decoder, decoded by beam search in a While loop, on reversing
quotations of Debian's fortunes) at tiny sizes: with fluid.Executor in
one process and with fluid.MPIExecutor under `mpirun -np 2`. Both runs
train on the same global batches (2 ranks x 4 sentences against one
process on 8), in float64, so the np 2 run's parameters equal the single
process's to 1e-6 (only the summation order differs) and are bitwise
identical across the ranks; the validation loss falls, and decoding with
beam 1 gives the greedy (argmax) sentence of the trained model for every
validation source."""
import os
import re

import numpy as np
import pytest

import fluid
from test_mpi import NP, run_script

PER_RANK = 4
STEPS = 6
ARGS = ["--samples", "48", "--steps", str(STEPS), "--emb", "8",
        "--hidden", "8", "--vocab", "20", "--beam-size", "2",
        "--dtype", "float64", "--show", "1"]



def _run(repo_root, out_dir, world):
    script = os.path.join(repo_root, "examples", "machine_translation.py")
    cmd = [script] + ARGS + [
        "--save-params", str(out_dir),
        "--save-decoded", str(out_dir / "decoded.npz"), "--batch-size",
        str(PER_RANK if world > 1 else PER_RANK * NP)]
    r = run_script(cmd, world)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for rank in range(world):
        assert (f"rank {rank}: trained {STEPS} steps on {world} rank(s)"
                in r.stdout), out
    before = re.findall(r"before training: valid loss ([0-9.]+)", r.stdout)
    after = re.findall(rf"after {STEPS} steps: valid loss ([0-9.]+)",
                       r.stdout)
    assert len(before) == 1 and len(after) == 1, out  # rank 0 only
    assert float(after[0]) < float(before[0]), out
    for name in ("greedy", "beam 1", "beam 2"):
        rate = re.findall(rf"^{name}: exact match ([0-9.]+) on 12 ",
                          r.stdout, re.M)
        assert len(rate) == 1 and 0.0 <= float(rate[0]) <= 1.0, out
    assert "beam 1 equals greedy on 12 of 12" in r.stdout, out
    decoded = dict(np.load(out_dir / "decoded.npz"))
    assert list(decoded["beam1"]) == list(decoded["greedy"])
    assert any(len(g.split()) > 0 for g in decoded["greedy"])
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
    assert {"src_emb", "trg_emb", "att_q", "att_enc", "att_v",
            "dec_gru_w", "out_w", "enc_fw_w", "enc_bw_w"} <= set(single)
    assert set(ranks[0]) == set(single)
    for name, want in single.items():
        for k in range(1, NP):  # the same bits on every rank
            assert ranks[k][name].tobytes() == ranks[0][name].tobytes(), name
        rel = np.linalg.norm(ranks[0][name] - want) / max(
            np.linalg.norm(want), 1e-30)
        assert rel <= 1e-6, (name, rel)
        assert not np.array_equal(want, 0 * want), name
