"""Parameter sharding (stage 3) under mpirun -np 2 (mpi_shard_stage3.py):

- a sparse embedding table (is_sparse=True) stays whole on every rank
  while the rest of the model is sharded: the parameters (the table's
  included) within 1e-6 of the unsharded run, relative to the largest
  element, with Adam and with Momentum, L2 decay and global-norm
  clipping; at np 2 bit for bit those of stage 2; the table bitwise the
  same on both ranks; the memory plan and state_bytes count it whole;
- a tiny transformer language model with Adam, in float32 (within 1e-6
  of the unsharded run) and in bf16 (within the mixed-precision tests'
  1%).
In both, one more forward pass on the same batch gives both ranks the
same logits bit for bit (it reads every gathered parameter).
- a run resumed at stage 3 from a stage 3 checkpoint continues bit for
  bit: the same losses and the same parameters and optimizer state after
  four more steps as the run that went through."""
import numpy as np
import pytest

from fluid1x_common import load_results, mpirun

NP = 2


def check_ranks_alike(runs):
    """What every rank holds whole, and the logits of the same batch, are
    the same bits on every rank."""
    keys = sorted(k for k in runs[0] if k.startswith("extra/whole/"))
    for run in runs[1:]:
        for k in keys + ["extra/logits"]:
            assert run[k].tobytes() == runs[0][k].tobytes(), k
    return keys


def relative_error(have, want):
    return np.abs(have - want).max() / np.abs(want).max()


@pytest.mark.parametrize("opt", ["adam", "clipped"])
def test_sparse_embedding_stays_replicated(tmp_path, opt):
    r = mpirun("mpi_shard_stage3.py", NP, "sparse", opt, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = load_results(str(tmp_path), f"sparse_{opt}", NP)
    whole = check_ranks_alike(runs)
    assert "extra/whole/table" in whole
    got = runs[0]
    names = sorted(k[6:] for k in got if k.startswith("param/"))
    assert "table" in names and len(names) == 7
    for n in names:
        err = relative_error(got["param/" + n], got["extra/s0/" + n])
        assert err < 1e-6, f"{n}: {err:.2e}"
        # Two ranks' sums have one order: stage 3 computes what stage 2
        # does.
        assert got["param/" + n].tobytes() == \
            got["extra/s2/" + n].tobytes(), n
    np.testing.assert_allclose(got["losses"], got["extra/losses0"],
                               rtol=1e-6)
    # The table (250 x 16 float32) is counted whole: by state_bytes, over
    # the shards of the rest, and as a parameter by the memory plan.
    table = 250 * 16 * 4
    assert got["extra/plan_table"].tolist() == [table]
    assert table < got["extra/state_parameters"] < table + 4000


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_transformer_trains_like_unsharded(tmp_path, dtype):
    r = mpirun("mpi_shard_stage3.py", NP, "transformer", dtype, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = load_results(str(tmp_path), f"transformer_{dtype}", NP)
    check_ranks_alike(runs)
    got = runs[0]
    names = sorted(k[6:] for k in got if k.startswith("param/"))
    assert len(names) == 2 * 16 + 6
    for n in names:
        have, want = got["param/" + n], got["extra/s0/" + n]
        if dtype == "fp32":
            err = relative_error(have, want)
            assert err < 1e-6, f"{n}: {err:.2e}"
        else:
            err = np.linalg.norm(have - want) / np.linalg.norm(want)
            assert err < 1e-2, f"{n}: relative difference {err:.2e}"
    rtol = 1e-6 if dtype == "fp32" else 1e-2
    np.testing.assert_allclose(got["losses"], got["extra/losses0"],
                               rtol=rtol)
    assert got["losses"][-1] < got["losses"][0]


def test_resume_continues_bit_for_bit(tmp_path):
    r = mpirun("mpi_shard_stage3.py", NP, "resume", "adam", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    got = load_results(str(tmp_path), "resume", NP)[0]
    assert got["losses"].tobytes() == \
        got["extra/losses_resumed"].tobytes()
    names = sorted(k[6:] for k in got if k.startswith("param/"))
    # The parameters (the table among them) and Adam's state.
    assert "table" in names and len(names) > 14
    for n in names:
        assert got["param/" + n].tobytes() == \
            got["extra/resumed/" + n].tobytes(), n
