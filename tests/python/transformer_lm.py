"""A decoder-only transformer language model, built with fluid.layers
(fluid_lm) and from torch.nn (TorchLM) with the same parameter names, for
test_transformer_lm_torch.py and benchmarks/transformer_lm_bench.py:

    x = tok[ids] + pos                  token embedding, learned positions
    x = block_i(x), i < layers          transformer_block.py's pre-LN blocks
    logits = head(lnf(x))               final layer_norm, projection
    loss = mean cross-entropy of logits against the next ids

Parameter names: "tok", "pos", "b<i>.<PARAMS name>", "lnf.w", "lnf.b",
"head.w", "head.b" (fc weights [in, out], fluid's layout)."""
from collections import namedtuple

import numpy as np
import torch

import fluid
from transformer_block import PARAMS, TorchBlock, fluid_block, init_params

L = fluid.layers

LMConfig = namedtuple("LMConfig", "vocab seq width heads layers")


def init_lm(cfg, seed):
    """Random values for every parameter."""
    rng = np.random.RandomState(seed)
    out = {"tok": rng.uniform(-0.5, 0.5, (cfg.vocab, cfg.width)),
           "pos": rng.uniform(-0.1, 0.1, (cfg.seq, cfg.width)),
           "lnf.w": rng.uniform(0.5, 1.5, cfg.width),
           "lnf.b": rng.uniform(-0.3, 0.3, cfg.width),
           "head.w": rng.uniform(-0.3, 0.3, (cfg.width, cfg.vocab)),
           "head.b": rng.uniform(-0.3, 0.3, cfg.vocab)}
    for i in range(cfg.layers):
        for name, value in init_params(cfg.width, seed + 1 + i).items():
            out[f"b{i}.{name}"] = value
    return out


def param_names(cfg):
    return (["tok", "pos", "lnf.w", "lnf.b", "head.w", "head.b"] +
            [f"b{i}.{n}" for i in range(cfg.layers) for n in PARAMS])


def fluid_lm(cfg, dtype):
    """Feeds "ids" and "next_ids" [B, seq, 1] int64; returns (the two feed
    vars, logits [B, seq, vocab], the mean loss)."""
    ids = L.data("ids", [cfg.seq, 1], dtype="int64")
    nxt = L.data("next_ids", [cfg.seq, 1], dtype="int64")
    x = L.embedding(ids, [cfg.vocab, cfg.width], param_attr="tok",
                    dtype=dtype)
    x = L.elementwise_add(x, L.create_parameter([cfg.seq, cfg.width], dtype,
                                                name="pos"))
    for i in range(cfg.layers):
        x = fluid_block(x, cfg.seq, cfg.width, cfg.heads, dtype,
                        prefix=f"b{i}.")
    x = L.layer_norm(x, begin_norm_axis=2, param_attr="lnf.w",
                     bias_attr="lnf.b")
    logits = L.fc(x, cfg.vocab, num_flatten_dims=2, param_attr="head.w",
                  bias_attr="head.b")
    loss = L.mean(L.softmax_with_cross_entropy(logits, nxt))
    return [ids, nxt], logits, loss


class TorchLM(torch.nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        kw = {"dtype": dtype}
        self.cfg = cfg
        self.tok = torch.nn.Embedding(cfg.vocab, cfg.width, **kw)
        self.pos = torch.nn.Parameter(torch.zeros(cfg.seq, cfg.width, **kw))
        self.blocks = torch.nn.ModuleList(
            TorchBlock(cfg.seq, cfg.width, cfg.heads, dtype)
            for _ in range(cfg.layers))
        self.lnf = torch.nn.LayerNorm(cfg.width, **kw)
        self.head = torch.nn.Linear(cfg.width, cfg.vocab, **kw)

    def forward(self, ids, nxt):
        """The mean loss of ids [B, seq] against nxt [B, seq]."""
        x = self.tok(ids) + self.pos
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.lnf(x))
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, self.cfg.vocab), nxt.reshape(-1))

    def _own(self):
        """fluid name -> (tensor, transposed) for the non-block tensors."""
        return {"tok": (self.tok.weight, False), "pos": (self.pos, False),
                "lnf.w": (self.lnf.weight, False),
                "lnf.b": (self.lnf.bias, False),
                "head.w": (self.head.weight, True),
                "head.b": (self.head.bias, False)}

    def load(self, params):
        with torch.no_grad():
            for name, (t, transposed) in self._own().items():
                value = torch.tensor(np.asarray(params[name]), dtype=t.dtype)
                t.copy_(value.T if transposed else value)
        for i, b in enumerate(self.blocks):
            b.load(params, prefix=f"b{i}.")

    def values(self):
        out = {n: (t.T if tr else t).detach().numpy()
               for n, (t, tr) in self._own().items()}
        for i, b in enumerate(self.blocks):
            out.update(b.values(prefix=f"b{i}."))
        return out
