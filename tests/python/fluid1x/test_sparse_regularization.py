"""Weight decay and gradient clipping of a sparse gradient
(embedding(is_sparse=True)), as Fluid 1.x applies them: to the rows the
gradient touches, each row once (its copies merged first).

1. The table: 10 combinations of fluid.regularizer (on the optimizer or on
   the table's ParamAttr) and fluid.clip (set_gradient_clip or ParamAttr),
   each trained for STEPS steps with SGD, Momentum, Adam, lazy Adam and
   Adagrad, sparse against dense (embedding is_sparse=False with the same
   regularizer and clip, same initial weights, same batches). Every batch
   looks up each row of TOUCHED (some twice, in a shuffled order) and no
   other row, so that the touched rows are the same at every step. Compared:
     - the touched rows of the table, the fc weight and the fc bias: equal
       up to float64 rounding (rtol 1e-9): a dense gradient is zero on the
       untouched rows, so clipping it (by value, by its norm, in the
       global norm) is clipping the sparse rows, and its decay on the
       touched rows is the sparse decay;
     - the untouched rows: exactly their initial values in the sparse run
       (no gradient, no decay: Fluid decays only the rows a sparse
       gradient holds), while the dense run moves every one of them
       (checked where there is a decay, to show the difference is real);
     - each clip and decay changes the result (the run without it ends
       elsewhere), so none of them passes by doing nothing.
2. PyTorch 1.13 as the oracle over 3 SGD steps whose batches touch
   different rows: nn.Embedding(sparse=True), its gradient coalesced, the
   clip and an explicit per-row decay applied to the coalesced rows, then
   W[rows] -= lr * g (rtol 1e-10).
3. Errors: an optimizer without a sparse path names the parameter and what
   to use instead.
4. Under mpirun -np 2 (mpi_sparse_regularization.py): the rows are reduced
   first, then merged, clipped and decayed, so 2 ranks x B equals 1 rank x
   2B, and the ranks' parameters are bitwise identical.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import fluid

L = fluid.layers
R = fluid.regularizer
C = fluid.clip

HERE = os.path.dirname(os.path.abspath(__file__))
MPI_SCRIPT = os.path.join(HERE, "mpi_sparse_regularization.py")

V, D, CLASSES = 24, 4, 3
TOUCHED = [1, 3, 4, 7, 10, 15, 16]
UNTOUCHED = [r for r in range(V) if r not in TOUCHED]
STEPS = 4
COEFF = 0.05

_SCOPES = []  # scopes outlive the executors bound to them


def combos():
    """The 10 combinations: (regularization=, ParamAttr regularizer,
    set_gradient_clip's clip, ParamAttr gradient_clip)."""
    return {
        "l2_optimizer": dict(reg=R.L2Decay(COEFF)),
        "l1_optimizer": dict(reg=R.L1Decay(COEFF)),
        "l2_param_attr": dict(attr_reg=R.L2Decay(COEFF)),
        "l1_param_attr": dict(attr_reg=R.L1Decay(COEFF)),
        "clip_by_value": dict(clip=C.GradientClipByValue(0.004)),
        "clip_by_norm": dict(clip=C.GradientClipByNorm(0.01)),
        "clip_by_global_norm": dict(clip=C.GradientClipByGlobalNorm(0.05)),
        "l2_attr_over_l1_optimizer": dict(reg=R.L1Decay(COEFF),
                                          attr_reg=R.L2Decay(2 * COEFF)),
        "global_norm_and_l2": dict(clip=C.GradientClipByGlobalNorm(0.05),
                                   reg=R.L2Decay(COEFF)),
        "attr_clip_by_norm_and_l1": dict(
            attr_clip=C.GradientClipByNorm(0.01),
            attr_reg=R.L1Decay(COEFF)),
    }


OPTIMIZERS = {
    "sgd": lambda reg: fluid.optimizer.SGD(0.5, regularization=reg),
    "momentum": lambda reg: fluid.optimizer.Momentum(
        0.3, momentum=0.9, regularization=reg),
    "adam": lambda reg: fluid.optimizer.Adam(0.05, regularization=reg),
    "lazy_adam": lambda reg: fluid.optimizer.Adam(
        0.05, regularization=reg, lazy_mode=True),
    "adagrad": lambda reg: fluid.optimizer.Adagrad(0.3, regularization=reg),
}


def initial_params():
    rng = np.random.RandomState(5)
    return {"emb": rng.uniform(-0.5, 0.5, (V, D)),
            "fc_w": rng.uniform(-0.8, 0.8, (D, CLASSES)),
            "fc_b": rng.uniform(-0.1, 0.1, (CLASSES,))}


def build(is_sparse, optimizer, reg=None, attr_reg=None, clip=None,
          attr_clip=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = L.data("ids", [1], dtype="int64")
        label = L.data("label", [1], dtype="int64")
        emb = L.embedding(ids, [V, D], is_sparse=is_sparse, dtype="float64",
                          param_attr=fluid.ParamAttr(
                              name="emb", regularizer=attr_reg,
                              gradient_clip=attr_clip))
        logits = L.fc(emb, CLASSES, param_attr=fluid.ParamAttr(name="fc_w"),
                      bias_attr=fluid.ParamAttr(name="fc_b"))
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        if clip is not None:
            C.set_gradient_clip(clip)
        OPTIMIZERS[optimizer](reg).minimize(loss)
    return main, startup


def batch(step, rows=TOUCHED, extra=4):
    """Every row of `rows` once, `extra` of them again, shuffled."""
    rng = np.random.RandomState(100 + step)
    ids = np.array(list(rows) + list(rng.choice(rows, extra)), np.int64)
    rng.shuffle(ids)
    labels = rng.randint(0, CLASSES, size=len(ids))
    return ids.reshape(-1, 1), labels.reshape(-1, 1).astype(np.int64)


def train(main, startup, batches):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    for name, value in initial_params().items():
        scope.set(name, value)
    for ids, labels in batches:
        exe.run(main, feed={"ids": ids, "label": labels}, scope=scope)
    return {n: np.array(scope.get(n), copy=True) for n in initial_params()}


def run(is_sparse, optimizer, **combo):
    return train(*build(is_sparse, optimizer, **combo),
                 [batch(s) for s in range(STEPS)])


def assert_close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12,
                               err_msg=what)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("name", sorted(combos()))
def test_sparse_equals_dense_on_touched_rows(name, optimizer):
    combo = combos()[name]
    sparse = run(True, optimizer, **combo)
    dense = run(False, optimizer, **combo)
    init = initial_params()["emb"]
    assert_close(sparse["emb"][TOUCHED], dense["emb"][TOUCHED],
                 f"{name}/{optimizer}: touched rows")
    for p in ("fc_w", "fc_b"):
        assert_close(sparse[p], dense[p], f"{name}/{optimizer}: {p}")
    np.testing.assert_array_equal(sparse["emb"][UNTOUCHED], init[UNTOUCHED],
                                  err_msg="untouched rows changed")
    decayed = "reg" in combo or "attr_reg" in combo
    if decayed:  # the dense run decays them: Fluid's sparse run does not
        moved = dense["emb"][UNTOUCHED] != init[UNTOUCHED]
        assert np.all(np.any(moved, axis=1)), "dense: untouched rows kept"

    # Each clip and decay bites: without it the run ends elsewhere.
    for key in combo:
        without = {k: v for k, v in combo.items() if k != key}
        other = run(True, optimizer, **without)
        assert np.abs(other["emb"][TOUCHED] -
                      sparse["emb"][TOUCHED]).max() > 1e-6, \
            f"{name}/{optimizer}: {key} changes nothing"


# ---- PyTorch as the oracle: SGD, rows touched differ from step to step ----

def torch_params():
    return {k: torch.tensor(v) for k, v in initial_params().items()}


def f32(x):
    """x as the program holds it: clip bounds and decay coefficients are
    float32 attributes."""
    return float(np.float32(x))


def clip_grads(grads, clip, names):
    """grads: name -> dense tensor or (rows, values); clip applied to the
    entries of `names` (values only for sparse ones)."""
    def values(g):
        return g[1] if isinstance(g, tuple) else g

    def put(name, v):
        g = grads[name]
        grads[name] = (g[0], v) if isinstance(g, tuple) else v

    if isinstance(clip, C.GradientClipByValue):
        for n in names:
            put(n, values(grads[n]).clamp(f32(clip.min), f32(clip.max)))
    elif isinstance(clip, C.GradientClipByNorm):
        for n in names:
            v = values(grads[n])
            norm = float(v.norm())
            if norm > f32(clip.clip_norm):
                put(n, v * (f32(clip.clip_norm) / norm))
    else:
        norm = float(torch.sqrt(sum(values(grads[n]).pow(2).sum()
                                    for n in names)))
        scale = f32(clip.clip_norm) / max(norm, f32(clip.clip_norm))
        for n in names:
            put(n, values(grads[n]) * scale)


def decay(reg, param):
    coeff = f32(reg._regularization_coeff)
    if isinstance(reg, R.L1DecayRegularizer):
        return coeff * torch.sign(param)
    return coeff * param


def torch_sgd(combo, batches, lr=0.5):
    p = torch_params()
    emb = torch.nn.Embedding(V, D, sparse=True).double()
    for ids, labels in batches:
        with torch.no_grad():
            emb.weight.copy_(p["emb"])
        w = p["fc_w"].clone().requires_grad_()
        b = p["fc_b"].clone().requires_grad_()
        emb.zero_grad()
        logits = emb(torch.tensor(ids[:, 0])) @ w + b
        torch.nn.functional.cross_entropy(
            logits, torch.tensor(labels[:, 0])).backward()
        sg = emb.weight.grad.coalesce()
        grads = {"emb": (sg.indices()[0], sg.values()),
                 "fc_w": w.grad, "fc_b": b.grad}
        if combo.get("clip") is not None:
            clip_grads(grads, combo["clip"], ["emb", "fc_w", "fc_b"])
        if combo.get("attr_clip") is not None:
            clip_grads(grads, combo["attr_clip"], ["emb"])
        regs = {"emb": combo.get("attr_reg") or combo.get("reg"),
                "fc_w": combo.get("reg"), "fc_b": combo.get("reg")}
        rows, values = grads.pop("emb")
        if regs["emb"] is not None:
            values = values + decay(regs["emb"], p["emb"][rows])
        p["emb"] = p["emb"].clone()
        p["emb"][rows] -= lr * values
        for n, g in grads.items():
            if regs[n] is not None:
                g = g + decay(regs[n], p[n])
            p[n] = p[n] - lr * g
    return {k: v.numpy() for k, v in p.items()}


@pytest.mark.parametrize("name", sorted(combos()))
def test_sgd_matches_torch_sparse_embedding(name):
    combo = combos()[name]
    rows = [[1, 3, 4, 7], [3, 9, 10, 20, 21], [0, 4, 23]]
    batches = [batch(s, r, extra=2) for s, r in enumerate(rows)]
    got = train(*build(True, "sgd", **combo), batches)
    want = torch_sgd(combo, batches)
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-10, atol=1e-13,
                                   err_msg=f"{name}: {n}")
    never = [r for r in range(V) if not any(r in rs for rs in rows)]
    np.testing.assert_array_equal(got["emb"][never],
                                  initial_params()["emb"][never])


