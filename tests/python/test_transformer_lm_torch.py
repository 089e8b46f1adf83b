"""A decoder-only transformer language model (transformer_lm.py: token
embedding plus a learned position table, two pre-LN blocks, a final
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
from transformer_lm import LMConfig, TorchLM, fluid_lm, init_lm, param_names

CFG = LMConfig(vocab=13, seq=6, width=8, heads=2, layers=2)
BATCH, STEPS = 4, 10
LR = 2.0 ** -7
_SCOPES = []


def batches(seed):
    rng = np.random.RandomState(seed)
    for _ in range(STEPS):
        ids = rng.randint(0, CFG.vocab, (BATCH, CFG.seq + 1))
        yield ids[:, :-1], ids[:, 1:]


def fluid_train(params, dtype):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        _, _, loss = fluid_lm(CFG, dtype)
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


def torch_train(params, dtype):
    model = TorchLM(CFG, dtype)
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
    params = init_lm(CFG, 3)
    assert sorted(params) == sorted(param_names(CFG))
    losses, got = fluid_train(params, dtype)
    want_losses, want = torch_train(params, getattr(torch, dtype))
    np.testing.assert_allclose(losses, want_losses, rtol=tol)
    assert losses[-1] < losses[0]  # it learns
    if dtype == "float64":
        for name, value in want.items():
            assert not np.array_equal(got[name], params[name]), name
            np.testing.assert_allclose(got[name], value, rtol=tol, atol=tol,
                                       err_msg=name)
