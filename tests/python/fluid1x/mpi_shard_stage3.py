"""Parameter sharding (stage 3) of a sparse embedding and of a transformer
under mpirun (run by test_shard_stage3.py):

  mpi_shard_stage3.py sparse OPT OUT
      8 steps of a classifier that looks up a sparse embedding table
      (is_sparse=True, 4000 elements) and feeds it, with dense features,
      to a 3-layer mlp; OPT is adam, or clipped (Momentum with L2 decay
      and global-norm clipping, whose chains run on the table whole and
      on the shards). Unsharded, at stage 2 and at stage 3 (parameters of
      100 elements or more kept as shards, the table replicated).
  mpi_shard_stage3.py transformer DTYPE OUT
      6 Adam steps of a tiny pre-LN transformer language model (width 16,
      2 heads, 2 blocks, 8 tokens) in DTYPE (fp32 | bf16), unsharded and
      at stage 3.

  mpi_shard_stage3.py resume adam OUT
      The sparse classifier with Adam at stage 3: 8 steps with a
      checkpoint after step 4 and at the end; then a new executor and
      scope resume from the first checkpoint and run steps 5 to 8. Saves
      both runs' losses of those steps and the persistables (parameters
      and optimizer state) of both final checkpoints, read back in one
      process.

Each run saves its losses; a stage 3 run also its parameters as its
checkpoint holds them (saved collectively in the full form, read back in
one process on rank 0), the parameters every rank holds whole (the
replicated ones, the table among them), and the logits of one more
forward pass on the same batch on every rank (which read every gathered
parameter). The sparse runs save the memory plan's and state_bytes'
count of the table too."""
import os
import sys

import numpy as np

import fluid
from fluid1x_common import rank_and_world, rank_batch, save_results

L = fluid.layers
VOCAB, EMB = 250, 16  # the table: 4000 elements, above the threshold
SEQ, WIDTH, HEADS, BLOCKS, CHARS = 8, 16, 2, 2, 20


def sparse_model(opt_name):
    """(feeds, logits, loss) of the classifier with its optimizer."""
    x = L.data("x", shape=[16])
    ids = L.data("ids", shape=[1], dtype="int64")
    y = L.data("y", shape=[1], dtype="int64")
    emb = L.embedding(ids, size=[VOCAB, EMB], is_sparse=True,
                      param_attr="table")
    h = L.concat([x, L.reshape(emb, [-1, EMB])], axis=1)
    h = L.fc(h, 31, act="relu")
    h = L.fc(h, 7, act="relu")
    logits = L.fc(h, 4)
    loss = L.mean(L.softmax_with_cross_entropy(logits, y))
    if opt_name == "adam":
        opt = fluid.optimizer.Adam(learning_rate=0.01)
    else:
        opt = fluid.optimizer.Momentum(
            learning_rate=0.1, momentum=0.9,
            regularization=fluid.regularizer.L2Decay(1e-3),
            grad_clip=fluid.clip.GradientClipByGlobalNorm(0.5))
    opt.minimize(loss)
    return ["x", "ids", "y"], logits, loss


def sparse_feed(step, rank, world):
    samples = rank_batch(step, rank, world)
    x = np.stack([s[0] for s in samples])
    ids = (np.abs(x[:, :1]) * 40).astype(np.int64) % VOCAB
    return {"x": x, "ids": ids, "y": np.stack([s[1] for s in samples])}


