"""A decoder-only transformer language model (token embedding plus a
learned position table, two pre-LN blocks of transformer_block.py, a final
layer_norm and a projection onto the vocabulary, mean token cross-entropy)
built with fluid.layers, against the same model from torch.nn: 10 Adam
steps from identical weights on identical batches. The loss of every step
agrees to 1e-5 in float32 and 1e-10 in float64, and in float64 so does
every parameter after the 10 steps. (In float32 the key projection's bias,
whose gradient is 0 but for rounding, moves by Adam's step in a direction
rounding picks: see mpi_transformer.py. The loss does not depend on it.)"""
import numpy as np
import pytest
import torch

import fluid
from transformer_block import PARAMS, TorchBlock, fluid_block, init_params

L = fluid.layers
VOCAB, SEQ, WIDTH, HEADS, LAYERS, BATCH, STEPS = 13, 6, 8, 2, 2, 4, 10
LR = 2.0 ** -7
_SCOPES = []


def init_lm(seed):
    rng = np.random.RandomState(seed)
    out = {"tok": rng.uniform(-0.5, 0.5, (VOCAB, WIDTH)),
           "pos": rng.uniform(-0.1, 0.1, (SEQ, WIDTH)),
           "lnf.w": rng.uniform(0.5, 1.5, WIDTH),
           "lnf.b": rng.uniform(-0.3, 0.3, WIDTH),
           "head.w": rng.uniform(-0.3, 0.3, (WIDTH, VOCAB)),
           "head.b": rng.uniform(-0.3, 0.3, VOCAB)}
    for i in range(LAYERS):
        for name, value in init_params(WIDTH, seed + 1 + i).items():
            out[f"b{i}.{name}"] = value
    return out


def batches(seed):
    rng = np.random.RandomState(seed)
    for _ in range(STEPS):
        ids = rng.randint(0, VOCAB, (BATCH, SEQ + 1))
        yield ids[:, :-1], ids[:, 1:]


def fluid_train(params, dtype):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        ids = L.data("ids", [SEQ, 1], dtype="int64")
        nxt = L.data("next_ids", [SEQ, 1], dtype="int64")
        x = L.embedding(ids, [VOCAB, WIDTH], param_attr="tok", dtype=dtype)
        x = L.elementwise_add(x, L.create_parameter([SEQ, WIDTH], dtype,
                                                    name="pos"))
        for i in range(LAYERS):
            x = fluid_block(x, SEQ, WIDTH, HEADS, dtype, prefix=f"b{i}.")
        x = L.layer_norm(x, begin_norm_axis=2, param_attr="lnf.w",
                         bias_attr="lnf.b")
        logits = L.fc(x, VOCAB, num_flatten_dims=2, param_attr="head.w",
                      bias_attr="head.b")
        loss = L.mean(L.softmax_with_cross_entropy(logits, nxt))
        fluid.optimizer.Adam(learning_rate=LR).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    for name, value in params.items():
        scope.set(name, value.astype(dtype))
    losses = []
    for x_ids, y_ids in batches(7):
        (value,) = exe.run(main, feed={"ids": x_ids[..., None],
                                       "next_ids": y_ids[..., None]},
                           fetch_list=[loss], scope=scope)
        losses.append(float(value[0]))
    return losses, {n: np.array(scope.get(n)) for n in params}


class TorchLM(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        kw = {"dtype": dtype}
        self.tok = torch.nn.Embedding(VOCAB, WIDTH, **kw)
        self.pos = torch.nn.Parameter(torch.zeros(SEQ, WIDTH, **kw))
        self.blocks = torch.nn.ModuleList(
            TorchBlock(SEQ, WIDTH, HEADS, dtype) for _ in range(LAYERS))
        self.lnf = torch.nn.LayerNorm(WIDTH, **kw)
        self.head = torch.nn.Linear(WIDTH, VOCAB, **kw)

    def forward(self, ids, nxt):
        x = self.tok(ids) + self.pos
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.lnf(x))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                                 nxt.reshape(-1))

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
                value = torch.tensor(params[name], dtype=t.dtype)
                t.copy_(value.T if transposed else value)
        for i, b in enumerate(self.blocks):
            b.load(params, prefix=f"b{i}.")

    def values(self):
        out = {n: (t.T if tr else t).detach().numpy()
               for n, (t, tr) in self._own().items()}
        for i, b in enumerate(self.blocks):
            out.update(b.values(prefix=f"b{i}."))
        return out


def torch_train(params, dtype):
    model = TorchLM(dtype)
    model.load(params)
    # fluid's Adam holds beta1, beta2 and epsilon as float32 attributes
    # (as Fluid's does): torch gets the same values.
    f32 = [float(np.float32(v)) for v in (0.9, 0.999, 1e-8)]
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=f32[:2],
                           eps=f32[2])
    losses = []
    for x_ids, y_ids in batches(7):
        opt.zero_grad()
        loss = model(torch.tensor(x_ids), torch.tensor(y_ids))
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, model.values()


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-10)])
def test_lm_trains_as_torch_does(dtype, tol):
    params = init_lm(3)
    assert len(params) == 6 + LAYERS * len(PARAMS)
    losses, got = fluid_train(params, dtype)
    want_losses, want = torch_train(params, getattr(torch, dtype))
    np.testing.assert_allclose(losses, want_losses, rtol=tol)
    assert losses[-1] < losses[0]  # it learns
    if dtype == "float64":
        for name, value in want.items():
            assert not np.array_equal(got[name], params[name]), name
            np.testing.assert_allclose(got[name], value, rtol=tol, atol=tol,
                                       err_msg=name)
