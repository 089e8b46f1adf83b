"""PyTorch as the oracle: LeNet built with fluid.layers and the same network
in torch, started from the same weights (fluid's initial parameters copied
into torch) and trained with Momentum(lr 0.05, 0.9) on the same batches,
give the same losses for 10 steps (relative 1e-4).

Layouts: fc weights are [in, out] in fluid and [out, in] in torch (so they
are transposed); conv filters are [out, in, kh, kw] in both. Fluid's
momentum (v = mu v + g; p -= lr v) is torch's SGD momentum with no
dampening.
"""
import os

import numpy as np
import pytest

import fluid

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

L = fluid.layers
STEPS = 10
BATCH = 64
LR, MU = 0.05, 0.9
RTOL = 1e-4

CONVS = ["conv2d_0", "conv2d_1"]
FCS = ["fc_0", "fc_1"]


def fluid_lenet(seed=1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.conv2d(image, 20, 5, act="relu")
        h = L.pool2d(h, 2, "max", 2)
        h = L.conv2d(h, 50, 5, act="relu")
        h = L.pool2d(h, 2, "max", 2)
        h = L.fc(h, 500, act="relu")
        logits = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Momentum(LR, MU).minimize(loss)
    return main, startup, loss


def torch_lenet(params):
    nn = torch.nn
    net = nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))
    layers = {"conv2d_0": net[0], "conv2d_1": net[3], "fc_0": net[7],
              "fc_1": net[9]}
    with torch.no_grad():
        for name, mod in layers.items():
            w = params[name + ".w_0"]
            if name.startswith("fc"):
                w = w.T  # [in, out] -> [out, in]
            assert tuple(mod.weight.shape) == w.shape, name
            mod.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
            b = params[name + ".b_0"].reshape(-1)
            assert tuple(mod.bias.shape) == b.shape, name
            mod.bias.copy_(torch.from_numpy(np.ascontiguousarray(b)))
    return net, layers


def batches():
    """10 batches of 64: Fashion-MNIST's first 640 training images when the
    data set is installed, else random images and labels."""
    n = STEPS * BATCH
    source = "random"
    if os.path.isdir(fluid.datasets.FASHION_MNIST):
        try:
            x, y = fluid.datasets.fashion_mnist.train()
            x, y = np.array(x[:n]), np.array(y[:n])
            source = "fashion-mnist"
        except Exception:  # noqa: BLE001 - unreadable: fall back
            source = "random"
    if source == "random":
        rng = np.random.RandomState(0)
        x = rng.rand(n, 1, 28, 28).astype(np.float32)
        y = rng.randint(0, 10, size=(n, 1)).astype(np.int64)
    return [(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH])
            for i in range(STEPS)], source


def test_lenet_losses_match_torch():
    if torch is None:
        pytest.skip("torch is not importable: no PyTorch oracle")
    torch.set_num_threads(1)
    torch.manual_seed(0)

    main, startup, loss = fluid_lenet()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.global_scope()  # lives as long as the process
    exe.run(startup, scope=scope)
    names = [n + s for n in CONVS + FCS for s in (".w_0", ".b_0")]
    init = {n: np.array(scope.get(n), copy=True) for n in names}
    assert init["conv2d_0.w_0"].shape == (20, 1, 5, 5)
    assert init["fc_0.w_0"].shape == (800, 500)

    net, layers = torch_lenet(init)
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MU)
    data, source = batches()

    fluid_losses, torch_losses = [], []
    for x, y in data:
        (l,) = exe.run(main, feed={"image": x, "label": y},
                       fetch_list=[loss], scope=scope)
        fluid_losses.append(float(l[0]))
        opt.zero_grad()
        t = torch.nn.functional.cross_entropy(net(torch.from_numpy(x)),
                                              torch.from_numpy(y[:, 0]))
        t.backward()
        opt.step()
        torch_losses.append(float(t))

    f, t = np.array(fluid_losses), np.array(torch_losses)
    rel = np.abs(f - t) / np.abs(t)
    assert np.all(rel <= RTOL), (
        f"data: {source}\nfluid: {f}\ntorch: {t}\nrelative: {rel}")
    assert np.isfinite(f).all()
    if source == "fashion-mnist":
        assert f[-1] < f[0], f  # it learns

    # and the parameters after 10 steps agree too
    for name, mod in layers.items():
        w = scope.get(name + ".w_0")
        tw = mod.weight.detach().numpy()
        if name.startswith("fc"):
            tw = tw.T
        err = np.linalg.norm(w - tw) / np.linalg.norm(tw)
        assert err <= 1e-4, f"{name}.w_0 differs from torch by {err:.3g}"