def block(x, i):
    """A pre-LN block: causal multi-head attention, then a GELU
    feed-forward part, each with a residual add."""
    p = f"b{i}."
    h = L.layer_norm(x, begin_norm_axis=2, param_attr=p + "ln1.w",
                     bias_attr=p + "ln1.b")
    qkv = [L.fc(h, WIDTH, num_flatten_dims=2, param_attr=p + n + ".w",
                bias_attr=p + n + ".b") for n in ("q", "k", "v")]
    q, k, v = [L.transpose(L.reshape(t, [-1, SEQ, HEADS, WIDTH // HEADS]),
                           [0, 2, 1, 3]) for t in qkv]
    scores = L.matmul(q, k, transpose_y=True,
                      alpha=(WIDTH // HEADS) ** -0.5)
    mask = np.triu(np.full((SEQ, SEQ), -1e4, np.float32), 1)
    scores = L.elementwise_add(scores, L.assign(mask))
    a = L.matmul(L.softmax(scores), v)
    a = L.reshape(L.transpose(a, [0, 2, 1, 3]), [-1, SEQ, WIDTH])
    x = L.elementwise_add(x, L.fc(a, WIDTH, num_flatten_dims=2,
                                  param_attr=p + "o.w", bias_attr=p + "o.b"))
    h = L.layer_norm(x, begin_norm_axis=2, param_attr=p + "ln2.w",
                     bias_attr=p + "ln2.b")
    h = L.fc(h, 4 * WIDTH, num_flatten_dims=2, act="gelu",
             param_attr=p + "ff1.w", bias_attr=p + "ff1.b")
    return L.elementwise_add(x, L.fc(h, WIDTH, num_flatten_dims=2,
                                     param_attr=p + "ff2.w",
                                     bias_attr=p + "ff2.b"))


def transformer_model(_):
    """(feeds, logits, loss) of the language model with Adam."""
    ids = L.data("ids", [SEQ, 1], dtype="int64")
    nxt = L.data("next_ids", [SEQ, 1], dtype="int64")
    x = L.reshape(L.embedding(ids, [CHARS, WIDTH], param_attr="tok"),
                  [-1, SEQ, WIDTH])
    x = L.elementwise_add(x, L.create_parameter([SEQ, WIDTH], "float32",
                                                name="pos"))
    for i in range(BLOCKS):
        x = block(x, i)
    x = L.layer_norm(x, begin_norm_axis=2, param_attr="lnf.w",
                     bias_attr="lnf.b")
    logits = L.fc(x, CHARS, num_flatten_dims=2, param_attr="head.w",
                  bias_attr="head.b")
    loss = L.mean(L.softmax_with_cross_entropy(
        L.reshape(logits, [-1, CHARS]), L.reshape(nxt, [-1, 1])))
    fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return ["ids", "next_ids"], logits, loss


def transformer_feed(step, rank, world):
    """4 windows per rank of a learnable text: the characters in a cycle."""
    text = np.arange(4096) % CHARS
    rng = np.random.RandomState(100 + step)
    starts = rng.randint(0, len(text) - SEQ - 1, 4 * world)[4 * rank:
                                                            4 * rank + 4]
    win = np.stack([text[s:s + SEQ + 1] for s in starts]).astype(np.int64)
    return {"ids": win[:, :SEQ, None], "next_ids": win[:, 1:, None]}


def build(model, arg):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        feeds, logits, loss = model(arg)
    return main, startup, feeds, logits, loss


def strategy_for(stage, dtype="fp32"):
    s = fluid.DistributedStrategy()
    if dtype == "bf16":
        s.amp = True
        s.amp_configs = {"dtype": "bf16"}
    if stage:
        s.sharding = True
        s.sharding_configs = {"stage": stage,
                              "param_persistence_threshold": 100}
    return s


def from_checkpoint(exe, model, arg, main, scope, out, tag):
    """Every parameter as the stage 3 checkpoint holds it (rank 0)."""
    rank, _ = rank_and_world()
    ckpt = os.path.join(out, f"{tag}.ckpt.rank{rank}")
    fluid.io.save_persistables(exe, ckpt, main, scope=scope)
    plain, plain_startup, _, _, _ = build(model, arg)
    one = fluid.Scope()
    single = fluid.Executor(fluid.CPUPlace())
    single.run(plain_startup, scope=one)
    if rank == 0:
        fluid.io.load_persistables(single, ckpt, plain, scope=one)
    return {p.name: np.array(one.find_var(p.name).get_tensor())
            for p in plain.all_parameters()}


def train(model, arg, feed, steps, strategy, out, tag):
    """(losses, parameters, extra) of one run."""
    rank, world = rank_and_world()
    main, startup, _, logits, loss = build(model, arg)
    scope = fluid.Scope()
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    exe.run(startup, scope=scope)
    losses = []
    for step in range(steps):
        (value,) = exe.run(main, feed=feed(step, rank, world),
                           fetch_list=[loss], scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
    extra = {}
    stage = strategy.sharding_configs["stage"] if strategy.sharding else 0
    if stage != 3:
        return losses, {p.name: np.array(scope.find_var(p.name).get_tensor())
                        for p in main.all_parameters()}, extra
    params = from_checkpoint(exe, model, arg, main, scope, out, tag)
    # Every rank: the parameters it holds whole, and logits of the same
    # batch (rank 0's), which read every gathered parameter.
    transpiled = exe.transpiled_program(main).global_block()
    for p in main.all_parameters():
        if transpiled.var(p.name).persistable:
            extra["whole/" + p.name] = np.array(
                scope.find_var(p.name).get_tensor())
    (value,) = exe.run(main, feed=feed(steps, 0, world),
                       fetch_list=[logits], scope=scope)
    extra["logits"] = np.array(value)
    if model is sparse_model:
        extra["state_parameters"] = exe.state_bytes(main, scope)["parameters"]
        plan = fluid.memory_plan(main, strategy, nranks=world, batch_size=8,
                                 startup_program=startup)
        extra["plan_table"] = [b for n, k, b in plan["largest"]
                               if n == "table" and k == "parameter"]
    return losses, params, extra


def read_back(path, arg):
    """Every persistable of the sparse classifier's checkpoint `path`, read
    in one process (rank 0; empty on the others)."""
    rank, _ = rank_and_world()
    plain, plain_startup, _, _, _ = build(sparse_model, arg)
    one = fluid.Scope()
    single = fluid.Executor(fluid.CPUPlace())
    single.run(plain_startup, scope=one)
    if rank != 0:
        return {}
    fluid.io.load_persistables(single, path, plain, scope=one)
    return {v.name: np.array(one.find_var(v.name).get_tensor())
            for v in plain.list_vars() if v.persistable}


def resumed(arg, out):
    """(losses of steps 5-8 and final persistables) of the run through and
    of the run resumed from its checkpoint after step 4."""
    rank, world = rank_and_world()
    results = []
    for resume in (False, True):
        main, startup, _, _, loss = build(sparse_model, arg)
        scope = fluid.Scope()
        exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy_for(3))
        exe.run(startup, scope=scope)
        first = 0
        if resume:  # before the first run: it starts from the scope
            fluid.io.load_persistables(exe, os.path.join(out, "at4"), main,
                                       scope=scope)
            first = 4
        losses = []
        for step in range(first, 8):
            (value,) = exe.run(main, feed=sparse_feed(step, rank, world),
                               fetch_list=[loss], scope=scope)
            losses.append(float(np.asarray(value).ravel()[0]))
            if step == 3 and not resume:
                fluid.io.save_persistables(exe, os.path.join(out, "at4"),
                                           main, scope=scope)
        end = os.path.join(out, f"end_resumed{int(resume)}")
        fluid.io.save_persistables(exe, end, main, scope=scope)
        results.append((losses[-4:], read_back(end, arg)))
    return results


def main(argv):
    mode, arg, out = argv[1], argv[2], argv[3]
    rank, _ = rank_and_world()
    if mode == "resume":
        (losses, through), (again, back) = resumed(arg, out)
        extra = {"losses_resumed": again}
        extra.update({"resumed/" + k: v for k, v in back.items()})
        save_results(out, "resume", losses, through, **extra)
        print(f"rank {rank}: ok: resume")
        return
    if mode == "sparse":
        runs = {stage: train(sparse_model, arg, sparse_feed, 8,
                             strategy_for(stage), out, arg)
                for stage in (0, 2, 3)}
    else:
        runs = {stage: train(transformer_model, None, transformer_feed, 6,
                             strategy_for(stage, arg), out, arg)
                for stage in (0, 3)}
    losses, params, extra = runs[3]
    for stage in runs:
        if stage == 3:
            continue
        extra[f"losses{stage}"] = runs[stage][0]
        for name, value in runs[stage][1].items():
            extra[f"s{stage}/{name}"] = value
    save_results(out, f"{mode}_{arg}", losses, params, **extra)
    print(f"rank {rank}: ok: {mode} {arg}")


if __name__ == "__main__":
    main(sys.argv)
