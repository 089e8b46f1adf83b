"""Under `mpirun -np 2`: trains a small classifier with fluid.MPIExecutor
(each rank on its half of every batch), then rank 0 saves an inference
model and the predictions of the training program cloned for test, for
test_inference_io.py to compare with the loaded model.

    mpirun -np 2 python3 mpi_inference_job.py OUT_DIR
"""
import os
import sys

import numpy as np

import fluid

L = fluid.layers


def data(n=64, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.randn(3, 8).astype(np.float32) * 3
    y = rng.randint(0, 3, size=n)
    x = centers[y] + rng.randn(n, 8).astype(np.float32) * 0.5
    return x.astype(np.float32), y.reshape(n, 1).astype(np.int64)


def main(out_dir):
    main_prog, startup = fluid.Program(), fluid.Program()
    main_prog.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main_prog, startup):
        x = L.data("x", [8])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(x, 16, act="relu")
        predict = L.softmax(L.fc(h, 3))
        loss = L.mean(L.cross_entropy(predict, label))
        fluid.optimizer.Momentum(0.1, 0.9).minimize(loss)
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    xs, ys = data()
    for step in range(4):
        bx = xs[step * 16:(step + 1) * 16][rank::world]
        by = ys[step * 16:(step + 1) * 16][rank::world]
        exe.run(main_prog, feed={"x": bx, "label": by}, fetch_list=[loss],
                scope=scope)
    exe.check_consistency()
    if rank == 0:
        test_prog = main_prog.clone(for_test=True)
        plain = fluid.Executor(fluid.CPUPlace())
        (p,) = plain.run(test_prog, feed={"x": xs, "label": ys},
                         fetch_list=[predict], scope=scope)
        np.save(os.path.join(out_dir, "expected.npy"), np.array(p))
        np.save(os.path.join(out_dir, "x.npy"), xs)
        fluid.io.save_inference_model(os.path.join(out_dir, "model"), ["x"],
                                      [predict], exe, main_prog, scope=scope)
        print(f"rank 0 of {world}: saved", flush=True)
        del plain
    del exe
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
