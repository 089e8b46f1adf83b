"""fluid.DistributedStrategy: every distribution setting of a job, in one
object (Paddle Fleet's class, over this project's
proto/distributed_strategy.proto).

    strategy = fluid.DistributedStrategy()
    strategy.sharding = True
    strategy.sharding_configs = {"stage": 2}
    strategy.fuse_grad_size_in_MB = 16
    exe = fluid.MPIExecutor(strategy=strategy)

Each field of the message is an attribute of the same name; a group of
fields (sharding_configs) reads as a dict and is set from one, key by key.
Fleet's names for the same settings are properties: fuse_grad_size_in_MB
(bucket_bytes in MiB), fp16_allreduce (grad_compression "fp16"),
hierarchical_allreduce (allreduce_hierarchy "hier"); a group also takes
Fleet's keys (pipeline_configs: "accumulate_steps" for micro_batches,
"schedule_mode" with "1F1B" or "F-then-B" for schedule). A field is checked
against its declared range when it is set; an unknown name is an
AttributeError, a bad value a ValueError, each naming the field. Two fields
that do not combine are refused when the strategy is used (`validate()`
checks it before). `str(strategy)` is the text format, every field, that
`DistributedStrategy.from_text` (and `trainer --strategy FILE`) reads back.
"""
from . import _core


class DistributedStrategy:
    """See the module's docstring. The defaults are the proto's."""

    def __init__(self):
        object.__setattr__(self, "_bytes", b"")

    # -- generic access, by field name ------------------------------------

    def _group(self, name):
        """The leaf paths under `name` when it is a group of fields."""
        prefix = name + "."
        return [p for p in _core.strategy_fields(self._bytes)
                if p.startswith(prefix)]

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        fields = _core.strategy_fields(self._bytes)
        if name in fields:
            return _core.strategy_get(self._bytes, name)
        group = self._group(name)
        if group:
            return {p[len(name) + 1:]: _core.strategy_get(self._bytes, p)
                    for p in group}
        raise AttributeError(
            f"DistributedStrategy has no field '{name}'; its fields: "
            f"{', '.join(self._top_level())}")

    def __setattr__(self, name, value):
        if name.startswith("_") or isinstance(
                getattr(type(self), name, None), property):
            object.__setattr__(self, name, value)
            return
        if name in _core.strategy_fields(self._bytes):
            self._set(name, value)
            return
        group = self._group(name)
        if not group:
            raise AttributeError(
                f"DistributedStrategy has no field '{name}'; its fields: "
                f"{', '.join(self._top_level())}")
        if not isinstance(value, dict):
            raise ValueError(f"DistributedStrategy.{name} is a group of "
                             f"settings: set it from a dict, e.g. "
                             f"{{'{group[0][len(name) + 1:]}': ...}}")
        for key, v in value.items():
            key, v = _fleet_key(name, key, v)
            if f"{name}.{key}" not in group:
                keys = ", ".join([p[len(name) + 1:] for p in group] +
                                 list(_FLEET_KEYS.get(name, {})))
                raise ValueError(f"DistributedStrategy.{name} has no key "
                                 f"'{key}'; its keys: {keys}")
            self._set(f"{name}.{key}", v)

    def _set(self, path, value):
        object.__setattr__(self, "_bytes",
                           _core.strategy_set(self._bytes, path, value))

    def _top_level(self):
        names = []
        for p in _core.strategy_fields(self._bytes):
            top = p.split(".")[0]
            if top not in names:
                names.append(top)
        return names

    # -- Fleet's names ----------------------------------------------------

    @property
    def fuse_grad_size_in_MB(self):
        return self.bucket_bytes / float(1 << 20)

    @fuse_grad_size_in_MB.setter
    def fuse_grad_size_in_MB(self, mb):
        if isinstance(mb, bool) or not isinstance(mb, (int, float)) or \
                not mb > 0:
            raise ValueError("DistributedStrategy.fuse_grad_size_in_MB must "
                             f"be a positive number, got {mb!r}")
        self.bucket_bytes = int(mb * (1 << 20))

    @property
    def fp16_allreduce(self):
        return self.grad_compression == "fp16"

    @fp16_allreduce.setter
    def fp16_allreduce(self, on):
        self.grad_compression = "fp16" if _flag("fp16_allreduce", on) \
            else "none"

    @property
    def hierarchical_allreduce(self):
        return self.allreduce_hierarchy == "hier"

    @hierarchical_allreduce.setter
    def hierarchical_allreduce(self, on):
        self.allreduce_hierarchy = "hier" if _flag(
            "hierarchical_allreduce", on) else "flat"

    # -- the pipeline, for the modules that run one ------------------------

    def _pipeline(self):
        """(stages, micro-batches per batch) of the pipeline this strategy
        asks for; (1, ...) without one."""
        return (self.pipeline_stages,
                self.pipeline_configs["micro_batches"])

    def _with_pipeline(self, stages, micro_batches, where):
        """This strategy with the pipeline a program was built for
        (`where` says by what, e.g. PipelineOptimizer): each of the two
        counts that the strategy leaves at 1 is taken from the program;
        one it sets otherwise is a ValueError naming both values."""
        mine, my_micro = self._pipeline()
        if mine not in (1, stages):
            raise ValueError(
                f"the program is a pipeline of {stages} stage(s) ({where}) "
                f"but DistributedStrategy.pipeline_stages is {mine}: set "
                f"the strategy's pipeline_stages to {stages}, or leave it "
                f"at 1 and the program's stages are used")
        if my_micro not in (1, micro_batches):
            raise ValueError(
                f"{where} asks for {micro_batches} micro-batch(es) but "
                "DistributedStrategy.pipeline_configs['micro_batches'] is "
                f"{my_micro}: make them equal, or leave the strategy's at 1")
        if (mine, my_micro) == (stages, micro_batches):
            return self
        s = self.copy()
        s.pipeline_stages = stages
        s.pipeline_configs = {"micro_batches": micro_batches}
        return s

    # -- whole-message operations -----------------------------------------

    def validate(self, program=None):
        """Checks the fields that must agree with each other (the ranges
        were checked as each was set)."""
        _core.strategy_validate(self._bytes)
        return self

    def passes(self):
        """The collective passes a transpile with this strategy runs."""
        return list(_core.strategy_passes(self._bytes))

    def serialize(self):
        return bytes(self._bytes)

    @classmethod
    def from_text(cls, text, where="DistributedStrategy.from_text"):
        s = cls()
        object.__setattr__(s, "_bytes", _core.strategy_from_text(text, where))
        return s

    def save_to_prototxt(self, path):
        with open(path, "w") as f:
            f.write(str(self))

    def load_from_prototxt(self, path):
        with open(path) as f:
            loaded = DistributedStrategy.from_text(f.read(), str(path))
        object.__setattr__(self, "_bytes", loaded._bytes)

    def copy(self):
        s = DistributedStrategy()
        object.__setattr__(s, "_bytes", self._bytes)
        return s

    def __eq__(self, other):
        return isinstance(other, DistributedStrategy) and \
            _core.strategy_equal(self._bytes, other._bytes)

    __hash__ = None

    def __str__(self):
        return _core.strategy_to_text(self._bytes)

    def __repr__(self):
        return "DistributedStrategy(\n" + str(self) + ")"


