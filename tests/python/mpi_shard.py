#!/usr/bin/env python3
"""The sharded optimizer from Python equals the plain collective update.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_shard.py

Checks (every rank runs all of them; rank 0 prints one line per check):
  (a) fluid.MPIExecutor(shard_optimizer=2) on an mlp with Adam, each rank
      feeding its share of the global batch of 32 for 20 steps, ends with
      the parameters of fluid.MPIExecutor() (relative 1e-5, norm-wise),
      bitwise identical on all ranks, and holds 1/N of the optimizer state
      (state_bytes);
  (b) DistributeTranspilerConfig(shard_optimizer=1) in collective mode,
      Momentum, the transpiled program run with MPIExecutor: the same
      parameters as the plain collective run;
  (c) Momentum with GradientClipByGlobalNorm and L2Decay runs on the
      shards: the same parameters as the plain collective run;
  (d) Adam with GradientClipByNorm (a norm per parameter: those buckets
      are allreduced whole): the same parameters as the plain run;
  (e) MPIExecutor(shard_optimizer=2, overlap_gather=True), Momentum: a
      parameter fetched after each step, the scope's values read after
      the last, and an evaluation program run on the scope equal those of
      the sharded run without overlap (bitwise), which equals the plain
      run; the same through DistributeTranspilerConfig.overlap_gather.
Exits non-zero if any check fails.
"""
import sys
import traceback

import fluid
from mpi_equivalence import (GLOBAL_BATCH, Checks, compare, global_batch,
                             param_names, params_of, shard, summary)

L = fluid.layers
STEPS = 20


def build(optimizer, clip=None):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(image, 64, act="relu")
        h = L.fc(h, 32, act="relu")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 10), label))
        if clip is not None:
            fluid.clip.set_gradient_clip(clip)
        optimizer().minimize(loss)
    return main, startup, loss


def train(exe, main, startup, loss, scope, rank, world):
    exe.run(startup, scope=scope)
    for step in range(STEPS):
        x, y = shard(global_batch(step), rank, world)
        exe.run(main, feed={"image": x, "label": y}, fetch_list=[loss],
                scope=scope)