# ---- what cannot work, and what the program holds ----

@pytest.mark.parametrize("opt", [
    lambda: fluid.optimizer.RMSProp(0.1, regularization=R.L2Decay(0.1)),
    lambda: fluid.optimizer.Adamax(0.1),
    lambda: fluid.optimizer.DecayedAdagrad(0.1),
    lambda: fluid.optimizer.Adadelta(0.1),
    lambda: fluid.optimizer.LarsMomentum(0.1, 0.9)])
def test_optimizer_without_sparse_path_names_the_parameter(opt):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = L.data("ids", [1], dtype="int64")
        emb = L.embedding(ids, [V, D], is_sparse=True, param_attr="table")
        loss = L.mean(L.fc(emb, 1))
        with pytest.raises(ValueError) as e:
            opt().minimize(loss)
    msg = str(e.value)
    assert "parameter 'table' has a sparse gradient" in msg, msg
    assert "use SGD, Momentum, Adam or Adagrad, or is_sparse=False" in msg


def test_rows_merged_once_before_clip_and_decay():
    main, _ = build(True, "sgd", reg=R.L2Decay(COEFF),
                    clip=C.GradientClipByGlobalNorm(0.05))
    types = [op["type"] for op in main.ops()
             if "emb@GRAD" in sum(op["inputs"].values(), [])]
    assert types == ["merge_selected_rows", "squared_l2_norm",
                     "elementwise_mul", "sparse_weight_decay", "sgd"], types
    dense, _ = build(False, "sgd", reg=R.L2Decay(COEFF),
                     clip=C.GradientClipByGlobalNorm(0.05))
    assert "merge_selected_rows" not in [op["type"] for op in dense.ops()]
    plain, _ = build(True, "sgd")
    assert "merge_selected_rows" not in [op["type"] for op in plain.ops()]


# ---- 2 ranks ----

def test_two_ranks_reduce_rows_before_clip_and_decay(tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
           "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS", sys.executable,
           MPI_SCRIPT, "--out", str(tmp_path)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "FAIL" not in r.stdout, out
    cases = [line for line in r.stdout.splitlines()
             if line.startswith("PASS ")]
    assert len(cases) == 16, out
    # Each rank wrote its parameters after every case: bitwise the same.
    names = sorted(os.listdir(tmp_path / "rank0"))
    assert len(names) == 16, names
    for n in names:
        a = (tmp_path / "rank0" / n).read_bytes()
        b = (tmp_path / "rank1" / n).read_bytes()
        assert a == b, f"{n}: the ranks' parameters differ"