# Fleet's keys of a group of settings: {group: {key: (ours, {value:
# ours})}}; a value not in the map passes as it is.
_FLEET_KEYS = {
    "pipeline_configs": {
        "accumulate_steps": ("micro_batches", {}),
        "schedule_mode": ("schedule", {"F-then-B": "FThenB"}),
    },
}


def _fleet_key(group, key, value):
    """(key, value) of group `group` with Fleet's names taken to ours."""
    if group == "pipeline_configs" and key == "micro_batch_size":
        raise ValueError(
            "DistributedStrategy.pipeline_configs: 'micro_batch_size' (the "
            "rows of one micro-batch) is not taken; give their count, "
            "'micro_batches' (or Fleet's 'accumulate_steps') = batch size / "
            "micro-batch size")
    ours, values = _FLEET_KEYS.get(group, {}).get(key, (key, {}))
    if isinstance(value, str):
        value = values.get(value, value)
    return ours, value


def _flag(name, on):
    if not isinstance(on, bool):
        raise ValueError(f"DistributedStrategy.{name} takes True or False, "
                         f"got {on!r}")
    return on


# The keyword arguments MPIExecutor and DistributeTranspilerConfig took
# before the strategy existed, and the fields they set.
def _shard_fields(stage):
    if stage not in (0, 1, 2, False, True):
        raise ValueError(f"shard_optimizer={stage!r}: use 0 (off), 1 or 2 "
                         "(ZeRO stage 1 or 2; True means 2)")
    if stage is True:
        stage = 2
    return {"sharding": bool(stage)} if not stage else \
        {"sharding": True, "sharding_configs.stage": int(stage)}


def _bucket_fields(mb):
    if isinstance(mb, bool) or not isinstance(mb, (int, float)) or \
            not mb > 0:
        raise ValueError(f"bucket_mb must be a positive number, got {mb!r}")
    return {"bucket_bytes": int(mb * (1 << 20))}


_LEGACY = {
    "bucket_mb": _bucket_fields,
    "overlap": lambda v: {"overlap_allreduce": bool(v)},
    "allreduce": lambda v: {"allreduce_hierarchy": v},
    "grad_compression": lambda v: {"grad_compression": v},
    "sync_batch_norm": lambda v: {"sync_batch_norm": bool(v)},
    "shard_optimizer": _shard_fields,
    "overlap_gather": lambda v: {"sharding_configs.overlap_gather": bool(v)},
    "sparse_dense_ratio": lambda v: {"sparse_dense_ratio": v},
}


# Their defaults, which are the strategy's.
_LEGACY_DEFAULTS = {
    "bucket_mb": 4.0, "overlap": True, "allreduce": "flat",
    "grad_compression": "none", "sync_batch_norm": False,
    "shard_optimizer": 0, "overlap_gather": False, "sparse_dense_ratio": 0.25,
}


def _from_legacy(where, strategy=None, **kwargs):
    """A strategy from `strategy` (copied) with the old keyword arguments
    given (not None) applied on top; errors name `where` and the argument."""
    if strategy is not None and not isinstance(strategy,
                                               DistributedStrategy):
        raise TypeError(f"{where}(strategy=...) takes a "
                        "fluid.DistributedStrategy, got "
                        f"{type(strategy).__name__}")
    s = strategy.copy() if strategy is not None else DistributedStrategy()
    for name, value in kwargs.items():
        if name not in _LEGACY:
            raise TypeError(f"{where}() got an unexpected keyword argument "
                            f"'{name}'")
        if value is None:
            continue
        try:
            for path, v in _LEGACY[name](value).items():
                s._set(path, v)
        except ValueError as e:
            raise ValueError(f"{where}({name}={value!r}): {e}") from None
    try:
        s.validate()
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    return s
