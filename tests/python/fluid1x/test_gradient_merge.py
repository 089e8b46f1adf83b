"""fluid.optimizer.GradientMergeOptimizer and DistributedStrategy.
gradient_merge: k micro-steps of batch B train like one step of batch
k x B (learning-rate schedule, clipping and weight decay included), in one
process and under mpirun (mpi_gradient_merge.py), where the ranks stay
bitwise identical; fp16's loss scaling skips a merged step with an Inf in
any of its micro-steps; bad arguments are refused by name."""
import json
import os
import sys

import numpy as np
import pytest

import fluid
from fluid1x_common import (CLASSES, FEATURES, global_batch, load_results,
                            mpirun)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tools"))
import timeline_report  # noqa: E402

STEPS = 3  # merged steps


def build(seed=5, sparse=False):
    """A 16-32-4 classifier (with an embedding of the label when `sparse`);
    (main, startup, loss)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", shape=[FEATURES])
        y = fluid.layers.data("y", shape=[1], dtype="int64")
        h = fluid.layers.fc(x, 32, act="relu")
        if sparse:
            e = fluid.layers.embedding(y, size=[CLASSES, 32], is_sparse=True)
            h = h + fluid.layers.reshape(e, [-1, 32])
        logits = fluid.layers.fc(h, CLASSES)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, y))
    return main, startup, loss


def inner(kind="adam"):
    """An optimizer on a schedule that halves the rate every step, with
    global-norm clipping and L2 decay: what must see the merged gradient
    once per merged step."""
    lr = fluid.layers.exponential_decay(learning_rate=0.05, decay_steps=1,
                                        decay_rate=0.5, staircase=True)
    common = dict(regularization=fluid.regularizer.L2Decay(1e-3),
                  grad_clip=fluid.clip.GradientClipByGlobalNorm(1.0))
    if kind == "adam":
        return fluid.optimizer.Adam(learning_rate=lr, **common)
    return fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9, **common)


def train(k, kind="adam", avg=True, poison=None, amp=None, steps=STEPS):
    """`steps` global batches, each as k micro-batches; returns (parameters,
    losses, scope, main)."""
    with fluid.unique_name.guard():
        main, startup, loss = build()
        with fluid.program_guard(main, startup):
            opt = inner(kind)
            if amp is not None:
                opt = fluid.contrib.mixed_precision.decorate(opt, **amp)
            if k > 1:
                opt = fluid.optimizer.GradientMergeOptimizer(opt, k_steps=k,
                                                             avg=avg)
            opt.minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = []
    for step in range(steps):
        x, y = global_batch(step)
        per = len(x) // k
        for m in range(k):
            xm = x[m * per:(m + 1) * per].copy()
            if poison == (step, m):
                xm[0, 0] = 1e30
            (value,) = exe.run(main, feed={"x": xm, "y": y[m * per:(m + 1) *
                                                          per]},
                               fetch_list=[loss], scope=scope)
            losses.append(float(np.asarray(value).ravel()[0]))
    params = {p.name: np.array(scope.find_var(p.name).get_tensor())
              for p in main.all_parameters()}
    return params, losses, scope, main


def rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


@pytest.mark.parametrize("kind", ["adam", "momentum"])
def test_k_micro_steps_train_like_one_k_times_larger_batch(kind):
    got, _, scope, main = train(4, kind)
    want, _, _, _ = train(1, kind)
    for name in want:
        assert rel(got[name], want[name]) < 1e-6, name
    # The schedule advanced once per merged step (3), not per micro-step.
    counter = np.array(scope.find_var("@LR_DECAY_COUNTER@").get_tensor())
    assert counter.ravel().tolist() == [STEPS - 1]
    step = np.array(scope.find_var("@GRAD_MERGE_STEP@").get_tensor())
    assert step.ravel().tolist() == [0]
    types = [op.type for op in main.global_block().ops]
    assert types[0] == "gradient_merge_step"
    accumulators = [v.name for v in main.list_vars()
                    if v.name.endswith("@GRAD_MERGE")]
    assert len(accumulators) == 4
    assert all(main.global_block().var(a).persistable for a in accumulators)


def test_sum_instead_of_mean():
    """avg=False sums the micro-steps' gradients: with SGD at rate lr / k
    the same as the mean at rate lr."""
    def run(avg, lr):
        with fluid.unique_name.guard():
            main, startup, loss = build()
            with fluid.program_guard(main, startup):
                fluid.optimizer.GradientMergeOptimizer(
                    fluid.optimizer.SGD(learning_rate=lr), k_steps=2,
                    avg=avg).minimize(loss)
        scope = fluid.Scope()
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup, scope=scope)
        x, y = global_batch(0)
        for m in range(2):
            exe.run(main, feed={"x": x[m * 8:(m + 1) * 8],
                                "y": y[m * 8:(m + 1) * 8]}, scope=scope)
        return {p.name: np.array(scope.find_var(p.name).get_tensor())
                for p in main.all_parameters()}
    summed, mean = run(False, 0.05), run(True, 0.1)
    for name in mean:
        np.testing.assert_allclose(summed[name], mean[name], rtol=1e-5,
                                   atol=1e-7)


def test_fp16_inf_in_one_micro_step_skips_the_merged_step():
    amp = {"init_loss_scaling": 64.0, "decr_every_n_nan_or_inf": 1,
           "decr_ratio": 0.5, "incr_every_n_steps": 100}
    # Merged step 1 has an Inf in its second micro-step: it is skipped, so
    # the parameters after it are those after merged step 0.
    one, _, _, _ = train(2, "momentum", amp=amp, steps=1)
    got, losses, scope, _ = train(2, "momentum", amp=amp, steps=2,
                                  poison=(1, 1))
    assert not np.isfinite(losses[3])
    for name in one:
        assert got[name].tobytes() == one[name].tobytes(), name
    assert np.array(scope.find_var("loss_scaling").get_tensor()).tolist() \
        == [32.0]
    assert np.array(scope.find_var("found_infinite").get_tensor()).tolist() \
        == [1]


def test_k_steps_one_is_plain_training():
    got, _, _, main = train(1)
    assert "gradient_merge_step" not in [op.type for op in
                                         main.global_block().ops]
    main, startup, loss = build()
    with fluid.program_guard(main, startup):
        fluid.optimizer.GradientMergeOptimizer(
            fluid.optimizer.SGD(0.1), k_steps=1).minimize(loss)
    assert "gradient_merge_step" not in [op.type for op in
                                         main.global_block().ops]


@pytest.mark.parametrize("k", [0, -2, 2.5, True, "4"])
def test_bad_k_steps_is_refused_naming_it(k):
    with pytest.raises(ValueError, match=f"k_steps must be an integer >= 1, "
                       f"got {k!r}".replace("(", r"\(").replace(")", r"\)")):
        fluid.optimizer.GradientMergeOptimizer(fluid.optimizer.SGD(0.1),
                                               k_steps=k)


def test_bad_inner_optimizer_and_avg_are_refused():
    with pytest.raises(TypeError, match="inner_optimizer must be an "
                                        "optimizer"):
        fluid.optimizer.GradientMergeOptimizer(None, k_steps=2)
    with pytest.raises(TypeError, match="avg must be True or False"):
        fluid.optimizer.GradientMergeOptimizer(fluid.optimizer.SGD(0.1),
                                               k_steps=2, avg="yes")


def test_sparse_embedding_is_refused_naming_the_option():
    main, startup, loss = build(sparse=True)
    with fluid.program_guard(main, startup):
        opt = fluid.optimizer.GradientMergeOptimizer(
            fluid.optimizer.SGD(0.1), k_steps=2)
        with pytest.raises(Exception, match="is_sparse=False"):
            opt.minimize(loss)


def test_strategy_fields():
    s = fluid.DistributedStrategy()
    assert s.gradient_merge is False
    assert s.gradient_merge_configs == {"k_steps": 1, "avg": True}
    s.gradient_merge = True
    s.gradient_merge_configs = {"k_steps": 4, "avg": False}
    assert s.gradient_merge_configs == {"k_steps": 4, "avg": False}
    assert "gradient_merge" in s.passes()
    with pytest.raises(Exception, match="k_steps.*0"):
        s.gradient_merge_configs = {"k_steps": 0}


def test_strategy_form_trains_like_the_optimizer(tmp_path):
    """DistributedStrategy.gradient_merge under mpirun (np 1) equals
    GradientMergeOptimizer in one process."""
    r = mpirun("mpi_gradient_merge.py", 1, "strategy", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    (run,) = load_results(str(tmp_path), "strategy", 1)
    want, _, _, _ = train(4, "momentum")
    got = sorted(k for k in run if k.startswith("param/"))
    assert len(got) == len(want)
    for k, name in zip(got, sorted(want)):
        assert rel(run[k], want[name]) < 1e-6, k


@pytest.mark.parametrize("mode", ["optimizer", "sharded", "bf16", "fleet"])
def test_np2_trains_like_one_big_batch(tmp_path, mode):
    """np 2: GradientMergeOptimizer with MPIExecutor, the strategy form
    with sharding stage 2, bf16, and fleet's collective mode with the
    strategy's gradient_merge: every rank bitwise the same, and the
    same training as one process at k = 1 on the global batch (to 1e-6;
    bf16 within its tolerance)."""
    r = mpirun("mpi_gradient_merge.py", 2, mode, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = load_results(str(tmp_path), mode, 2)
    names = sorted(k for k in runs[0] if k.startswith("param/"))
    assert names
    for k in names:
        assert runs[1][k].tobytes() == runs[0][k].tobytes(), k
        want = runs[0]["ref/" + k[6:]]
        tol = 2e-2 if mode == "bf16" else 1e-6
        assert rel(runs[0][k], want) < tol, (k, rel(runs[0][k], want))
    if mode != "optimizer":
        return
    # Collectives ran on merged steps only (every 4th run), on both ranks.
    with open(tmp_path / "trace.json", encoding="utf-8") as f:
        trace = json.load(f)
    ranks = timeline_report.by_rank(trace)
    assert sorted(ranks) == [0, 1]
    for rank, r in ranks.items():
        steps = sorted({e["args"]["step"] for e in r["collectives"]})
        assert [s for s in steps if s > 1] == [4, 8, 12], (rank, steps)


def test_np2_resume_mid_accumulation(tmp_path):
    """np 2: the persistables after 6 micro-steps of k = 4 (the
    accumulators averaged over the ranks by sync_running_stats, as before a
    checkpoint), loaded into a fresh executor, continue to the bit of the
    run that wrote them."""
    r = mpirun("mpi_gradient_merge.py", 2, "resume", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = load_results(str(tmp_path), "resume", 2)
    for run in runs:
        for k in (k for k in run if k.startswith("param/")):
            assert run[k].tobytes() == run["ref/" + k[6:]].tobytes(), k


def test_decorating_the_merged_optimizer_is_refused_saying_what_to_do():
    """Mixed precision rewrites the backward pass, so it comes first:
    decorate(GradientMergeOptimizer(opt)) is refused, naming the order."""
    main, startup, loss = build()
    with fluid.program_guard(main, startup):
        opt = fluid.contrib.mixed_precision.decorate(
            fluid.optimizer.GradientMergeOptimizer(fluid.optimizer.SGD(0.1),
                                                   k_steps=2),
            use_bf16=True)
        with pytest.raises(Exception, match=r"GradientMergeOptimizer\("
                                            r"decorate\(opt\), k\)"):
            opt.minimize(loss)
