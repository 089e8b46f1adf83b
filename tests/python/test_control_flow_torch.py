"""A fluid.layers.While loop against PyTorch 1.13 on the same weights and
inputs (float64): T steps h = tanh(h W + b) with W and b shared, each
step's h written to a tensor array; the loss reads the last h and two
slots of the array after the loop. The loss, and the gradients of the
input, W and b (through while_grad, the array's gradient carried across
the steps), equal torch's."""
import numpy as np
import torch

import fluid

L = fluid.layers
STEPS, WIDTH, BATCH = 4, 5, 3


def _fluid(xv, cvs):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [WIDTH], dtype="float64", stop_gradient=False)
        cs = [L.data(f"c{k}", [WIDTH], dtype="float64") for k in range(3)]
        h = L.assign(x)
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", STEPS)
        states = L.create_array("float64")
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            h2 = L.fc(h, WIDTH, act="tanh", param_attr="w", bias_attr="b")
            L.array_write(h2, i, array=states)
            L.assign(h2, h)
            L.increment(i)
            L.less_than(i, n, cond=cond)
        r1 = L.array_read(states, L.fill_constant([1], "int64", 1))
        r3 = L.array_read(states, L.fill_constant([1], "int64", 3))
        r1b = L.array_read(states, L.fill_constant([1], "int64", 1))
        terms = [L.mean(L.elementwise_mul(v, c))
                 for v, c in zip([h, r1, r3], cs)]
        terms.append(L.mean(r1b))  # slot 1 read twice: its gradients add
        loss = L.sums(terms)
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    w = np.array(scope.get("w"), copy=True)
    b = np.array(scope.get("b"), copy=True)
    feed = {"x": xv, **{f"c{k}": c for k, c in enumerate(cvs)}}
    got = exe.run(main, feed=feed,
                  fetch_list=[loss, "x@GRAD", "w@GRAD", "b@GRAD"],
                  scope=scope)
    return w, b, got


def test_while_with_an_array_matches_torch():
    rng = np.random.RandomState(11)
    xv = rng.uniform(-1, 1, (BATCH, WIDTH))
    cvs = [rng.uniform(-1, 1, (BATCH, WIDTH)) for _ in range(3)]
    w, b, got = _fluid(xv, cvs)
    b = b.reshape(-1)
    tx = torch.tensor(xv, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    h, states = tx, []
    for _ in range(STEPS):
        h = torch.tanh(h @ tw + tb)
        states.append(h)
    loss = sum((v * torch.tensor(c)).mean()
               for v, c in zip([h, states[1], states[3]], cvs))
    loss = loss + states[1].mean()
    loss.backward()
    want = [loss.detach().numpy().reshape(1), tx.grad.numpy(),
            tw.grad.numpy(), tb.grad.numpy()]
    for g, t, what in zip(got, want, ["loss", "x@GRAD", "w@GRAD", "b@GRAD"]):
        np.testing.assert_allclose(np.asarray(g).reshape(t.shape), t,
                                   rtol=1e-10, atol=1e-13, err_msg=what)
