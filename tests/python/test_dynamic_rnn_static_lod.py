"""DynamicRNN's static_input with a LoD input, as Fluid's: each sequence of
the step input has a sequence of its own in the static input (a context of
any length); inside the loop the static input holds, at step t, the
context sequences of the sequences still running, ranked as the step
input's rows (longest first), with their LoD. The network pools each
context (sequence_pool sum) into an RNN step; the reference is PyTorch run
over each sequence with its own context: the outputs, the pooled contexts
seen at each step, and the gradients of the context, the input and the
weights (float64)."""
import numpy as np
import torch

import fluid

L = fluid.layers
D, C, H = 3, 2, 4
LENGTHS = [2, 4, 1, 3, 0, 4]        # step input: one sequence each
CONTEXT = [3, 1, 2, 0, 2, 1]        # static input: the context of each


def _fluid(x, ctx, r):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        xv = L.data("x", [D], dtype="float64", lod_level=1,
                    stop_gradient=False)
        cv = L.data("ctx", [C], dtype="float64", lod_level=1,
                    stop_gradient=False)
        rv = L.data("r", [H], dtype="float64")
        init = fluid.initializer.UniformInitializer(-0.8, 0.8, seed=5)
        drnn = L.DynamicRNN()
        with drnn.block():
            x_t = drnn.step_input(xv)
            c = drnn.static_input(cv)          # LoD: one context each
            pooled = L.sequence_pool(c, "sum")
            prev = drnn.memory(shape=[H], dtype="float64")
            h = L.fc([x_t, prev, pooled], H, act="tanh",
                     param_attr=[fluid.ParamAttr(name=n, initializer=init)
                                 for n in ("wx", "wh", "wc")],
                     bias_attr=fluid.ParamAttr(name="b", initializer=init))
            drnn.update_memory(prev, h)
            drnn.output(h, pooled)
        out, seen = drnn()
        loss = L.reduce_sum(L.elementwise_mul(out, rv))
        fluid.optimizer.SGD(0.1).minimize(loss)  # appends the backward
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    weights = {n: np.array(scope.find_var(n).get_tensor())
               for n in ("wx", "wh", "wc", "b")}
    got = exe.run(main, scope=scope,
                  feed={"x": fluid.create_lod_tensor(x, [LENGTHS]),
                        "ctx": fluid.create_lod_tensor(ctx, [CONTEXT]),
                        "r": r},
                  fetch_list=[out, seen, "ctx@GRAD", "x@GRAD", "wc@GRAD",
                              "wx@GRAD"])
    return weights, got


def _torch(x, ctx, r, w):
    """The recurrence over each sequence with the sum of its own context."""
    t = {n: torch.from_numpy(v) for n, v in w.items()}
    tx = torch.from_numpy(x).requires_grad_()
    tc = torch.from_numpy(ctx).requires_grad_()
    for n in ("wx", "wc"):
        t[n].requires_grad_()
    xo = np.concatenate([[0], np.cumsum(LENGTHS)])
    co = np.concatenate([[0], np.cumsum(CONTEXT)])
    outs, seen = [], []
    for s in range(len(LENGTHS)):
        pooled = tc[co[s]:co[s + 1]].sum(0, keepdim=True)
        h = torch.zeros(1, H, dtype=torch.float64)
        for row in range(xo[s], xo[s + 1]):
            h = torch.tanh(tx[row:row + 1] @ t["wx"] + h @ t["wh"] +
                           pooled @ t["wc"] + t["b"])
            outs.append(h)
            seen.append(pooled)
    out = torch.cat(outs)
    (out * torch.from_numpy(r)).sum().backward()
    return [out.detach().numpy(), torch.cat(seen).detach().numpy(),
            tc.grad.numpy(), tx.grad.numpy(), t["wc"].grad.numpy(),
            t["wx"].grad.numpy()]


def test_static_input_with_lod_matches_per_sequence_reference():
    rs = np.random.RandomState(3)
    x = rs.uniform(-1, 1, (sum(LENGTHS), D))
    ctx = rs.uniform(-1, 1, (sum(CONTEXT), C))
    r = rs.uniform(-1, 1, (sum(LENGTHS), H))
    weights, got = _fluid(x, ctx, r)
    want = _torch(x, ctx, r, weights)
    names = ["out", "pooled context", "ctx@GRAD", "x@GRAD", "wc@GRAD",
             "wx@GRAD"]
    for g, w, what in zip(got, want, names):
        np.testing.assert_allclose(np.asarray(g), w, rtol=0, atol=1e-10,
                                   err_msg=what)