def run_checks():
    plain = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = plain.rank, plain.world_size
    assert GLOBAL_BATCH % world == 0
    c = Checks(rank, world)
    keep = []

    def scope():
        s = fluid.Scope()
        keep.append(s)
        return s

    def adam():
        return fluid.optimizer.Adam(0.01)

    def executor_option():
        main, startup, loss = build(adam)
        names = param_names(main)
        want_scope = scope()
        train(plain, main, startup, loss, want_scope, rank, world)
        sharded = fluid.MPIExecutor(fluid.CPUPlace(), shard_optimizer=2)
        got_scope = scope()
        train(sharded, main, startup, loss, got_scope, rank, world)
        sharded.check_consistency()
        full = plain.state_bytes(main, want_scope)["optimizer_state"]
        part = sharded.state_bytes(main, got_scope)["optimizer_state"]
        # Two moments per parameter, padded to N, and Adam's beta powers:
        # scalars per parameter, per bucket once sharded.
        if abs(part - full / world) > 64 * world:
            return f"optimizer state {part} bytes of {full} on {world} ranks"
        bad = compare(params_of(got_scope, names), params_of(want_scope, names))
        return bad or f"OK optimizer state {part} of {full} bytes per rank"

    def transpiler_config():
        def momentum():
            return fluid.optimizer.Momentum(0.1, 0.9)
        main, startup, loss = build(momentum)
        names = param_names(main)
        want_scope = scope()
        train(plain, main, startup, loss, want_scope, rank, world)
        config = fluid.DistributeTranspilerConfig()
        config.mode = "collective"
        config.shard_optimizer = 1
        t = fluid.DistributeTranspiler(config=config)
        t.transpile(rank, program=main, startup_program=startup,
                    trainers=world)
        got_scope = scope()
        exe = fluid.MPIExecutor(fluid.CPUPlace())
        train(exe, t.get_trainer_program(), t.get_startup_program(), loss,
              got_scope, rank, world)
        exe.check_consistency()
        return compare(params_of(got_scope, names),
                       params_of(want_scope, names))

    def sharded_equals_plain(optimizer, clip):
        main, startup, loss = build(optimizer, clip)
        names = param_names(main)
        want_scope = scope()
        train(plain, main, startup, loss, want_scope, rank, world)
        sharded = fluid.MPIExecutor(fluid.CPUPlace(), shard_optimizer=2)
        got_scope = scope()
        train(sharded, main, startup, loss, got_scope, rank, world)
        sharded.check_consistency()
        return compare(params_of(got_scope, names),
                       params_of(want_scope, names))

    def clipped_and_decayed():
        def momentum():
            return fluid.optimizer.Momentum(
                0.1, 0.9, regularization=fluid.regularizer.L2Decay(1e-3))
        return sharded_equals_plain(
            momentum, fluid.clip.GradientClipByGlobalNorm(0.2))

    def clipped_by_norm():
        return sharded_equals_plain(adam, fluid.clip.GradientClipByNorm(0.1))

    def train_fetching(exe, main, startup, loss, scope, fetch):
        exe.run(startup, scope=scope)
        fetched = []
        for step in range(STEPS):
            x, y = shard(global_batch(step), rank, world)
            fetched.append(exe.run(main, feed={"image": x, "label": y},
                                   fetch_list=[loss, fetch], scope=scope)[1])
        return fetched

    def overlapped_gathers():
        def momentum():
            return fluid.optimizer.Momentum(0.1, 0.9)
        main, startup, loss = build(momentum)
        test = main.clone(for_test=True)
        names = param_names(main)
        want_scope, got_scope, cfg_scope = scope(), scope(), scope()
        want = fluid.MPIExecutor(fluid.CPUPlace(), shard_optimizer=2)
        got = fluid.MPIExecutor(fluid.CPUPlace(), shard_optimizer=2,
                                overlap_gather=True)
        a = train_fetching(want, main, startup, loss, want_scope, names[0])
        b = train_fetching(got, main, startup, loss, got_scope, names[0])
        for step, (u, v) in enumerate(zip(a, b)):
            if u.tobytes() != v.tobytes():
                return f"'{names[0]}' fetched after step {step + 1} differs"
        x, y = global_batch(STEPS)
        evals = [exe.run(test, feed={"image": x, "label": y},
                         fetch_list=[loss], scope=s)[0]
                 for exe, s in ((want, want_scope), (got, got_scope))]
        if evals[0].tobytes() != evals[1].tobytes():
            return f"evaluation loss {evals[1]} against {evals[0]}"
        config = fluid.DistributeTranspilerConfig()
        config.mode = "collective"
        config.shard_optimizer = 2
        config.overlap_gather = True
        t = fluid.DistributeTranspiler(config=config)
        t.transpile(rank, program=main, startup_program=startup,
                    trainers=world)
        exe = fluid.MPIExecutor(fluid.CPUPlace())
        train(exe, t.get_trainer_program(), t.get_startup_program(), loss,
              cfg_scope, rank, world)
        got.check_consistency()
        exe.check_consistency()
        want_params = params_of(want_scope, names)
        for s in (got_scope, cfg_scope):
            for n, p in params_of(s, names).items():
                if p.tobytes() != want_params[n].tobytes():
                    return f"'{n}' differs from the run without overlap"
        plain_scope = scope()
        train(plain, main, startup, loss, plain_scope, rank, world)
        result = compare(params_of(got_scope, names),
                         params_of(plain_scope, names))
        # Fetching a parameter waited for the gathers; a step that fetches
        # none leaves them in flight, with the scope's fence to wait.
        x, y = shard(global_batch(STEPS), rank, world)
        for exe, s in ((want, want_scope), (got, got_scope)):
            exe.run(main, feed={"image": x, "label": y}, fetch_list=[loss],
                    scope=s)
        if not got_scope._core.has_fence():
            return "a step left no wait for its gathers with the scope"
        if want_scope._core.has_fence():
            return "a step without overlapped gathers left a wait"
        got_scope.find_var(names[0]).get_tensor().shape()  # a reader waits
        if got_scope._core.has_fence():
            return "reading a parameter left the gathers in flight"
        return result

    c.check("(a) MPIExecutor(shard_optimizer=2)", executor_option)
    c.check("(b) DistributeTranspilerConfig.shard_optimizer", transpiler_config)
    c.check("(c) global-norm clipping and L2 decay on shards",
            clipped_and_decayed)
    c.check("(d) clipping by each parameter's norm", clipped_by_norm)
    c.check("(e) overlapped parameter gathers", overlapped_gathers)
    return summary(c)


if __name__ == "__main__":
    try:
        rc = run_checks()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        rc = 1
    sys.stdout.flush()
    sys.exit(rc)
