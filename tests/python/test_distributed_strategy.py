"""fluid.DistributedStrategy: the one place for every distribution setting.
Fields by their proto names, Fleet's names as properties, errors naming the
field, the text format round trip, and the front ends that write it
(MPIExecutor, DistributeTranspilerConfig) with the keyword arguments of
earlier releases still working."""
import numpy as np
import pytest

import fluid

L = fluid.layers


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup):
        x = L.data("x", [8])
        label = L.data("label", [1], dtype="int64")
        logits = L.fc(L.fc(x, 16, act="relu"), 3)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Momentum(0.1, 0.9).minimize(loss)
    return main, startup, loss


def test_defaults_come_from_the_proto():
    s = fluid.DistributedStrategy()
    assert s.bucket_bytes == 4 << 20
    assert s.fuse_grad_size_in_MB == 4.0
    assert s.overlap_allreduce is True
    assert s.sync_batch_norm is False
    assert s.sharding is False
    assert s.sharding_configs == {"stage": 2, "overlap_gather": False,
                                  "prefetch_distance": 1,
                                  "param_persistence_threshold": 10000,
                                  "max_reuse_distance": 0}
    assert s.grad_compression == "none"
    assert s.passes() == ["bucketing", "allreduce", "startup_broadcast"]


def test_fields_and_fleet_names():
    s = fluid.DistributedStrategy()
    s.sharding = True
    s.sharding_configs = {"stage": 1}
    s.fuse_grad_size_in_MB = 0.5
    s.hierarchical_allreduce = True
    s.sync_batch_norm = True
    assert s.sharding_configs["stage"] == 1
    assert s.bucket_bytes == 1 << 19
    assert s.allreduce_hierarchy == "hier"
    assert "shard_updates" in s.passes() and "sync_batch_norm" in s.passes()
    s.sharding = False
    s.fp16_allreduce = True
    assert s.grad_compression == "fp16" and s.fp16_allreduce
    assert "compression" in s.passes()


def test_text_round_trip(tmp_path):
    s = fluid.DistributedStrategy()
    s.sharding = True
    s.sharding_configs = {"stage": 1, "overlap_gather": True}
    s.sparse_dense_ratio = 0.5
    text = str(s)
    assert "stage: 1" in text and "sparse_dense_ratio: 0.5" in text
    back = fluid.DistributedStrategy.from_text(text)
    assert back == s
    assert back != fluid.DistributedStrategy()
    path = tmp_path / "strategy.prototxt"
    s.save_to_prototxt(str(path))
    loaded = fluid.DistributedStrategy()
    loaded.load_from_prototxt(str(path))
    assert loaded == s


def test_unknown_or_out_of_range_fields_are_named():
    s = fluid.DistributedStrategy()
    with pytest.raises(AttributeError, match="no field 'bucket_size'"):
        s.bucket_size = 3
    with pytest.raises(AttributeError, match="no field 'nccl_comm_num'"):
        s.nccl_comm_num
    with pytest.raises(ValueError, match=r"sharding_configs\.stage must be "
                                         r"in \[1, 3\], got 4"):
        s.sharding_configs = {"stage": 4}
    with pytest.raises(ValueError, match="has no key 'degree'"):
        s.sharding_configs = {"degree": 2}
    with pytest.raises(ValueError, match="grad_compression must be none, "
                                         "bf16 or fp16, got 'int8'"):
        s.grad_compression = "int8"
    with pytest.raises(ValueError, match="sync_batch_norm takes a bool"):
        s.sync_batch_norm = 1
    with pytest.raises(ValueError, match="bucket_bytes must be >= 1"):
        s.bucket_bytes = 0
    with pytest.raises(ValueError, match="line 1.*bucket_size"):
        fluid.DistributedStrategy.from_text("bucket_size: 3")
    s.sharding_configs = {"overlap_gather": True}
    with pytest.raises(ValueError, match="overlap_gather needs sharding"):
        s.validate()


def test_mpi_executor_takes_a_strategy_or_the_old_arguments():
    main, startup, loss = build()
    rng = np.random.RandomState(0)
    feed = {"x": rng.randn(4, 8).astype("float32"),
            "label": rng.randint(0, 3, (4, 1)).astype("int64")}
    losses = []
    for kwargs in ({"strategy": fluid.DistributedStrategy()},
                   {"bucket_mb": 1.0, "overlap": False},
                   {}):
        scope = fluid.Scope()
        exe = fluid.MPIExecutor(fluid.CPUPlace(), **kwargs)
        exe.run(startup, scope=scope)
        losses.append(float(exe.run(main, feed=feed, fetch_list=[loss],
                                    scope=scope)[0]))
    assert losses[0] == losses[1] == losses[2]
    with pytest.raises(ValueError, match=r"MPIExecutor\(shard_optimizer=3\)"):
        fluid.MPIExecutor(shard_optimizer=3)
    with pytest.raises(ValueError, match=r"MPIExecutor\(allreduce='ring'\)"):
        fluid.MPIExecutor(allreduce="ring")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bukket_mb'"):
        fluid.MPIExecutor(bukket_mb=2)
    with pytest.raises(TypeError, match="takes a fluid.DistributedStrategy"):
        fluid.MPIExecutor(fluid.CPUPlace(), 1, 4.0)


def test_transpiler_config_maps_onto_the_strategy():
    config = fluid.DistributeTranspilerConfig()
    config.mode = "collective"
    assert config.bucket_mb == 4.0 and config.shard_optimizer == 0
    config.bucket_mb = 0.25
    config.shard_optimizer = True
    assert config.shard_optimizer is True
    s = config._check()
    assert s.bucket_bytes == 1 << 18 and s.sharding
    assert s.sharding_configs["stage"] == 2
    config.strategy.sync_batch_norm = True
    assert config._check().sync_batch_norm
    main, startup, _ = build()
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(0, program=main, startup_program=startup, trainers=2)
    types = t.get_trainer_program().op_types()
    assert "c_reducescatter" in types and "c_allgather" in types
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        fluid.DistributeTranspiler(bukket_mb=1)
